#!/bin/sh
# Builds llama.cpp's native benchmark tools (llama-bench, llama-batched-bench), and
# llamacpp-greedy (bench/peers/llamacpp_greedy.cpp: greedy token ids, to check outputs), from the llama.cpp source that the node-llama-cpp npm package
# ships, pinned, into a cache folder outside the repository, so the bench compares against
# llama.cpp measured on this machine rather than against constants.
#
# The package weighs ~700 MB with its prebuilt binaries, so it is installed into the cache on
# the first run rather than as a project dependency; the build takes ~10+ minutes on 2 cores.
# Later runs find the binaries and return at once. Prints the bin folder as its last line.
#
#   KILN_BENCH_CACHE  cache root (default ~/.cache/kiln-bench); llama.cpp lives in <root>/llama.cpp
#   JOBS              parallel compile jobs (default 2)
set -eu

version=3.21.1
cache="${KILN_BENCH_CACHE:-$HOME/.cache/kiln-bench}/llama.cpp"
src="$cache/src"
build="$cache/build"
bin="$build/bin"
targets="llama-bench llama-batched-bench"
here="$(cd "$(dirname "$0")" && pwd)"
jobs="${JOBS:-2}"

built() {
  for t in $targets llamacpp-greedy; do [ -x "$bin/$t" ] || return 1; done
  [ -f "$cache/.built-$version" ]
}

if built; then
  echo "$bin"
  exit 0
fi

for tool in npm git cmake g++; do
  command -v "$tool" >/dev/null 2>&1 || { echo "llama.cpp peer: $tool not found" >&2; exit 2; }
done

mkdir -p "$cache"
echo "llama.cpp peer: first run, building into $cache (installs node-llama-cpp@$version, ~700 MB, then ~10+ min of compiling on 2 cores)" >&2

bundle="$cache/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle"
if [ ! -f "$bundle" ]; then
  # --ignore-scripts: the package's postinstall would download or build its own binaries.
  npm install --prefix "$cache/npm" --ignore-scripts --no-save --no-audit --no-fund \
    "node-llama-cpp@$version" >&2
fi

if [ ! -f "$src/CMakeLists.txt" ]; then
  rm -rf "$src"
  git clone --quiet "$bundle" "$src" >&2
fi

# CPU only (no GPU backend is on by default), no curl, tuned for this CPU.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >&2
# shellcheck disable=SC2086
cmake --build "$build" --config Release -j "$jobs" --target $targets >&2
# The greedy checker links the static libraries the targets above built.
lib() { find "$build" -name "$1" | head -n 1; }
g++ -O2 -std=c++17 -I"$src/include" -I"$src/ggml/include" "$here/llamacpp_greedy.cpp" \
  "$(lib libllama.a)" "$(lib libggml.a)" "$(lib libggml-cpu.a)" "$(lib libggml-base.a)" \
  -fopenmp -lpthread -o "$bin/llamacpp-greedy" >&2
touch "$cache/.built-$version"
echo "$bin"

"""The PyTorch peer of `npm run bench -- llm-engine`: eager greedy decoding with a KV cache.

Run with Debian's /usr/bin/python3 (python3-torch). Loads a Hugging Face Llama folder
(config.json + model.safetensors, F32/F16/BF16) into the float32 Llama of
fixtures/llm/tiny_llama.py (Hugging Face's conventions, the model the fixtures' reference
outputs come from), then times decoding on one stream and on a batch of streams:

  python3 torch_llama_decode.py --model DIR --prompt-ids '[1,2,3]' --new-tokens 256 \
      --streams 16 --threads 1

Prints one JSON line: {"single_tokens_per_s": …, "batch_tokens_per_s": …, …}. Only decode
steps are timed (the prefill and the first token are not), as on the Kiln side.
"""

import argparse
import json
import os
import struct
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures", "llm"))
from tiny_llama import TinyLlama  # noqa: E402

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[base + begin : base + end])
        t = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        tensors[name] = t.to(torch.float32)
    return tensors


def load(folder):
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    config.setdefault("initializer_range", 0.02)
    config.setdefault("head_dim", config["hidden_size"] // config["num_attention_heads"])
    config.setdefault("rope_scaling", None)
    model = TinyLlama(config)
    index = os.path.join(folder, "model.safetensors.index.json")
    tensors = {}
    if os.path.exists(index):
        with open(index) as f:
            for shard in sorted(set(json.load(f)["weight_map"].values())):
                tensors.update(read_safetensors(os.path.join(folder, shard)))
    else:
        tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    missing = [m for m in missing if not (model.tied and m == "lm_head.weight")]
    if missing or unexpected:
        raise SystemExit(f"weights do not fit: missing {missing}, unexpected {unexpected}")
    return model.eval()


@torch.no_grad()
def decode_rate(model, prompt, streams, new_tokens):
    """Greedy decode of `streams` copies of the prompt; decode tokens per second."""
    ids = torch.tensor([prompt] * streams)
    logits, past = model(ids)
    token = logits[:, -1].argmax(dim=-1, keepdim=True)
    start = time.perf_counter()
    for _ in range(new_tokens - 1):
        logits, past = model(token, past)
        token = logits[:, -1].argmax(dim=-1, keepdim=True)
    elapsed = time.perf_counter() - start
    return streams * (new_tokens - 1) / elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompt-ids", required=True)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--streams", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = load(args.model)
    prompt = json.loads(args.prompt_ids)
    decode_rate(model, prompt, 1, 16)  # warm-up
    single = decode_rate(model, prompt, 1, args.new_tokens)
    batch = decode_rate(model, prompt, args.streams, args.new_tokens)
    print(
        json.dumps(
            {
                "single_tokens_per_s": single,
                "batch_tokens_per_s": batch,
                "streams": args.streams,
                "threads": args.threads,
                "torch": torch.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()

# Kiln: one image for the three roles, chosen by the command (docs/kubernetes.md):
#   control plane  node bin/kiln.js up --host 0.0.0.0 …   (the default below)
#   gateway        node dist/gateway/main.js --control-url URL --host 0.0.0.0 --state-dir DIR
#   worker         node dist/worker/main.js …             (the Kubernetes backend's pods)
# Build: docker build -t REGISTRY/kiln:VERSION .

# Build stage: all dependencies (TypeScript), compiled JavaScript in dist/, then the
# production dependencies alone. better-sqlite3 compiles its native module here when no
# prebuilt binary matches, so the compilers stay in this stage and never reach the runtime.
FROM node:20-bookworm-slim AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build
# Reinstalls node_modules without the dev dependencies (native modules built as above).
RUN npm ci --omit=dev && npm cache clean --force

# Runtime stage: Node 20 slim, the compiled JavaScript and production node_modules, no
# sources (bin/kiln.js runs dist/ when there is no src/ to be stale against), non-root.
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY scripts/dist-state.js ./scripts/dist-state.js
# uid 1000 is the image's `node` user; numeric, so Kubernetes can check runAsNonRoot.
USER 1000:1000
EXPOSE 8080 8000 9000
CMD ["node", "bin/kiln.js", "up", "--host", "0.0.0.0", "--port", "8080"]

# syntax=docker/dockerfile:1
# tickwork on Node: `tickwork start` — state in Redis (REDIS_URL, or Upstash over REST), jobs
# through QStash or the in-process queue, roles chosen with `--role`. Build from the repository
# root:  docker build -t tickwork .
# Run:   docker run --stop-timeout 30 -e REDIS_URL=redis://… -e TICKWORK_API_KEY=… -p 8787:8787 tickwork
# Your handlers: an image FROM this one that copies yours over /app/src/tickwork/handlers.ts
# (found there by convention), or `--handlers /app/path/to/handlers.ts`. infra/ has Compose and
# Kubernetes files that use it.

# 1. Build the package and pack it, as `npm publish` would.
FROM node:20-slim AS package
WORKDIR /build
COPY package.json package-lock.json ./
# `npm run build` below generates the Redis store's Lua module
# (src/store/redis/scripts.generated.ts, not committed) from these two.
COPY scripts/gen-lua.ts ./scripts/gen-lua.ts
COPY src/store/redis/lua ./src/store/redis/lua
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json README.md LICENSE ./
COPY bin ./bin
COPY schema ./schema
COPY scripts ./scripts
COPY src ./src
RUN npm run build && npm pack --ignore-scripts --pack-destination /pack && mv /pack/tickwork-*.tgz /pack/tickwork.tgz

# 2. An app that installs it the way a user does: the tarball, the clients `tickwork start` uses
#    (infra/docker/package.json pins them) and tsx, which loads the TypeScript handlers module.
FROM node:20-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=package /pack/tickwork.tgz /pack/tickwork.tgz
COPY infra/docker/package.json ./
RUN npm install --omit=dev --no-audit --no-fund && npm cache clean --force
COPY functions/handlers.ts ./src/tickwork/handlers.ts

# The image's own user (uid 1000), not root. tsx caches compiled modules under /tmp.
USER node
ENV HOST=0.0.0.0 PORT=8787
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/health`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# node itself is PID 1: tickwork handles SIGTERM (graceful shutdown) and SIGINT.
ENTRYPOINT ["node", "node_modules/tickwork/bin/tickwork.js"]
CMD ["start"]

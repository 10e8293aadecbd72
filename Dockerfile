# a2a-local as a container image: one static (musl) binary on an empty base, serving JSON-RPC,
# HTTP+JSON and gRPC. Its default store is one SQLite file in the volume /data (A2A_DATA_DIR): mount
# a volume there and tasks, streams, push configs and queued work outlive the container. Where a
# long-lived server meets a larger deployment — the gRPC binding above all, which API Gateway and
# Lambda cannot carry — run it on ECS Fargate or App Runner with the AWS backend (DynamoDB + SQS):
# see infra/container/README.md.
#   docker build -t a2a-local .
#   docker run -p 8080:8080 -p 50051:50051 -v a2a-data:/data a2a-local ...
# Multi-arch (x86-64 and ARM64: Graviton, Bedrock AgentCore Runtime, docs/agentcore.md):
#   docker buildx build --platform linux/amd64,linux/arm64 -t <registry>/a2a-local --push .
# Each platform's binary is built on that platform (natively, or under QEMU on another builder):
# musl-gcc is the C compiler of the target's own Debian.
FROM rust:1.95-bookworm AS build
ARG TARGETARCH
RUN case "${TARGETARCH:-amd64}" in \
      amd64) arch=x86_64 ;; \
      arm64) arch=aarch64 ;; \
      *) echo "no musl target for ${TARGETARCH}" >&2; exit 1 ;; \
    esac \
 && echo "${arch}-unknown-linux-musl" > /rust-target \
 && apt-get update \
 && apt-get install -y --no-install-recommends musl-tools=1.2.3-1 \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add "${arch}-unknown-linux-musl"
WORKDIR /src
COPY . .
# aws-lc-sys (TLS) and the bundled SQLite (rusqlite) are C: built with musl-gcc.
ENV CC_x86_64_unknown_linux_musl=musl-gcc CC_aarch64_unknown_linux_musl=musl-gcc
RUN target="$(cat /rust-target)" \
 && cargo build --release --locked --target "${target}" -p a2a-local \
 && cp "target/${target}/release/a2a-local" /a2a-local \
 && mkdir -p /data

FROM scratch
# The AWS SDK verifies TLS against the system roots.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /a2a-local /a2a-local
# The data directory, owned by the user the server runs as (scratch has no mkdir).
COPY --from=build --chown=65534:65534 /data /data
USER 65534:65534
EXPOSE 8080 50051
# Addresses as variables, not flags, so that a host configured by environment alone can move them
# (Bedrock AgentCore Runtime: A2A_PRESET=agentcore A2A_ADDR=0.0.0.0:9000, docs/agentcore.md).
ENV A2A_LOG_FORMAT=json A2A_DATA_DIR=/data A2A_ADDR=0.0.0.0:8080 A2A_GRPC_ADDR=0.0.0.0:50051
VOLUME /data
ENTRYPOINT ["/a2a-local"]

# a2a-local as a container image: one static (musl) binary on an empty base, serving JSON-RPC,
# HTTP+JSON and gRPC. Its default store is one SQLite file in the volume /data (A2A_DATA_DIR): mount
# a volume there and tasks, streams, push configs and queued work outlive the container. Where a
# long-lived server meets a larger deployment — the gRPC binding above all, which API Gateway and
# Lambda cannot carry — run it on ECS Fargate or App Runner with the AWS backend (DynamoDB + SQS):
# see infra/container/README.md.
#   docker build -t a2a-local .
#   docker run -p 8080:8080 -p 50051:50051 -v a2a-data:/data a2a-local ...
FROM rust:1.95-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools=1.2.3-1 \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
# aws-lc-sys (TLS) is C: built with musl-gcc.
ENV CC_x86_64_unknown_linux_musl=musl-gcc
# The bundled SQLite (rusqlite) is C too, built the same way.
RUN cargo build --release --locked --target x86_64-unknown-linux-musl -p a2a-local \
 && cp target/x86_64-unknown-linux-musl/release/a2a-local /a2a-local \
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

# a2a-local as a container image: one static (musl) binary on an empty base, serving JSON-RPC,
# HTTP+JSON and gRPC. Use it where a long-lived server is needed — the gRPC binding above all, which
# API Gateway and Lambda cannot carry — on ECS Fargate or App Runner with the AWS backend
# (DynamoDB + SQS): see infra/container/README.md.
#   docker build -t a2a-local .
#   docker run -p 8080:8080 -p 50051:50051 a2a-local --store memory ...
FROM rust:1.95-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools=1.2.3-1 \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
# aws-lc-sys (TLS) is C: built with musl-gcc.
ENV CC_x86_64_unknown_linux_musl=musl-gcc
RUN cargo build --release --locked --target x86_64-unknown-linux-musl -p a2a-local \
 && cp target/x86_64-unknown-linux-musl/release/a2a-local /a2a-local

FROM scratch
# The AWS SDK verifies TLS against the system roots.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /a2a-local /a2a-local
USER 65534:65534
EXPOSE 8080 50051
ENV A2A_LOG_FORMAT=json
ENTRYPOINT ["/a2a-local", "--addr", "0.0.0.0:8080", "--grpc-addr", "0.0.0.0:50051"]

# syntax=docker/dockerfile:1
# hookd container image: built with the official Rust image, run on
# distroless (glibc, no shell, no package manager) as a non-root user.
#
#   docker build -t hookd:0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" .
#   docker run --read-only -p 8080:8080 -p 50051:50051 -v hookd-data:/var/lib/hookd hookd:0.1.0
#
# The data dir /var/lib/hookd is a volume; nothing else is written, so the
# root filesystem can be mounted read-only.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS build
# The commit for hookd_build_info (.git is not in the build context).
ARG REVISION=unknown
ENV HOOKD_BUILD_COMMIT=${REVISION}
WORKDIR /src
COPY . .
# Protos are compiled by protox (pure Rust): no protoc or other system
# package is needed beyond the image's C toolchain (for ring).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p hookd-server -p hookd-sdk --bins \
    && mkdir -p /out/bin /out/data \
    && cp target/release/hookd target/release/hookctl /out/bin/

FROM gcr.io/distroless/cc-debian12:nonroot
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="hookd" \
      org.opencontainers.image.description="Multi-tenant inbound webhook receiver: verifies, stores durably, forwards." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="gcr.io/distroless/cc-debian12:nonroot"
COPY --from=build /out/bin/ /usr/local/bin/
COPY --from=build --chown=65532:65532 /out/data /var/lib/hookd
USER 65532:65532
WORKDIR /var/lib/hookd
VOLUME ["/var/lib/hookd"]
# HTTP ingress, gRPC control plane, metrics (when [metrics] addr is set).
EXPOSE 8080 50051 9090
ENTRYPOINT ["/usr/local/bin/hookd"]
CMD ["--data-dir=/var/lib/hookd", "--http-addr=0.0.0.0:8080", "--grpc-addr=0.0.0.0:50051"]

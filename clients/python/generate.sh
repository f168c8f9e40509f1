#!/usr/bin/env bash
# Generates hookd-client's gRPC stubs (src/hookd/v1) from proto/hookd/v1 with
# grpcio-tools' bundled protoc and mypy-protobuf's type stubs. The stubs are
# committed, so `pip install ./clients/python` needs no code generator;
# `generate.sh --check` regenerates into a temporary folder and fails when
# the committed stubs differ. Needs the tools of requirements-dev.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
proto=$here/../../proto
out=$here/src
mode=${1:-write}

generate() { # generate DIR
  mkdir -p "$1/hookd/v1"
  # protoc finds protoc-gen-mypy and protoc-gen-mypy_grpc on PATH, beside python.
  PATH="$(dirname "$(command -v python3)"):$PATH" python3 -m grpc_tools.protoc -I "$proto" \
    --python_out="$1" --grpc_python_out="$1" --mypy_out=quiet:"$1" --mypy_grpc_out=quiet:"$1" \
    "$proto"/hookd/v1/*.proto
}

case $mode in
  write)
    rm -f "$out"/hookd/v1/*_pb2*.py "$out"/hookd/v1/*_pb2*.pyi
    generate "$out"
    ;;
  --check)
    fresh=$(mktemp -d)
    trap 'rm -rf "$fresh"' EXIT
    generate "$fresh"
    if ! diff -r -x '__init__.py' -x 'py.typed' -x '__pycache__' "$fresh/hookd" "$out/hookd" >/dev/null; then
      diff -r -x '__init__.py' -x 'py.typed' -x '__pycache__' "$fresh/hookd" "$out/hookd" | head -40
      echo "clients/python/src/hookd/v1 is stale: run clients/python/generate.sh and commit" >&2
      exit 1
    fi
    echo "clients/python stubs are fresh"
    ;;
  *)
    echo "usage: generate.sh [--check]" >&2
    exit 2
    ;;
esac

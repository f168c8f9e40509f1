#!/usr/bin/env bash
# Shows that a non-Rust client can use hookd's gRPC API: generates Python
# stubs from proto/ with grpcio-tools, starts the real hookd binary on free
# ports, and creates a tenant from Python. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install -q --disable-pip-version-check grpcio grpcio-tools 2>/dev/null \
  || python3 -m pip install -q --disable-pip-version-check --break-system-packages grpcio grpcio-tools
cargo build -q -p hookd-server --bin hookd

work=$(mktemp -d)
trap 'kill "$hookd_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/gen"
python3 -m grpc_tools.protoc -I proto --python_out="$work/gen" --grpc_python_out="$work/gen" proto/hookd/v1/*.proto

HOOKD_ADMIN_TOKEN=hka_python_check_token_0123456789 \
  target/debug/hookd --data-dir "$work/data" --http-addr 127.0.0.1:0 --grpc-addr 127.0.0.1:0 \
  >"$work/hookd.log" 2>&1 &
hookd_pid=$!
for _ in $(seq 1 100); do
  grpc_addr=$(grep -o 'grpc listening on [0-9.:]*' "$work/hookd.log" | awk '{print $4}' || true)
  [ -n "$grpc_addr" ] && break
  sleep 0.1
done
[ -n "$grpc_addr" ] || { cat "$work/hookd.log"; echo "hookd did not start"; exit 1; }

PYTHONPATH="$work/gen" python3 examples/python/create_tenant.py \
  "$grpc_addr" hka_python_check_token_0123456789 py-demo
echo "python grpc check: passed"

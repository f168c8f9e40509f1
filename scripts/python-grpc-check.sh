#!/usr/bin/env bash
# Shows that a non-Rust client can use hookd's gRPC API: generates Python
# stubs from proto/ with grpcio-tools, starts the real hookd binary on free
# ports and creates a tenant from Python, first in plaintext, then against a
# hookd serving gRPC over TLS with client certificates required (certificates
# made here with openssl). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install -q --disable-pip-version-check grpcio grpcio-tools 2>/dev/null \
  || python3 -m pip install -q --disable-pip-version-check --break-system-packages grpcio grpcio-tools
command -v openssl >/dev/null || { echo "openssl is needed (apt-get install openssl)"; exit 1; }
cargo build -q -p hookd-server --bin hookd

token=hka_python_check_token_0123456789
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
mkdir -p "$work/gen" "$work/pki"
python3 -m grpc_tools.protoc -I proto --python_out="$work/gen" --grpc_python_out="$work/gen" proto/hookd/v1/*.proto

# start_hookd NAME [ENV=VALUE ...]: runs hookd with its own data dir and sets
# grpc_addr to the address it logged.
start_hookd() {
  local name=$1
  shift
  env HOOKD_ADMIN_TOKEN="$token" HOOKD_DASHBOARD__ADDR=127.0.0.1:0 "$@" \
    target/debug/hookd --data-dir "$work/$name-data" --http-addr 127.0.0.1:0 --grpc-addr 127.0.0.1:0 \
    >"$work/$name.log" 2>&1 &
  pids+=($!)
  grpc_addr=
  for _ in $(seq 1 100); do
    grpc_addr=$(grep -o 'grpc listening on [0-9.:]*' "$work/$name.log" | awk '{print $4}' || true)
    [ -n "$grpc_addr" ] && return 0
    sleep 0.1
  done
  cat "$work/$name.log"
  echo "hookd ($name) did not start"
  exit 1
}

# A CA, a server certificate for 127.0.0.1 and a client certificate (P-256).
pki=$work/pki
leaf() { # leaf NAME SUBJECT EXTENSIONS
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/$1.key" \
    -out "$pki/$1.csr" -subj "$2" 2>/dev/null
  printf '%s\n' "$3" >"$pki/$1.ext"
  openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 1 -out "$pki/$1.pem" -extfile "$pki/$1.ext" 2>/dev/null
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -keyout "$pki/ca.key" -out "$pki/ca.pem" -subj "/CN=hookd check CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
leaf server "/CN=localhost" $'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth'
leaf client "/CN=python-check" $'extendedKeyUsage=clientAuth'

start_hookd plain
PYTHONPATH="$work/gen" python3 examples/python/create_tenant.py "$grpc_addr" "$token" py-demo
echo "python grpc check (plaintext): passed"

start_hookd tls \
  HOOKD_GRPC__TLS__CERT_FILE="$pki/server.pem" HOOKD_GRPC__TLS__KEY_FILE="$pki/server.key" \
  HOOKD_GRPC__TLS__CLIENT_CA_FILE="$pki/ca.pem"
PYTHONPATH="$work/gen" python3 examples/python/create_tenant.py "$grpc_addr" "$token" py-tls \
  --ca "$pki/ca.pem" --cert "$pki/client.pem" --key "$pki/client.key"
# Without a client certificate, or trusting no CA of hookd's, the handshake fails.
PYTHONPATH="$work/gen" python3 - "$grpc_addr" "$token" "$pki/ca.pem" <<'PY'
import sys

import grpc

from hookd.v1 import tenant_pb2, tenant_pb2_grpc

endpoint, token, ca_file = sys.argv[1:4]
with open(ca_file, "rb") as f:
    ca = f.read()
for what, credentials in [
    ("no client certificate", grpc.ssl_channel_credentials(root_certificates=ca)),
    ("hookd's CA not trusted", grpc.ssl_channel_credentials()),
]:
    with grpc.secure_channel(endpoint, credentials) as channel:
        stub = tenant_pb2_grpc.TenantServiceStub(channel)
        try:
            stub.GetTenant(
                tenant_pb2.GetTenantRequest(tenant_id="py-tls"),
                metadata=[("authorization", f"Bearer {token}")],
                timeout=10,
            )
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.UNAVAILABLE, (what, err)
            print(f"{what}: refused at the handshake, as expected")
        else:
            raise AssertionError(f"{what}: the call must fail")
PY
echo "python grpc check (TLS with client certificates): passed"

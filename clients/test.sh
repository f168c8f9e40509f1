#!/usr/bin/env bash
# Tests hookd's Python and TypeScript clients: their generated stubs are
# fresh, their versions are hookd's, they type-check (mypy --strict, tsc
# --strict), then each runs against a live hookd (the debug binary, on free
# ports with a temp data dir, plaintext and TLS) and a local sink answering
# 410: it creates a tenant, sends a signed event, lists it, sees it
# dead-lettered and redelivers it. Needs python3 (with venv and pip), node
# and npm, openssl, and network to PyPI and npm only. Exits non-zero on any
# failure; hookd and the sink are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

missing=()
command -v openssl >/dev/null || missing+=(openssl)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi
cargo build -q -p hookd-server --bin hookd

token=hka_clients_test_token_0123456789
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "== python: install hookd-client and its tools"
if ! python3 -m venv "$work/venv" >/dev/null 2>&1; then
  # Debian ships venv's pip apart, in python3-venv.
  apt-get update -qq && apt-get install -y -qq python3-venv
  rm -rf "$work/venv"
  python3 -m venv "$work/venv"
fi
py=$work/venv/bin/python
"$py" -m pip install -q --disable-pip-version-check -r clients/python/requirements-dev.txt
"$py" -m pip install -q --disable-pip-version-check ./clients/python
PATH="$work/venv/bin:$PATH" clients/python/generate.sh --check
(cd clients/python && "$py" -m mypy)

echo "== typescript: install, check the stubs, compile"
(cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run --silent check-generated && npm run --silent build)

echo "== start the sink and hookd"
"$py" clients/sink.py "$work/sink.port" &
pids+=($!)
# start_hookd NAME [ENV=VALUE ...]: runs hookd with its own data dir; sets
# grpc_addr and http_addr to the addresses it logged.
start_hookd() {
  local name=$1 log=$work/$1.log
  shift
  env HOOKD_ADMIN_TOKEN="$token" HOOKD_DASHBOARD__ADDR=127.0.0.1:0 \
    HOOKD_FORWARD__ALLOW_NETWORKS='["127.0.0.1/32"]' "$@" \
    target/debug/hookd --data-dir "$work/$name-data" --http-addr 127.0.0.1:0 --grpc-addr 127.0.0.1:0 \
    >"$log" 2>&1 &
  pids+=($!)
  grpc_addr= http_addr=
  for _ in $(seq 1 150); do
    grpc_addr=$(grep -so 'grpc listening on [0-9.:]*' "$log" | awk '{print $4}' || true)
    http_addr=$(grep -so 'http listening on [0-9.:]*' "$log" | awk '{print $4}' || true)
    [ -n "$grpc_addr" ] && [ -n "$http_addr" ] && return 0
    sleep 0.1
  done
  cat "$log"
  echo "hookd ($name) did not start" >&2
  exit 1
}
pki=$work/pki
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -keyout "$pki/ca.key" -out "$pki/ca.pem" -subj "/CN=hookd clients test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/server.key" \
  -out "$pki/server.csr" -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$pki/server.ext"
openssl x509 -req -in "$pki/server.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -CAcreateserial \
  -days 1 -out "$pki/server.pem" -extfile "$pki/server.ext" 2>/dev/null

start_hookd plain
export HOOKD_GRPC_ADDR=$grpc_addr HOOKD_HTTP_URL=http://$http_addr HOOKD_ADMIN_TOKEN=$token
start_hookd tls HOOKD_GRPC__TLS__CERT_FILE="$pki/server.pem" HOOKD_GRPC__TLS__KEY_FILE="$pki/server.key"
export HOOKD_TLS_GRPC_ADDR=$grpc_addr HOOKD_TLS_CA_FILE=$pki/ca.pem
for _ in $(seq 1 50); do [ -s "$work/sink.port" ] && break; sleep 0.1; done
export HOOKD_SINK_URL=http://127.0.0.1:$(cat "$work/sink.port")

echo "== python client against hookd"
(cd clients/python && timeout 120 "$py" -m pytest -q -p no:cacheprovider tests)

echo "== typescript client against hookd"
(cd clients/typescript && timeout 120 npm run --silent test)
echo "clients: passed"

#!/usr/bin/env bash
# Runs the README's REST examples against a live hookd: starts the debug
# hookd binary (built first; a no-op after the test step) with a temp data dir and an admin token, a
# destination on 127.0.0.1:9000 that answers 400 (as in the walk-through),
# then runs the ```sh blocks that follow a `<!-- rest-example -->` marker in
# README.md, in order, in one shell with `set -e`, and checks what they
# printed: a tenant created, its dead letter listed, the dead letter
# redelivered. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build -q -p hookd-server --bin hookd
command -v curl >/dev/null || { echo "curl is needed (apt-get install curl)"; exit 1; }
command -v openssl >/dev/null || { echo "openssl is needed (apt-get install openssl)"; exit 1; }

work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

python3 -c 'import http.server as h
class D(h.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(400); self.end_headers()
    def log_message(self, *args): pass
h.HTTPServer(("127.0.0.1", 9000), D).serve_forever()' &
pids+=($!)

export HOOKD_ADMIN_TOKEN=hka_rest_examples_token_0123456789
HOOKD_FORWARD__ALLOW_NETWORKS='["127.0.0.1/32"]' HOOKD_DASHBOARD__ADDR=127.0.0.1:0 \
  target/debug/hookd --data-dir "$work/data" --http-addr 127.0.0.1:0 --grpc-addr 127.0.0.1:0 \
  >"$work/hookd.log" 2>&1 &
pids+=($!)
grpc= http=
for _ in $(seq 1 100); do
  grpc=$(grep -o 'grpc listening on [0-9.:]*' "$work/hookd.log" | awk '{print $4}' || true)
  http=$(grep -o 'http listening on [0-9.:]*' "$work/hookd.log" | awk '{print $4}' || true)
  [ -n "$grpc" ] && [ -n "$http" ] && break
  sleep 0.1
done
[ -n "$grpc" ] || { cat "$work/hookd.log"; echo "hookd did not start"; exit 1; }
export HOOKD_URL="http://$grpc" HOOKD_INGEST="http://$http"

# Every ```sh block right after a <!-- rest-example --> line, in order.
awk '
  /<!-- rest-example -->/ { marked = 1; next }
  marked && /^```sh$/ { inside = 1; marked = 0; next }
  inside && /^```$/ { inside = 0; print ""; next }
  inside { print; next }
  NF { marked = 0 }
' README.md >"$work/examples.sh"
[ -s "$work/examples.sh" ] || { echo "README.md has no <!-- rest-example --> blocks"; exit 1; }

bash -euo pipefail "$work/examples.sh" | tee "$work/out"

expect() { # expect WHAT PATTERN
  grep -Eq "$2" "$work/out" || { echo "rest examples: no $1 in their output"; exit 1; }
}
expect "created tenant" '"ingestPath":"/hooks/shop"'
expect "accepted event" 'HTTP/1.1 202'
expect "dead letter" '"deadLetters":\[\{"tenantId":"shop","deliveryId":"dlv_'
expect "redelivery" '"deliveryIds":\["dlv_'
echo "rest examples: passed"

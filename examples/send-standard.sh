#!/usr/bin/env bash
# Signs a JSON body the Standard Webhooks way and POSTs it to hookd.
# usage: examples/send-standard.sh URL WHSEC_SECRET EVENT_ID 'JSON'
set -euo pipefail
url=$1 secret=$2 id=$3 body=$4
ts=$(date +%s)
key_hex=$(printf '%s' "${secret#whsec_}" | base64 -d | od -An -tx1 | tr -d ' \n')
sig=$(printf '%s' "$id.$ts.$body" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key_hex" -binary | base64)
curl -sS -i "$url" \
  -H "content-type: application/json" \
  -H "webhook-id: $id" \
  -H "webhook-timestamp: $ts" \
  -H "webhook-signature: v1,$sig" \
  --data-binary "$body"
echo

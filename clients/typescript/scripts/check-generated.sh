#!/bin/sh
# Fails when src/gen is not what `npm run generate` writes from proto/ now:
# generates into a temporary folder with the pinned buf and protoc-gen-es
# and compares. Run from clients/typescript (npm run check-generated).
set -eu
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
buf generate -o "$fresh"
if ! diff -r "$fresh/src/gen" src/gen >/dev/null; then
  diff -r "$fresh/src/gen" src/gen | head -40
  echo "clients/typescript/src/gen is stale: run npm run generate and commit" >&2
  exit 1
fi
echo "clients/typescript stubs are fresh"

// Shared pieces of the Node vector scripts, the same shape and writer as
// hmac_vectors.py, so every file regenerates byte for byte.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const NOW = 1764480000;
export const TOLERANCE = 300;
const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The installed version of `name`, read from node_modules beside the scripts. */
export function installed(name) {
  const manifest = path.join(HERE, "node_modules", name, "package.json");
  return JSON.parse(fs.readFileSync(manifest, "utf8")).version;
}

/** A delivery the tenant accepts; `eventId` is the id hookd keys it by. */
export const ok = (eventId) => (eventId === undefined ? { ok: true } : { ok: true, event_id: eventId });

/** A delivery refused with `code` from docs/error-codes.md. */
export const fail = (code) => ({ ok: false, code });

/** `body` with its last byte changed by one bit. */
export function flip(body) {
  const out = Buffer.from(body);
  out[out.length - 1] ^= 1;
  return out;
}

/** One vector; `secrets` is a list of [kid, secret, state]. */
export function vector(scheme, name, source, secrets, headers, body, expect, extra = {}) {
  return {
    scheme,
    name,
    source,
    secrets: secrets.map(([kid, secret, state]) => ({ kid, secret, state })),
    tolerance_s: TOLERANCE,
    now: NOW,
    headers,
    body_b64: Buffer.from(body).toString("base64"),
    ...extra,
    expect,
  };
}

/** Writes ../providers/<scheme>.json, indented as json.dumps(indent=1) does. */
export function write(scheme, script, vectors) {
  const file = path.join(HERE, "..", "providers", `${scheme}.json`);
  const text = JSON.stringify({ generated_by: `make/${script}`, vectors }, null, 1);
  fs.writeFileSync(file, text + "\n");
  console.log(`wrote ${vectors.length} vectors to ${path.basename(file)}`);
}

// Zoom vectors, signed the way Zoom's own sample app (github.com/zoom/webhook-sample,
// index.js) checks them: x-zm-signature is `v0=` and the hex HMAC-SHA256 of
// `v0:${x-zm-request-timestamp}:${JSON.stringify(req.body)}` with the webhook secret
// token. Zoom sends compact JSON, so that string is the raw body. Zoom publishes
// no verifying package. Run: node make_zoom.mjs
import crypto from "node:crypto";
import { NOW, fail, flip, ok, vector, write } from "./hmac_vectors.mjs";

const SOURCE = "node crypto per Zoom's sample app github.com/zoom/webhook-sample (index.js)";
const CURRENT = "Hk3vQp8XrT2mWz5nB7cY1a";
const PREVIOUS = "Lq9sD4fG6hJ2kM8nP0rT3v";
const WRONG = "Aa1Bb2Cc3Dd4Ee5Ff6Gg7h";
const SECRETS = [["k2", CURRENT, "current"], ["k1", PREVIOUS, "previous"]];
const BODY = Buffer.from(JSON.stringify({
  event: "meeting.started",
  event_ts: 1764479999123,
  payload: {
    account_id: "AAAAAABBBB",
    object: { id: "85123456789", uuid: "4444AAAiAAAAAiAiAiiAii==", topic: "Café stand-up", start_time: "2025-11-30T05:19:58Z" },
  },
}));

/** The sample app's hashForVerify, as the header Zoom sends. */
function signature(secret, timestamp = NOW, body = BODY) {
  const message = `v0:${timestamp}:${JSON.stringify(JSON.parse(body.toString("utf8")))}`;
  return "v0=" + crypto.createHmac("sha256", secret).update(message).digest("hex");
}

function headers(secret, timestamp = NOW) {
  return { "x-zm-signature": signature(secret, timestamp), "x-zm-request-timestamp": String(timestamp) };
}

const cases = [
  ["valid", headers(CURRENT), BODY, ok()],
  ["previous_secret", headers(PREVIOUS), BODY, ok()],
  ["body_changed_one_byte", headers(CURRENT), flip(BODY), fail("BAD_SIGNATURE")],
  ["wrong_secret", headers(WRONG), BODY, fail("BAD_SIGNATURE")],
  ["stale_timestamp", headers(CURRENT, NOW - 301), BODY, fail("STALE_TIMESTAMP")],
  ["future_timestamp", headers(CURRENT, NOW + 301), BODY, fail("FUTURE_TIMESTAMP")],
  ["timestamp_not_signed", { ...headers(CURRENT), "x-zm-request-timestamp": String(NOW + 1) }, BODY, fail("BAD_SIGNATURE")],
  ["no_timestamp", { "x-zm-signature": signature(CURRENT) }, BODY, fail("MISSING_SIGNATURE")],
  ["no_prefix", { ...headers(CURRENT), "x-zm-signature": signature(CURRENT).slice(3) }, BODY, fail("INVALID_SIGNATURE_FORMAT")],
  ["timestamp_with_fraction", { ...headers(CURRENT), "x-zm-request-timestamp": `${NOW}.5` }, BODY, fail("INVALID_TIMESTAMP")],
];
write("zoom", "make_zoom.mjs", cases.map(([name, h, b, e]) => vector("zoom", name, SOURCE, SECRETS, h, b, e)));

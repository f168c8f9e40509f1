// Linear vectors: Linear-Signature is the hex HMAC-SHA256 of the raw body, whose
// `webhookTimestamp` (unix ms) is the signed timestamp. @linear/sdk's
// LinearWebhookClient only verifies, so the HMAC is made with Node's crypto as
// Linear documents it and the SDK's verify() (clock pinned to NOW; its own
// window is 60 s) must accept the valid vectors and refuse the bad ones.
// Run: node make_linear.mjs
import crypto from "node:crypto";
import { LinearWebhookClient } from "@linear/sdk/webhooks";
import { NOW, fail, flip, installed, ok, vector, write } from "./hmac_vectors.mjs";

const SOURCE = `node crypto per https://linear.app/developers/webhooks#securing-webhooks; checked with @linear/sdk ${installed("@linear/sdk")} LinearWebhookClient.verify`;
const CURRENT = "lin_wh_Vb7Kq2pXe9RtY4uN6mZs3aWd8fGh1jLc5oPi0";
const PREVIOUS = "lin_wh_Qa1Zs2Xd3Cf4Vg5Bh6Nj7Mk8Ll9Po0Iu1Yt2Re3";
const WRONG = "lin_wh_0000000000000000000000000000000000000";
const SECRETS = [["k2", CURRENT, "current"], ["k1", PREVIOUS, "previous"]];
const DELIVERY = "3c9a6b1e-5f2d-4e8a-9b7c-1d0e2f3a4b5c";

/** A Linear Issue event sent `offset` seconds from NOW (Linear's own key order). */
function body(offset = 0, stamp = true) {
  const event = {
    action: "create",
    actor: { id: "0c7b1a2d", type: "user", name: "Zoë Admin" },
    createdAt: "2025-11-30T05:19:59.412Z",
    data: { id: "2174add1-f7c8-44e3-bbf3-2d60b5ea8bc9", title: "Fix the café door", priority: 2, teamId: "72b2a2dc" },
    url: "https://linear.app/acme/issue/ENG-42/fix-the-cafe-door",
    type: "Issue",
    organizationId: "b8c4b0e7-0a3f-4c55-9f1e-6f8d2a1b3c4d",
    webhookId: "000042e3-d123-4980-b49f-8e140eef9329",
  };
  if (stamp) event.webhookTimestamp = (NOW + offset) * 1000 + 412;
  return Buffer.from(JSON.stringify(event));
}

const sign = (secret, raw) => crypto.createHmac("sha256", secret).update(raw).digest("hex");

function headers(secret, raw) {
  return { "Linear-Delivery": DELIVERY, "Linear-Event": "Issue", "Linear-Signature": sign(secret, raw) };
}

function libraryAccepts(h, raw) {
  const realNow = Date.now;
  Date.now = () => NOW * 1000;
  try {
    return [CURRENT, PREVIOUS].some((secret) => {
      try {
        return new LinearWebhookClient(secret).verify(raw, h["Linear-Signature"]);
      } catch {
        return false;
      }
    });
  } finally {
    Date.now = realNow;
  }
}

const valid = body();
// One byte of the title changed: still JSON, so the signature is what fails.
const tampered = Buffer.from(valid);
tampered[valid.indexOf("door")] ^= 1;
const cases = [
  ["valid", headers(CURRENT, valid), valid, ok(DELIVERY)],
  ["previous_secret", headers(PREVIOUS, valid), valid, ok(DELIVERY)],
  ["body_changed_one_byte", headers(CURRENT, valid), tampered, fail("BAD_SIGNATURE")],
  // The closing brace changed: the body is no longer JSON, so there is no timestamp to read.
  ["body_last_byte_changed", headers(CURRENT, valid), flip(valid), fail("INVALID_TIMESTAMP")],
  ["wrong_secret", headers(WRONG, valid), valid, fail("BAD_SIGNATURE")],
  ["stale_timestamp", headers(CURRENT, body(-301)), body(-301), fail("STALE_TIMESTAMP")],
  ["future_timestamp", headers(CURRENT, body(301)), body(301), fail("FUTURE_TIMESTAMP")],
  ["timestamp_header_is_not_trusted", { ...headers(CURRENT, body(-301)), "Linear-Timestamp": String(NOW * 1000) }, body(-301), fail("STALE_TIMESTAMP")],
  ["no_body_timestamp", headers(CURRENT, body(0, false)), body(0, false), fail("INVALID_TIMESTAMP")],
  ["no_signature", { "Linear-Delivery": DELIVERY, "Linear-Event": "Issue" }, valid, fail("MISSING_SIGNATURE")],
  ["sha256_prefix", { ...headers(CURRENT, valid), "Linear-Signature": "sha256=" + sign(CURRENT, valid) }, valid, fail("INVALID_SIGNATURE_FORMAT")],
];
const vectors = cases.map(([name, h, raw, e]) => {
  if (name !== "no_signature" && libraryAccepts(h, raw) !== e.ok) throw new Error(`${name}: the SDK disagrees`);
  return vector("linear", name, SOURCE, SECRETS, h, raw, e);
});
write("linear", "make_linear.mjs", vectors);

// Twitch EventSub vectors, signed as Twitch's EventSub docs describe ("Verifying
// the event message"): HMAC-SHA256 of message id + timestamp + raw body, hex,
// after `sha256=`. @twurple/eventsub-http only verifies, so its own check
// (EventSubHttpBase#_verifyData, the one its listener and middleware run) must
// accept the valid vectors and refuse the bad ones. Run: node make_twitch.mjs
import crypto from "node:crypto";
import { EventSubMiddleware } from "@twurple/eventsub-http";
import { NOW, fail, flip, ok, installed, vector, write } from "./hmac_vectors.mjs";

const twurple = installed("@twurple/eventsub-http");
const SOURCE = `node crypto per https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#verifying-the-event-message; checked with @twurple/eventsub-http ${twurple}`;
const CURRENT = "s3cre7-eventsub-0f9e8d7c6b5a";
const PREVIOUS = "s3cre7-eventsub-1a2b3c4d5e6f";
const WRONG = "not-the-subscription-secret";
const SECRETS = [["k2", CURRENT, "current"], ["k1", PREVIOUS, "previous"]];
const MESSAGE_ID = "e76c6bd4-55c9-4987-8304-da1588d8988b";
const BODY = Buffer.from(JSON.stringify({
  subscription: {
    id: "f1c2a387-161a-49f9-a165-0f21d7a4e1c4", type: "channel.follow", version: "2", status: "enabled", cost: 0,
    condition: { broadcaster_user_id: "1337", moderator_user_id: "1337" },
    transport: { method: "webhook", callback: "https://hooks.example.com/hooks/acme" },
    created_at: "2025-11-29T22:10:41.634234626Z",
  },
  event: { user_id: "1234", user_login: "cool_user", user_name: "Cool_Ünser", broadcaster_user_id: "1337", followed_at: "2025-11-30T05:19:59.581573Z" },
}));

/** RFC 3339 with nanoseconds, as Twitch writes it, `offset` seconds from NOW. */
const at = (offset, nanos = "634234626") => new Date((NOW + offset) * 1000).toISOString().replace(/\.\d{3}Z$/, `.${nanos}Z`);

function signature(secret, id, timestamp, body = BODY) {
  const hmac = crypto.createHmac("sha256", secret).update(id + timestamp).update(body);
  return "sha256=" + hmac.digest("hex");
}

function headers(secret, offset = 0, id = MESSAGE_ID) {
  const timestamp = at(offset);
  return {
    "Twitch-Eventsub-Message-Id": id,
    "Twitch-Eventsub-Message-Retry": "0",
    "Twitch-Eventsub-Message-Type": "notification",
    "Twitch-Eventsub-Message-Signature": signature(secret, id, timestamp),
    "Twitch-Eventsub-Message-Timestamp": timestamp,
    "Twitch-Eventsub-Subscription-Type": "channel.follow",
    "Twitch-Eventsub-Subscription-Version": "2",
  };
}

/** What @twurple/eventsub-http makes of the delivery with either live secret. */
function libraryAccepts(h, body) {
  const check = EventSubMiddleware.prototype._verifyData;
  const sig = h["Twitch-Eventsub-Message-Signature"];
  if (sig === undefined) return false;
  return [CURRENT, PREVIOUS].some((secret) =>
    check.call({ _secret: secret }, h["Twitch-Eventsub-Message-Id"], h["Twitch-Eventsub-Message-Timestamp"], body.toString("utf8"), sig));
}

const valid = headers(CURRENT);
const cases = [
  ["valid", valid, BODY, ok(MESSAGE_ID)],
  ["previous_secret", headers(PREVIOUS), BODY, ok(MESSAGE_ID)],
  ["retry_keeps_the_message_id", { ...headers(CURRENT, 60), "Twitch-Eventsub-Message-Retry": "1" }, BODY, ok(MESSAGE_ID)],
  ["body_changed_one_byte", valid, flip(BODY), fail("BAD_SIGNATURE")],
  ["wrong_secret", headers(WRONG), BODY, fail("BAD_SIGNATURE")],
  ["message_id_changed", { ...valid, "Twitch-Eventsub-Message-Id": MESSAGE_ID.replace("e76c", "e76d") }, BODY, fail("BAD_SIGNATURE")],
  ["stale_timestamp", headers(CURRENT, -301), BODY, fail("STALE_TIMESTAMP")],
  ["future_timestamp", headers(CURRENT, 301), BODY, fail("FUTURE_TIMESTAMP")],
  ["no_signature", Object.fromEntries(Object.entries(valid).filter(([k]) => k !== "Twitch-Eventsub-Message-Signature")), BODY, fail("MISSING_SIGNATURE")],
  ["no_prefix", { ...valid, "Twitch-Eventsub-Message-Signature": valid["Twitch-Eventsub-Message-Signature"].slice(7) }, BODY, fail("INVALID_SIGNATURE_FORMAT")],
  ["timestamp_not_rfc3339", (() => {
    const ts = String(NOW);
    return { ...valid, "Twitch-Eventsub-Message-Timestamp": ts, "Twitch-Eventsub-Message-Signature": signature(CURRENT, MESSAGE_ID, ts) };
  })(), BODY, fail("INVALID_TIMESTAMP")],
];
// hookd refuses a unix-seconds timestamp the library would take (it checks no format).
const stricter = new Set(["timestamp_not_rfc3339"]);
const vectors = cases.map(([name, h, b, e]) => {
  const accepted = libraryAccepts(h, b);
  const expected = e.ok || (!stricter.has(name) && ["STALE_TIMESTAMP", "FUTURE_TIMESTAMP"].includes(e.code));
  if (!stricter.has(name) && accepted !== expected) throw new Error(`${name}: library says ${accepted}`);
  return vector("twitch", name, SOURCE, SECRETS, h, b, e);
});
write("twitch", "make_twitch.mjs", vectors);

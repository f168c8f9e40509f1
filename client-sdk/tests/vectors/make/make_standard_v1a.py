"""Standard Webhooks v1a vectors: Ed25519 signatures over `id.timestamp.body`,
made with PyNaCl (libsodium), and v1 HMAC signatures made with the
`standardwebhooks` library, for tenants holding `whpk_` public keys beside or
instead of `whsec_` secrets.

Run: python3 -m venv /tmp/v && /tmp/v/bin/pip install -r requirements.txt &&
/tmp/v/bin/python make_standard_v1a.py (writes ../providers/standard_v1a.json)
"""

import base64
import json
from datetime import datetime, timezone
from importlib.metadata import version

from nacl.signing import SigningKey
from standardwebhooks.webhooks import Webhook

from vectorfile import NOW, TOLERANCE, write
SOURCE = f"PyNaCl {version('pynacl')} SigningKey.sign"
HMAC_SOURCE = f"standardwebhooks {version('standardwebhooks')} Webhook.sign"
BODY = json.dumps(
    {"type": "invoice.paid", "data": {"invoice": "in_77", "amount": 4200}},
    separators=(",", ":"),
).encode()

CURRENT = SigningKey(bytes(range(1, 33)))
PREVIOUS = SigningKey(bytes(range(101, 133)))
STRANGER = SigningKey(bytes(range(201, 233)))
HMAC_SECRET = "whsec_" + base64.b64encode(bytes(range(33, 65))).decode()


def public(key):
    return "whpk_" + base64.b64encode(bytes(key.verify_key)).decode()


def v1a(key, msg_id, timestamp, body):
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1a," + base64.b64encode(key.sign(signed).signature).decode()


def v1(msg_id, timestamp, body):
    at = datetime.fromtimestamp(timestamp, tz=timezone.utc)
    return Webhook(HMAC_SECRET).sign(msg_id, at, body.decode())


def keys(*pairs):
    return [{"kid": kid, "secret": secret, "state": state} for kid, secret, state in pairs]


PUBLIC_ONLY = keys(("p2", public(CURRENT), "current"), ("p1", public(PREVIOUS), "previous"))


def vector(name, signature, *, secrets=PUBLIC_ONLY, timestamp=NOW, body=BODY, expect, source=SOURCE):
    msg_id = "msg_v1a_" + name
    return {
        "scheme": "standard",
        "name": "v1a_" + name,
        "source": source,
        "secrets": secrets,
        "tolerance_s": TOLERANCE,
        "now": NOW,
        "headers": {
            "webhook-id": msg_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature(msg_id, timestamp),
        },
        "body_b64": base64.b64encode(body).decode(),
        "expect": expect,
    }


def ok(name):
    return {"ok": True, "event_id": "msg_v1a_" + name}


def refused(code):
    return {"ok": False, "code": code}


def signed_by(key, body=BODY):
    return lambda msg_id, ts: v1a(key, msg_id, ts, body)


tampered = BODY.replace(b"4200", b"4201")
vectors = [
    vector("valid", signed_by(CURRENT), expect=ok("valid")),
    vector("previous_key_during_rotation", signed_by(PREVIOUS), expect=ok("previous_key_during_rotation")),
    vector("body_changed_one_byte", signed_by(CURRENT), body=tampered, expect=refused("BAD_SIGNATURE")),
    vector("wrong_key", signed_by(STRANGER), expect=refused("BAD_SIGNATURE")),
    vector("stale", signed_by(CURRENT), timestamp=NOW - TOLERANCE - 1, expect=refused("STALE_TIMESTAMP")),
    vector("future", signed_by(CURRENT), timestamp=NOW + TOLERANCE + 1, expect=refused("FUTURE_TIMESTAMP")),
    vector(
        "hmac_and_ed25519_side_by_side",
        lambda msg_id, ts: v1(msg_id, ts, BODY) + " " + v1a(CURRENT, msg_id, ts, BODY),
        secrets=keys(("s1", HMAC_SECRET, "current"), ("p2", public(CURRENT), "previous")),
        expect=ok("hmac_and_ed25519_side_by_side"),
        source=f"{SOURCE}; {HMAC_SOURCE}",
    ),
    vector(
        "hmac_signature_for_a_public_key_tenant",
        lambda msg_id, ts: v1(msg_id, ts, BODY),
        expect=refused("BAD_SIGNATURE"),
        source=HMAC_SOURCE,
    ),
    vector(
        "ed25519_signature_for_an_hmac_tenant",
        signed_by(CURRENT),
        secrets=keys(("s1", HMAC_SECRET, "current")),
        expect=refused("BAD_SIGNATURE"),
    ),
    vector(
        "truncated_signature",
        lambda msg_id, ts: v1a(CURRENT, msg_id, ts, BODY)[:-8],
        expect=refused("INVALID_SIGNATURE_FORMAT"),
    ),
]

write("standard_v1a", "make_standard_v1a.py", vectors)

"""Intercom vectors, signed as Intercom's webhook docs describe ("Signed
notifications"): X-Hub-Signature is `sha1=` and the hex HMAC-SHA1 of the raw
body keyed with the app's client secret. Intercom's libraries do not check it,
so the standard library makes the HMAC."""

import hashlib
import hmac

from hmac_vectors import fail, flip, ok, vector, write

SOURCE = "python hmac stdlib per https://developers.intercom.com/docs/references/webhooks/webhook-models (signed notifications)"
CURRENT = "3f1c8a2e-6b9d-4e07-a5c3-d8f2b1e0c947"
PREVIOUS = "b72e0d94-1a6c-4f38-9e25-7c0a3d6b8f11"
WRONG = "0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d"
SECRETS = [("k2", CURRENT, "current"), ("k1", PREVIOUS, "previous")]
BODY = (b'{"type":"notification_event","app_id":"q8xp4jy1","data":{"type":"notification_event_data",'
        b'"item":{"type":"conversation","id":"147","title":"Caf\xc3\xa9 order"}},"links":{},'
        b'"id":"notif_ccd8a4d2-3a66-4d9e-a9a3-5a1f0c1b2e3f","topic":"conversation.user.created",'
        b'"delivery_status":"pending","delivery_attempts":1,"delivered_at":0,'
        b'"first_sent_at":1764479990,"created_at":1764479989,"self":null}')
EVENT_ID = "notif_ccd8a4d2-3a66-4d9e-a9a3-5a1f0c1b2e3f"


def sign(secret, body=BODY):
    return "sha1=" + hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()


def main():
    sha256 = "sha256=" + hmac.new(CURRENT.encode(), BODY, hashlib.sha256).hexdigest()
    cases = [
        ("valid", {"X-Hub-Signature": sign(CURRENT)}, BODY, ok(EVENT_ID)),
        ("previous_secret", {"X-Hub-Signature": sign(PREVIOUS)}, BODY, ok(EVENT_ID)),
        ("body_changed_one_byte", {"X-Hub-Signature": sign(CURRENT)}, flip(BODY), fail("BAD_SIGNATURE")),
        ("wrong_secret", {"X-Hub-Signature": sign(WRONG)}, BODY, fail("BAD_SIGNATURE")),
        ("no_signature", {"X-Hub-Signature-256": sha256}, BODY, fail("MISSING_SIGNATURE")),
        ("sha256_digest", {"X-Hub-Signature": sha256}, BODY, fail("INVALID_SIGNATURE_FORMAT")),
        ("no_prefix", {"X-Hub-Signature": sign(CURRENT)[5:]}, BODY, fail("INVALID_SIGNATURE_FORMAT")),
    ]
    write("intercom", "make_intercom.py", [vector("intercom", n, SOURCE, SECRETS, h, b, e) for n, h, b, e in cases])


if __name__ == "__main__":
    main()

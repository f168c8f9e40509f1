"""Meta (WhatsApp, Instagram) vectors, signed as Meta's Webhooks guide documents
("Validating payloads"): X-Hub-Signature-256 is `sha256=` and the hex HMAC-SHA256
of the raw payload keyed with the app secret. Meta publishes no library that
signs or checks it, so the standard library makes the HMAC."""

import hashlib
import hmac

from hmac_vectors import fail, flip, ok, vector, write

SOURCE = "python hmac stdlib per https://developers.facebook.com/docs/graph-api/webhooks/getting-started#validate-payloads"
CURRENT = "4f6c2a9d1e8b7350c2d9a1f0e6b3c874"
PREVIOUS = "a81d3f5b9c0e2746d8b1f3a5c7e90d2b"
WRONG = "0d2b8e6f4a1c3957b2e0d4f6a8c1e357"
SECRETS = [("k2", CURRENT, "current"), ("k1", PREVIOUS, "previous")]
# Meta escapes non-ASCII characters in the payload it signs (\u00e9, \/).
BODY = (b'{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":'
        b'[{"field":"messages","value":{"messaging_product":"whatsapp","messages":[{"from":'
        b'"16315551181","id":"wamid.ABGGFlA5Fpa","timestamp":"1764479990","text":{"body":'
        b'"caf\\u00e9 \\/ ok"},"type":"text"}]}}]}]}')


def sign(secret, body=BODY):
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def sha1(secret, body=BODY):
    return "sha1=" + hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()


def main():
    cases = [
        ("valid", {"X-Hub-Signature-256": sign(CURRENT), "X-Hub-Signature": sha1(CURRENT)}, BODY, ok()),
        ("previous_secret", {"X-Hub-Signature-256": sign(PREVIOUS)}, BODY, ok()),
        ("lowercase_header_name", {"x-hub-signature-256": sign(CURRENT)}, BODY, ok()),
        ("body_changed_one_byte", {"X-Hub-Signature-256": sign(CURRENT)}, flip(BODY), fail("BAD_SIGNATURE")),
        ("wrong_secret", {"X-Hub-Signature-256": sign(WRONG)}, BODY, fail("BAD_SIGNATURE")),
        ("only_sha1_header", {"X-Hub-Signature": sha1(CURRENT)}, BODY, fail("MISSING_SIGNATURE")),
        ("no_prefix", {"X-Hub-Signature-256": sign(CURRENT)[7:]}, BODY, fail("INVALID_SIGNATURE_FORMAT")),
        ("sha1_digest_in_sha256_header", {"X-Hub-Signature-256": "sha256=" + sha1(CURRENT)[5:]}, BODY,
         fail("INVALID_SIGNATURE_FORMAT")),
    ]
    write("meta", "make_meta.py", [vector("meta", n, SOURCE, SECRETS, h, b, e) for n, h, b, e in cases])


if __name__ == "__main__":
    main()

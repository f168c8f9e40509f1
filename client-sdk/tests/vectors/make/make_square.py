"""Square vectors: x-square-hmacsha256-signature is the base64 HMAC-SHA256 of the
notification URL followed by the raw body, keyed with the subscription's
signature key. squareup only verifies (square.utils.webhooks_helper
.verify_signature), so the standard library signs as Square's docs describe and
the SDK's check must accept the valid vectors and refuse the bad ones."""

import base64
import hashlib
import hmac
from importlib.metadata import version

from square.utils.webhooks_helper import verify_signature

from hmac_vectors import fail, flip, ok, vector, write

SOURCE = ("python hmac stdlib per https://developer.squareup.com/docs/webhooks/step3validate; "
          f"checked with squareup {version('squareup')} verify_signature")
CURRENT = "Tb7pX2kQ9rW4sV1nM6zY8a"
PREVIOUS = "Hc3dF5gJ7kL9mN1pQ3rS5t"
WRONG = "Zz0Yy9Xx8Ww7Vv6Uu5Tt4s"
SECRETS = [("k2", CURRENT, "current"), ("k1", PREVIOUS, "previous")]
URL = "https://hooks.example.com/hooks/acme?source=square&v=2"
BODY = (b'{"merchant_id":"6SSW7HV8K2ST5","type":"payment.updated",'
        b'"event_id":"13b867cf-db3d-4b1c-90b6-2f32a9d78124","created_at":"2025-11-30T05:19:58.093Z",'
        b'"data":{"type":"payment","id":"KkAkhdMsgzn59SM8A89WgKwekxLZY","object":{"payment":'
        b'{"id":"KkAkhdMsgzn59SM8A89WgKwekxLZY","amount_money":{"amount":4200,"currency":"EUR"},'
        b'"note":"caf\xc3\xa9","status":"COMPLETED"}}}}')
EVENT_ID = "13b867cf-db3d-4b1c-90b6-2f32a9d78124"


def sign(secret, url=URL, body=BODY):
    digest = hmac.new(secret.encode(), url.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def library_accepts(hdrs, body, url):
    signature = hdrs.get("x-square-hmacsha256-signature", "")
    return any(
        verify_signature(request_body=body.decode("utf-8"), signature_header=signature,
                         signature_key=key, notification_url=url)
        for key in (CURRENT, PREVIOUS)
    )


def main():
    header = "x-square-hmacsha256-signature"
    hex_digest = hmac.new(CURRENT.encode(), URL.encode() + BODY, hashlib.sha256).hexdigest()
    legacy = base64.b64encode(hmac.new(CURRENT.encode(), URL.encode() + BODY, hashlib.sha1).digest()).decode()
    cases = [
        ("valid", {header: sign(CURRENT)}, BODY, URL, ok(EVENT_ID)),
        ("previous_secret", {header: sign(PREVIOUS)}, BODY, URL, ok(EVENT_ID)),
        ("body_changed_one_byte", {header: sign(CURRENT)}, flip(BODY), URL, fail("BAD_SIGNATURE")),
        ("wrong_secret", {header: sign(WRONG)}, BODY, URL, fail("BAD_SIGNATURE")),
        ("url_query_differs", {header: sign(CURRENT)}, BODY, URL.replace("v=2", "v=3"), fail("BAD_SIGNATURE")),
        ("signed_without_the_url", {header: sign(CURRENT, url="")}, BODY, URL, fail("BAD_SIGNATURE")),
        ("only_legacy_sha1_header", {"x-square-signature": legacy}, BODY, URL, fail("MISSING_SIGNATURE")),
        ("hex_digest", {header: hex_digest}, BODY, URL, fail("INVALID_SIGNATURE_FORMAT")),
    ]
    vectors = []
    for name, hdrs, body, url, expect in cases:
        assert library_accepts(hdrs, body, url) == expect["ok"], name
        vectors.append(vector("square", name, SOURCE, SECRETS, hdrs, body, expect, url=url))
    write("square", "make_square.py", vectors)


if __name__ == "__main__":
    main()

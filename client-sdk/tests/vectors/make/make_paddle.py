"""Paddle Billing vectors, signed with paddle-python-sdk's own
PaddleSignature.calculate_hmac over `ts:body` and checked with its Verifier at
the fixed clock (the SDK only verifies; the header is assembled as Paddle sends it)."""

import sys
from importlib.metadata import version
from unittest import mock

from paddle_billing.Notifications import Secret, Verifier
from paddle_billing.Notifications.PaddleSignature import PaddleSignature

from hmac_vectors import NOW, TOLERANCE, fail, flip, ok, vector, write

SOURCE = f"paddle-python-sdk {version('paddle-python-sdk')} PaddleSignature.calculate_hmac"
CURRENT = "pdl_ntfset_01jdq7n3w0k5d8m2r6t9v4x1yz_Kq3sW8nVb2XeR5tY7uI9oP1aS4dF6gH0"
PREVIOUS = "pdl_ntfset_01jbx2c5e8h1k4n7q0s3u6w9yz_Zx9cV7bN5mQ3wE1rT8yU6iO4pA2sD0f"
WRONG = "pdl_ntfset_01j0000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
SECRETS = [("k2", CURRENT, "current"), ("k1", PREVIOUS, "previous")]
BODY = (b'{"event_id":"evt_01jdq8a2b3c4d5e6f7g8h9j0k1","event_type":"transaction.completed",'
        b'"occurred_at":"2025-11-30T05:19:58.123456Z","notification_id":"ntf_01jdq8a2m4n5p6q7r8s9t0v1w2",'
        b'"data":{"id":"txn_01jdq7zz","status":"completed","currency_code":"EUR",'
        b'"details":{"totals":{"total":"4200"}},"custom_data":{"note":"caf\xc3\xa9"}}}')
EVENT_ID = "evt_01jdq8a2b3c4d5e6f7g8h9j0k1"


def h1(secret, timestamp=NOW, body=BODY):
    return PaddleSignature.calculate_hmac(secret, f"{timestamp}:".encode() + body).hexdigest()


def header(*secrets, timestamp=NOW, body=BODY):
    return {"Paddle-Signature": f"ts={timestamp};" + ";".join(f"h1={h1(s, timestamp, body)}" for s in secrets)}


class Request:
    def __init__(self, headers, body):
        self.headers = headers
        self.body = body


def library_accepts(hdrs, body):
    # The package re-exports the class under its module's name.
    verifier_module = sys.modules["paddle_billing.Notifications.Verifier"]
    with mock.patch.object(verifier_module, "time", return_value=NOW):
        try:
            return Verifier(maximum_variance=TOLERANCE).verify(
                Request(hdrs, body), [Secret(CURRENT), Secret(PREVIOUS)]
            )
        except (ConnectionRefusedError, ValueError):
            return False


def main():
    cases = [
        ("valid", header(CURRENT), BODY, ok(EVENT_ID)),
        ("previous_secret", header(PREVIOUS), BODY, ok(EVENT_ID)),
        ("rotation_both_h1", header(PREVIOUS, CURRENT), BODY, ok(EVENT_ID)),
        ("body_changed_one_byte", header(CURRENT), flip(BODY), fail("BAD_SIGNATURE")),
        ("wrong_secret", header(WRONG), BODY, fail("BAD_SIGNATURE")),
        ("stale_timestamp", header(CURRENT, timestamp=NOW - 301), BODY, fail("STALE_TIMESTAMP")),
        ("future_timestamp", header(CURRENT, timestamp=NOW + 301), BODY, fail("FUTURE_TIMESTAMP")),
        ("no_signature", {"Paddle-Signatures": header(CURRENT)["Paddle-Signature"]}, BODY,
         fail("MISSING_SIGNATURE")),
        ("no_h1", {"Paddle-Signature": f"ts={NOW}"}, BODY, fail("INVALID_SIGNATURE_FORMAT")),
        ("timestamp_not_integer", {"Paddle-Signature": f"ts={NOW}x;h1={h1(CURRENT)}"}, BODY,
         fail("INVALID_TIMESTAMP")),
    ]
    vectors = []
    for name, hdrs, body, expect in cases:
        assert library_accepts(hdrs, body) == expect["ok"], name
        vectors.append(vector("paddle", name, SOURCE, SECRETS, hdrs, body, expect))
    write("paddle", "make_paddle.py", vectors)


if __name__ == "__main__":
    main()

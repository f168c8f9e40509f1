"""Svix vectors, signed by the `svix` package's Webhook.sign and checked with
its Webhook.verify at the fixed clock."""

from datetime import datetime, timezone
from unittest import mock

import standardwebhooks.webhooks
import svix
from svix.webhooks import Webhook, WebhookVerificationError

from hmac_vectors import NOW, fail, flip, ok, vector, write

SOURCE = f"svix {svix.__version__} Webhook.sign"
CURRENT = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
PREVIOUS = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
WRONG = "whsec_plJ3nmyCDGBKInavdOK15jsl6lXVn0Ta"
SECRETS = [("k2", CURRENT, "current"), ("k1", PREVIOUS, "previous")]
BODY = b'{"type":"invoice.paid","data":{"id":"inv_7","amount":4200,"note":"caf\xc3\xa9"}}'
MSG_ID = "msg_2Lh9KqWc4Fz"


def headers(secret, timestamp=NOW, msg_id=MSG_ID, body=BODY):
    when = datetime.fromtimestamp(timestamp, tz=timezone.utc)
    signature = Webhook(secret).sign(msg_id, when, body.decode())
    return {"svix-id": msg_id, "svix-timestamp": str(timestamp), "svix-signature": signature}


class FixedClock(datetime):
    """`datetime` whose now() is the vectors' clock."""

    @classmethod
    def now(cls, tz=None):
        return datetime.fromtimestamp(NOW, tz=tz)


def library_accepts(hdrs, body):
    with mock.patch.object(standardwebhooks.webhooks, "datetime", FixedClock):
        try:
            Webhook(CURRENT).verify(body, hdrs)
            return True
        except (WebhookVerificationError, ValueError):
            pass
        try:
            Webhook(PREVIOUS).verify(body, hdrs)
            return True
        except (WebhookVerificationError, ValueError):
            return False


def main():
    both = headers(CURRENT)
    both["svix-signature"] = headers(PREVIOUS)["svix-signature"] + " " + both["svix-signature"]
    cases = [
        ("valid", headers(CURRENT), BODY, ok(MSG_ID)),
        ("previous_secret", headers(PREVIOUS), BODY, ok(MSG_ID)),
        ("both_secrets_listed", both, BODY, ok(MSG_ID)),
        ("body_changed_one_byte", headers(CURRENT), flip(BODY), fail("BAD_SIGNATURE")),
        ("wrong_secret", headers(WRONG), BODY, fail("BAD_SIGNATURE")),
        ("stale_timestamp", headers(CURRENT, NOW - 301), BODY, fail("STALE_TIMESTAMP")),
        ("future_timestamp", headers(CURRENT, NOW + 301), BODY, fail("FUTURE_TIMESTAMP")),
        ("webhook_names_only", {k.replace("svix-", "webhook-"): v for k, v in headers(CURRENT).items()},
         BODY, fail("MISSING_SIGNATURE")),
        ("no_version", {**headers(CURRENT), "svix-signature": headers(CURRENT)["svix-signature"][3:]},
         BODY, fail("INVALID_SIGNATURE_FORMAT")),
        ("timestamp_not_integer", {**headers(CURRENT), "svix-timestamp": "1764480000.5"}, BODY,
         fail("INVALID_TIMESTAMP")),
    ]
    # The library falls back to webhook-* names and reads a fractional timestamp;
    # hookd refuses both.
    stricter = {"webhook_names_only", "timestamp_not_integer"}
    vectors = []
    for name, hdrs, body, expect in cases:
        if name not in stricter:
            assert library_accepts(hdrs, body) == expect["ok"], name
        vectors.append(vector("svix", name, SOURCE, SECRETS, hdrs, body, expect))
    write("svix", "make_svix.py", vectors)


if __name__ == "__main__":
    main()

"""Mailgun webhooks: the signature travels inside the body. JSON webhooks carry
{"signature": {"timestamp", "token", "signature"}, "event-data": {...}}; the
older form-encoded webhooks carry timestamp, token and signature fields. The
signature is the hex HMAC-SHA256, under the webhook signing key, of the
timestamp followed by the token; the event data is not covered. Mailgun
publishes no library for this, so the script signs and checks with the code of
Mailgun's documentation ("Securing webhooks")."""

import base64
import hashlib
import hmac
import json
from urllib.parse import parse_qsl, urlencode

from vectorfile import NOW, TOLERANCE, ok, one_byte_changed, refused, secrets, vector, write

SOURCE = "https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks"
CURRENT = "key-7e55d8a3c1f04b92a6de0b7f3c21e9a4"
PREVIOUS = "key-0f9c2b6a8d4e41f7b3a5c6d7e8f90a1b"
KEYS = secrets(CURRENT, PREVIOUS)
EVENT_ID = "CPgfbmQMTCKtHW6uIWtuVe"


def mailgun_signature(signing_key, timestamp, token):
    """The documented signing: hex HMAC-SHA256 of timestamp + token."""
    return hmac.new(
        key=signing_key.encode(),
        msg=f"{timestamp}{token}".encode(),
        digestmod=hashlib.sha256,
    ).hexdigest()


def verify(signing_key, token, timestamp, signature):
    """Mailgun's documented verify function."""
    hmac_digest = mailgun_signature(signing_key, timestamp, token)
    return hmac.compare_digest(str(signature), str(hmac_digest))


def token_for(n):
    return hashlib.sha256(f"mailgun-token-{n}".encode()).hexdigest()[:50]


EVENT_DATA = {
    "event": "delivered",
    "id": EVENT_ID,
    "timestamp": NOW - 3.5,
    "recipient": "alice@example.com",
    "log-level": "info",
    "message": {
        "headers": {
            "message-id": "20130503182626.18666.16540@example.com",
            "from": "Bob <bob@example.com>",
            "to": "Alice <alice@example.com>",
            "subject": "Test delivered webhook",
        },
        "size": 111,
    },
    "delivery-status": {"code": 250, "message": "OK", "attempt-no": 1},
    "tags": ["my_tag_1", "my_tag_2"],
}


def json_body(key, timestamp, token=None, signature=None):
    token = token or token_for(timestamp)
    signed = {
        "timestamp": str(timestamp),
        "token": token,
        "signature": signature or mailgun_signature(key, timestamp, token),
    }
    return json.dumps({"signature": signed, "event-data": EVENT_DATA}, separators=(",", ":")).encode()


def form_body(key, timestamp, drop=None):
    token = token_for(f"form-{timestamp}")
    fields = [
        ("Message-Id", "<20130503182626.18666.16540@example.com>"),
        ("X-Mailgun-Sid", "WyIwNzI5MCIsICJhbGljZUBleGFtcGxlLmNvbSIsICI2Il0="),
        ("domain", "example.com"),
        ("event", "delivered"),
        ("recipient", "alice@example.com"),
        ("timestamp", str(timestamp)),
        ("token", token),
        ("signature", mailgun_signature(key, timestamp, token)),
    ]
    return urlencode([(k, v) for k, v in fields if k != drop]).encode()


JSON_HEADERS = {"Content-Type": "application/json", "User-Agent": "mailgun/treq-16.12.0"}
FORM_HEADERS = {
    "Content-Type": "application/x-www-form-urlencoded",
    "User-Agent": "mailgun/treq-16.12.0",
}


def signature_fields(body):
    """timestamp, token and signature as Mailgun's receivers read them."""
    if body.startswith(b"{"):
        try:
            return json.loads(body)["signature"]
        except (KeyError, ValueError):
            return None
    fields = dict(parse_qsl(body.decode()))
    try:
        return {name: fields[name] for name in ("timestamp", "token", "signature")}
    except KeyError:
        return None


def main():
    valid = json_body(CURRENT, NOW)
    token = json.loads(valid)["signature"]["token"]
    vectors = [
        vector("mailgun", "valid", SOURCE, KEYS, JSON_HEADERS, valid, ok(EVENT_ID)),
        vector(
            "mailgun",
            "valid_previous_secret_in_overlap",
            SOURCE,
            KEYS,
            JSON_HEADERS,
            json_body(PREVIOUS, NOW),
            ok(EVENT_ID),
        ),
        vector(
            "mailgun",
            "valid_at_stale_tolerance_edge",
            SOURCE,
            KEYS,
            JSON_HEADERS,
            json_body(CURRENT, NOW - TOLERANCE),
            ok(EVENT_ID),
        ),
        # The signature covers the timestamp and the token, not the event data.
        vector(
            "mailgun",
            "event_data_changed_by_one_byte_is_not_covered",
            SOURCE,
            KEYS,
            JSON_HEADERS,
            one_byte_changed(valid, b"alice"),
            ok(EVENT_ID),
        ),
        vector(
            "mailgun",
            "token_changed_by_one_byte",
            SOURCE,
            KEYS,
            JSON_HEADERS,
            one_byte_changed(valid, token.encode()),
            refused("BAD_SIGNATURE"),
        ),
        vector(
            "mailgun",
            "wrong_secret",
            SOURCE,
            KEYS,
            JSON_HEADERS,
            json_body("key-00000000000000000000000000000000", NOW),
            refused("BAD_SIGNATURE"),
        ),
        vector(
            "mailgun",
            "stale_timestamp",
            SOURCE,
            KEYS,
            JSON_HEADERS,
            json_body(CURRENT, NOW - TOLERANCE - 1),
            refused("STALE_TIMESTAMP"),
        ),
        vector(
            "mailgun",
            "future_timestamp",
            SOURCE,
            KEYS,
            JSON_HEADERS,
            json_body(CURRENT, NOW + TOLERANCE + 1),
            refused("FUTURE_TIMESTAMP"),
        ),
        vector(
            "mailgun",
            "missing_signature",
            SOURCE,
            KEYS,
            JSON_HEADERS,
            json.dumps({"event-data": EVENT_DATA}, separators=(",", ":")).encode(),
            refused("MISSING_SIGNATURE"),
        ),
        vector(
            "mailgun",
            "signature_not_hex",
            SOURCE,
            KEYS,
            JSON_HEADERS,
            json_body(CURRENT, NOW, signature="z" * 64),
            refused("INVALID_SIGNATURE_FORMAT"),
        ),
        vector(
            "mailgun",
            "timestamp_not_an_integer",
            SOURCE,
            KEYS,
            JSON_HEADERS,
            json_body(CURRENT, f"{NOW}.5"),
            refused("INVALID_TIMESTAMP"),
        ),
        vector("mailgun", "form_valid", SOURCE, KEYS, FORM_HEADERS, form_body(CURRENT, NOW), ok(None)),
        vector(
            "mailgun",
            "form_valid_previous_secret_in_overlap",
            SOURCE,
            KEYS,
            FORM_HEADERS,
            form_body(PREVIOUS, NOW),
            ok(None),
        ),
        vector(
            "mailgun",
            "form_wrong_secret",
            SOURCE,
            KEYS,
            FORM_HEADERS,
            form_body("key-00000000000000000000000000000000", NOW),
            refused("BAD_SIGNATURE"),
        ),
        vector(
            "mailgun",
            "form_stale_timestamp",
            SOURCE,
            KEYS,
            FORM_HEADERS,
            form_body(CURRENT, NOW - TOLERANCE - 1),
            refused("STALE_TIMESTAMP"),
        ),
        vector(
            "mailgun",
            "form_missing_token",
            SOURCE,
            KEYS,
            FORM_HEADERS,
            form_body(CURRENT, NOW, drop="token"),
            refused("MISSING_SIGNATURE"),
        ),
    ]
    live = [k["secret"] for k in KEYS]
    # Genuine signatures hookd refuses for their timestamp: out of tolerance, or
    # not a plain integer (Mailgun's sample check does not read the timestamp).
    clock_codes = {"STALE_TIMESTAMP", "FUTURE_TIMESTAMP", "INVALID_TIMESTAMP"}
    for v in vectors:
        fields = signature_fields(base64.b64decode(v["body_b64"]))
        accepted = fields is not None and any(
            verify(key, fields["token"], fields["timestamp"], fields["signature"]) for key in live
        )
        signed_ok = v["expect"]["ok"] or v["expect"].get("code") in clock_codes
        assert accepted == signed_ok, v["name"]
    write("mailgun", "make_mailgun.py", vectors)


if __name__ == "__main__":
    main()

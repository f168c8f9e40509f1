"""Twilio webhooks: X-Twilio-Signature, the base64 HMAC-SHA1 under the auth token
of the full URL Twilio called followed by each form parameter's name and value,
sorted by name; for JSON bodies Twilio adds bodySHA256=<hex SHA-256 of the body>
to the URL and signs the URL alone. With X-Twilio-Webhooks-Signature-Settings
naming algorithm=HMAC_SHA256 the HMAC is SHA-256. Signatures are made with the
twilio library's RequestValidator.compute_signature and every vector is checked
with RequestValidator.validate, which also tries the URL with and without its
port."""

import base64
import hashlib
import json
from urllib.parse import parse_qsl, urlencode

import twilio
from twilio.request_validator import RequestValidator

from vectorfile import ok, one_byte_changed, refused, secrets, vector, write

SOURCE = f"twilio {twilio.__version__} RequestValidator"
CURRENT = "12345f0c6d9a4e8b9a1b2c3d4e5f6a7b"
PREVIOUS = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
KEYS = secrets(CURRENT, PREVIOUS)
URL = "https://hooks.example.com/hooks/acme?source=sms"
IDEMPOTENCY = "I-Twilio-Idempotency-Token"
EVENT_ID = "8a4b2c1d-0e9f-4a3b-8c7d-6e5f4a3b2c1d"

PARAMS = [
    ("ToCountry", "US"),
    ("SmsMessageSid", "SM6f3a1b2c4d5e6f708192a3b4c5d6e7f8"),
    ("NumMedia", "0"),
    ("Body", "Hello from hookd, 10% off & more?"),
    ("From", "+14155550100"),
    ("To", "+14155550199"),
    ("AccountSid", "AC0123456789abcdef0123456789abcdef"),
    ("MessageSid", "SM6f3a1b2c4d5e6f708192a3b4c5d6e7f8"),
    ("ApiVersion", "2010-04-01"),
]
FORM = urlencode(PARAMS).encode()

JSON_BODY = json.dumps(
    {
        "specversion": "1.0",
        "type": "com.twilio.messaging.message.delivered",
        "source": "/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Messages/SM6f3a.json",
        "id": "EZ6f3a1b2c4d5e6f708192a3b4c5d6e7f8",
        "data": {"messageSid": "SM6f3a1b2c4d5e6f708192a3b4c5d6e7f8", "messageStatus": "delivered"},
    },
    separators=(",", ":"),
).encode()


class MultiDict(dict):
    """Form parameters that may repeat a name, as web frameworks hand them over."""

    def __init__(self, pairs):
        super().__init__()
        for name, value in pairs:
            self.setdefault(name, []).append(value)

    def getall(self, name):
        return self[name]


def json_url(body, url=URL):
    return f"{url}&bodySHA256={hashlib.sha256(body).hexdigest()}"


def form_headers(token, url, params, algorithm=None):
    sent = {
        "Content-Type": "application/x-www-form-urlencoded",
        "User-Agent": "TwilioProxy/1.1",
        IDEMPOTENCY: EVENT_ID,
        "X-Twilio-Signature": RequestValidator(token).compute_signature(url, MultiDict(params), algorithm),
    }
    if algorithm is not None:
        sent["X-Twilio-Webhooks-Signature-Settings"] = f"key=webhooks_sharedkey_1,algorithm={algorithm}"
    return sent


def json_headers(token, url):
    return {
        "Content-Type": "application/json",
        "User-Agent": "TwilioProxy/1.1",
        IDEMPOTENCY: EVENT_ID,
        "X-Twilio-Signature": RequestValidator(token).compute_signature(url, {}),
    }


def with_port(url):
    return url.replace("https://hooks.example.com/", "https://hooks.example.com:443/")


def main():
    valid = form_headers(CURRENT, URL, PARAMS)
    valid_json = json_headers(CURRENT, json_url(JSON_BODY))
    reordered = urlencode(sorted(PARAMS)).encode()
    repeated = PARAMS + [("MediaUrl", "https://example.com/b.jpg"), ("MediaUrl", "https://example.com/a.jpg")]
    cases = [
        # name, headers, body, the public URL hookd knows, expected
        ("valid", valid, FORM, URL, ok(EVENT_ID)),
        ("valid_previous_secret_in_overlap", form_headers(PREVIOUS, URL, PARAMS), FORM, URL, ok(EVENT_ID)),
        ("signed_with_default_port", form_headers(CURRENT, with_port(URL), PARAMS), FORM, URL, ok(EVENT_ID)),
        (
            "public_url_has_explicit_port",
            form_headers(CURRENT, URL, PARAMS),
            FORM,
            with_port(URL),
            ok(EVENT_ID),
        ),
        ("parameters_in_another_order", valid, reordered, URL, ok(EVENT_ID)),
        (
            "repeated_parameter_names",
            form_headers(CURRENT, URL, repeated),
            urlencode(repeated).encode(),
            URL,
            ok(EVENT_ID),
        ),
        (
            "hmac_sha256_shared_key",
            form_headers(CURRENT, URL, PARAMS, "HMAC_SHA256"),
            FORM,
            URL,
            ok(EVENT_ID),
        ),
        ("body_changed_by_one_byte", valid, one_byte_changed(FORM, b"Hello"), URL, refused("BAD_SIGNATURE")),
        ("url_changed", valid, FORM, URL.replace("sms", "smz"), refused("BAD_SIGNATURE")),
        ("wrong_secret", form_headers("0" * 32, URL, PARAMS), FORM, URL, refused("BAD_SIGNATURE")),
        ("json_valid", valid_json, JSON_BODY, json_url(JSON_BODY), ok(EVENT_ID)),
        (
            "json_valid_previous_secret_in_overlap",
            json_headers(PREVIOUS, json_url(JSON_BODY)),
            JSON_BODY,
            json_url(JSON_BODY),
            ok(EVENT_ID),
        ),
        (
            "json_body_changed_by_one_byte",
            valid_json,
            one_byte_changed(JSON_BODY, b"delivered"),
            json_url(JSON_BODY),
            refused("BAD_SIGNATURE"),
        ),
        (
            "json_wrong_secret",
            json_headers("0" * 32, json_url(JSON_BODY)),
            JSON_BODY,
            json_url(JSON_BODY),
            refused("BAD_SIGNATURE"),
        ),
        (
            "missing_signature",
            {k: v for k, v in valid.items() if k != "X-Twilio-Signature"},
            FORM,
            URL,
            refused("MISSING_SIGNATURE"),
        ),
        (
            "signature_one_byte_short",
            {**valid, "X-Twilio-Signature": base64.b64encode(base64.b64decode(valid["X-Twilio-Signature"])[:-1]).decode()},
            FORM,
            URL,
            refused("INVALID_SIGNATURE_FORMAT"),
        ),
        (
            "sha1_signature_under_sha256_settings",
            {**valid, "X-Twilio-Webhooks-Signature-Settings": "key=webhooks_sharedkey_1,algorithm=HMAC_SHA256"},
            FORM,
            URL,
            refused("INVALID_SIGNATURE_FORMAT"),
        ),
    ]
    vectors = []
    for name, sent, body, url, expect in cases:
        vectors.append(vector("twilio", name, SOURCE, KEYS, sent, body, expect, url=url))
        if "X-Twilio-Signature" not in sent:
            continue
        settings = sent.get("X-Twilio-Webhooks-Signature-Settings")
        algorithm = settings.split("algorithm=")[1] if settings else None
        if "bodySHA256" in url:
            params = body.decode()
        else:
            params = MultiDict(parse_qsl(body.decode(), keep_blank_values=True))
        accepted = any(
            RequestValidator(k["secret"]).validate(url, params, sent["X-Twilio-Signature"], algorithm)
            for k in KEYS
        )
        assert accepted == expect["ok"], name
    write("twilio", "make_twilio.py", vectors)


if __name__ == "__main__":
    main()

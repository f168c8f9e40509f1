"""Okta event hooks: the secret configured on the hook travels as is in the
Authorization header (Okta's documented default; its guides use Basic
credentials, `admin:supersecret`). Nothing is signed. The body is Okta's
documented sample event delivery. Okta publishes no library that signs, so the
script checks each vector with the comparison Okta documents (the header equals
the configured value)."""

import base64
import hmac
import json

from vectorfile import ok, one_byte_changed, refused, secrets, vector, write

SOURCE = "https://developer.okta.com/docs/concepts/event-hooks/#sample-event-delivery-payload"
CURRENT = "Basic " + base64.b64encode(b"admin:supersecret").decode()
PREVIOUS = "Basic " + base64.b64encode(b"admin:oldsecret").decode()
KEYS = secrets(CURRENT, PREVIOUS)
EVENT_ID = "b5a188b9-5ece-4636-b041-482ffda96311"

BODY = json.dumps(
    {
        "eventType": "com.okta.event_hook",
        "eventTypeVersion": "1.0",
        "cloudEventsVersion": "0.1",
        "contentType": "application/json",
        "eventId": EVENT_ID,
        "eventTime": "2019-03-27T16:59:53.032Z",
        "source": "https://example.okta.com/api/v1/eventHooks/whoql0HfiLGPWc8Jx0g3",
        "data": {
            "events": [
                {
                    "version": "0",
                    "severity": "INFO",
                    "actor": {
                        "id": "00u1qw6mqitPHM8AJ0g7",
                        "type": "User",
                        "alternateId": "admin@example.com",
                        "displayName": "Example Admin",
                    },
                    "outcome": {"result": "SUCCESS"},
                    "uuid": "f790999f-fe87-467a-9880-6982a583986c",
                    "published": "2018-03-28T22:23:07.777Z",
                    "eventType": "user.session.start",
                    "displayMessage": "User login to Okta",
                }
            ]
        },
    },
    separators=(",", ":"),
).encode()


def headers(authorization):
    sent = {"Accept": "application/json", "Content-Type": "application/json"}
    if authorization is not None:
        sent["Authorization"] = authorization
    return sent


def okta_accepts(sent, secret):
    """The documented check: the Authorization header is the configured value."""
    value = sent.get("Authorization")
    return value is not None and hmac.compare_digest(value.encode(), secret.encode())


def main():
    wrong = "Basic " + base64.b64encode(b"admin:guessed").decode()
    vectors = [
        vector("okta", "valid", SOURCE, KEYS, headers(CURRENT), BODY, ok(EVENT_ID)),
        vector(
            "okta",
            "valid_previous_secret_in_overlap",
            SOURCE,
            KEYS,
            headers(PREVIOUS),
            BODY,
            ok(EVENT_ID),
        ),
        # The header value does not cover the body.
        vector(
            "okta",
            "body_changed_by_one_byte_is_not_covered",
            SOURCE,
            KEYS,
            headers(CURRENT),
            one_byte_changed(BODY, b"Example Admin"),
            ok(EVENT_ID),
        ),
        vector("okta", "wrong_secret", SOURCE, KEYS, headers(wrong), BODY, refused("BAD_SIGNATURE")),
        vector(
            "okta",
            "scheme_word_missing",
            SOURCE,
            KEYS,
            headers(CURRENT.removeprefix("Basic ")),
            BODY,
            refused("BAD_SIGNATURE"),
        ),
        vector("okta", "missing_authorization", SOURCE, KEYS, headers(None), BODY, refused("MISSING_SIGNATURE")),
        vector("okta", "empty_authorization", SOURCE, KEYS, headers(""), BODY, refused("INVALID_SIGNATURE_FORMAT")),
    ]
    live = [k["secret"] for k in KEYS]
    for v in vectors:
        accepted = any(okta_accepts(v["headers"], secret) for secret in live)
        assert accepted == v["expect"]["ok"], v["name"]
    write("okta", "make_okta.py", vectors)


if __name__ == "__main__":
    main()

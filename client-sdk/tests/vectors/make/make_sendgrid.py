"""SendGrid signed event webhook: X-Twilio-Email-Event-Webhook-Signature, the
base64 DER ECDSA P-256/SHA-256 signature of X-Twilio-Email-Event-Webhook-Timestamp
followed by the raw body. SendGrid's library only verifies, so the script signs
with `cryptography` (deterministic ECDSA, RFC 6979, so the file regenerates byte
for byte) and asserts that sendgrid's EventWebhook helper accepts the valid
vectors and refuses the bad ones. The tenant holds the verification key as
SendGrid shows it: base64 DER SubjectPublicKeyInfo."""

import base64
import json

import cryptography
import sendgrid
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from sendgrid.helpers.eventwebhook import EventWebhook

from vectorfile import NOW, TOLERANCE, ok, one_byte_changed, refused, vector, write

SOURCE = (
    f"sendgrid {sendgrid.__version__} EventWebhook.verify_signature; "
    f"signed with cryptography {cryptography.__version__}"
)
SIGNATURE = "X-Twilio-Email-Event-Webhook-Signature"
TIMESTAMP = "X-Twilio-Email-Event-Webhook-Timestamp"


def private_key(n):
    return ec.derive_private_key(n, ec.SECP256R1())


CURRENT = private_key(0x5E9D6E1D)
PREVIOUS = private_key(0x0A1B2C3D)
STRANGER = private_key(0x7777)


def verification_key(key):
    """The key as SendGrid's settings page shows it."""
    der = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return base64.b64encode(der).decode()


KEYS = [
    {"kid": "k2", "secret": verification_key(CURRENT), "state": "current"},
    {"kid": "k1", "secret": verification_key(PREVIOUS), "state": "previous"},
]
EVENT_ID = "ZGVsaXZlcmVkLTAtMTc2NDQ4MDAwMC1TbUk0U2c"

BODY = (
    json.dumps(
        [
            {
                "email": "example@test.com",
                "timestamp": NOW - 5,
                "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>",
                "event": "delivered",
                "category": "cat facts",
                "sg_event_id": EVENT_ID,
                "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0",
                "response": "250 OK",
            },
            {
                "email": "example@test.com",
                "timestamp": NOW - 2,
                "event": "open",
                "sg_event_id": "b3Blbi0wLTE3NjQ0Nzk5OTgtU21JNFNn",
                "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0",
                "useragent": "Mozilla/4.0 (compatible; MSIE 6.1; Windows XP)",
                "ip": "255.255.255.255",
            },
        ],
        separators=(",", ":"),
    )
    + "\r\n"
).encode()


def sign(key, timestamp, body=BODY):
    signature = key.sign(
        str(timestamp).encode() + body,
        ec.ECDSA(hashes.SHA256(), deterministic_signing=True),
    )
    return {
        "Content-Type": "application/json",
        "User-Agent": "SendGrid Event API",
        SIGNATURE: base64.b64encode(signature).decode(),
        TIMESTAMP: str(timestamp),
    }


def sendgrid_accepts(sent, body, public):
    if SIGNATURE not in sent or TIMESTAMP not in sent:
        return False
    try:
        return EventWebhook(public).verify_signature(
            body.decode(), sent[SIGNATURE], sent[TIMESTAMP]
        )
    except ValueError:
        return False


def main():
    valid = sign(CURRENT, NOW)
    tampered = one_byte_changed(BODY, b"cat facts")
    short = base64.b64encode(base64.b64decode(valid[SIGNATURE])[:-1]).decode()
    vectors = [
        vector("sendgrid", "valid", SOURCE, KEYS, valid, BODY, ok(EVENT_ID)),
        vector(
            "sendgrid",
            "valid_previous_secret_in_overlap",
            SOURCE,
            KEYS,
            sign(PREVIOUS, NOW),
            BODY,
            ok(EVENT_ID),
        ),
        vector(
            "sendgrid",
            "valid_at_future_tolerance_edge",
            SOURCE,
            KEYS,
            sign(CURRENT, NOW + TOLERANCE),
            BODY,
            ok(EVENT_ID),
        ),
        vector("sendgrid", "body_changed_by_one_byte", SOURCE, KEYS, valid, tampered, refused("BAD_SIGNATURE")),
        vector(
            "sendgrid",
            "wrong_secret",
            SOURCE,
            KEYS,
            sign(STRANGER, NOW),
            BODY,
            refused("BAD_SIGNATURE"),
        ),
        vector(
            "sendgrid",
            "stale_timestamp",
            SOURCE,
            KEYS,
            sign(CURRENT, NOW - TOLERANCE - 1),
            BODY,
            refused("STALE_TIMESTAMP"),
        ),
        vector(
            "sendgrid",
            "future_timestamp",
            SOURCE,
            KEYS,
            sign(CURRENT, NOW + TOLERANCE + 1),
            BODY,
            refused("FUTURE_TIMESTAMP"),
        ),
        vector(
            "sendgrid",
            "timestamp_changed",
            SOURCE,
            KEYS,
            {**valid, TIMESTAMP: str(NOW + 1)},
            BODY,
            refused("BAD_SIGNATURE"),
        ),
        vector(
            "sendgrid",
            "missing_signature",
            SOURCE,
            KEYS,
            {k: v for k, v in valid.items() if k != SIGNATURE},
            BODY,
            refused("MISSING_SIGNATURE"),
        ),
        vector(
            "sendgrid",
            "missing_timestamp",
            SOURCE,
            KEYS,
            {k: v for k, v in valid.items() if k != TIMESTAMP},
            BODY,
            refused("MISSING_SIGNATURE"),
        ),
        vector(
            "sendgrid",
            "signature_truncated",
            SOURCE,
            KEYS,
            {**valid, SIGNATURE: short},
            BODY,
            refused("INVALID_SIGNATURE_FORMAT"),
        ),
        vector(
            "sendgrid",
            "timestamp_not_an_integer",
            SOURCE,
            KEYS,
            {**valid, TIMESTAMP: f"{NOW}a"},
            BODY,
            refused("INVALID_TIMESTAMP"),
        ),
    ]
    publics = [k["secret"] for k in KEYS]
    clock_codes = {"STALE_TIMESTAMP", "FUTURE_TIMESTAMP"}
    for v in vectors:
        body = tampered if v["name"] == "body_changed_by_one_byte" else BODY
        accepted = any(sendgrid_accepts(v["headers"], body, public) for public in publics)
        signed_ok = v["expect"]["ok"] or v["expect"].get("code") in clock_codes
        assert accepted == signed_ok, v["name"]
    write("sendgrid", "make_sendgrid.py", vectors)


if __name__ == "__main__":
    main()

"""Discord interactions: X-Signature-Ed25519 (hex) over X-Signature-Timestamp
followed by the raw body, made with PyNaCl's SigningKey and checked with
PyNaCl's VerifyKey as Discord's documentation does. The tenant holds the
application's public key as Discord shows it (hex); the private keys here are
fixed seeds so the file regenerates byte for byte."""

import json

import nacl
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

from vectorfile import NOW, TOLERANCE, ok, one_byte_changed, refused, vector, write

SOURCE = f"PyNaCl {nacl.__version__} SigningKey.sign / VerifyKey.verify"
CURRENT = SigningKey(bytes(range(1, 33)))
PREVIOUS = SigningKey(bytes(range(101, 133)))
STRANGER = SigningKey(bytes(range(201, 233)))


def public_hex(key):
    return key.verify_key.encode().hex()


KEYS = [
    {"kid": "k2", "secret": public_hex(CURRENT), "state": "current"},
    {"kid": "k1", "secret": public_hex(PREVIOUS), "state": "previous"},
]
EVENT_ID = "1300000000000000001"

BODY = json.dumps(
    {
        "app_permissions": "442368",
        "application_id": "1200000000000000000",
        "channel_id": "1100000000000000000",
        "data": {"id": "1250000000000000000", "name": "ping", "type": 1},
        "guild_id": "1000000000000000000",
        "id": EVENT_ID,
        "locale": "en-US",
        "member": {"user": {"id": "900000000000000000", "username": "hookd"}},
        "token": "aW50ZXJhY3Rpb246MTMwMDAwMDAwMDAwMDAwMDAwMTpzZWNyZXQ",
        "type": 2,
        "version": 1,
    },
    separators=(",", ":"),
).encode()


def headers(key, timestamp, body=BODY):
    signature = key.sign(str(timestamp).encode() + body).signature.hex()
    return {
        "Content-Type": "application/json",
        "User-Agent": "Discord-Interactions/1.0 (+https://discord.com)",
        "X-Signature-Ed25519": signature,
        "X-Signature-Timestamp": str(timestamp),
    }


def discord_accepts(sent, body, public):
    """Discord's documented check, with PyNaCl."""
    try:
        VerifyKey(bytes.fromhex(public)).verify(
            sent["X-Signature-Timestamp"].encode() + body,
            bytes.fromhex(sent["X-Signature-Ed25519"]),
        )
        return True
    except (BadSignatureError, KeyError, ValueError):
        return False


def main():
    valid = headers(CURRENT, NOW)
    tampered = one_byte_changed(BODY, b"hookd")
    vectors = [
        vector("discord", "valid", SOURCE, KEYS, valid, BODY, ok(EVENT_ID)),
        vector(
            "discord",
            "valid_previous_secret_in_overlap",
            SOURCE,
            KEYS,
            headers(PREVIOUS, NOW),
            BODY,
            ok(EVENT_ID),
        ),
        vector(
            "discord",
            "valid_at_tolerance_edge",
            SOURCE,
            KEYS,
            headers(CURRENT, NOW - TOLERANCE),
            BODY,
            ok(EVENT_ID),
        ),
        vector("discord", "body_changed_by_one_byte", SOURCE, KEYS, valid, tampered, refused("BAD_SIGNATURE")),
        vector(
            "discord",
            "wrong_secret",
            SOURCE,
            KEYS,
            headers(STRANGER, NOW),
            BODY,
            refused("BAD_SIGNATURE"),
        ),
        vector(
            "discord",
            "stale_timestamp",
            SOURCE,
            KEYS,
            headers(CURRENT, NOW - TOLERANCE - 1),
            BODY,
            refused("STALE_TIMESTAMP"),
        ),
        vector(
            "discord",
            "future_timestamp",
            SOURCE,
            KEYS,
            headers(CURRENT, NOW + TOLERANCE + 1),
            BODY,
            refused("FUTURE_TIMESTAMP"),
        ),
        vector(
            "discord",
            "timestamp_changed",
            SOURCE,
            KEYS,
            {**valid, "X-Signature-Timestamp": str(NOW - 1)},
            BODY,
            refused("BAD_SIGNATURE"),
        ),
        vector(
            "discord",
            "missing_signature",
            SOURCE,
            KEYS,
            {k: v for k, v in valid.items() if k != "X-Signature-Ed25519"},
            BODY,
            refused("MISSING_SIGNATURE"),
        ),
        vector(
            "discord",
            "missing_timestamp",
            SOURCE,
            KEYS,
            {k: v for k, v in valid.items() if k != "X-Signature-Timestamp"},
            BODY,
            refused("MISSING_SIGNATURE"),
        ),
        vector(
            "discord",
            "signature_one_byte_short",
            SOURCE,
            KEYS,
            {**valid, "X-Signature-Ed25519": valid["X-Signature-Ed25519"][:-2]},
            BODY,
            refused("INVALID_SIGNATURE_FORMAT"),
        ),
        vector(
            "discord",
            "timestamp_not_an_integer",
            SOURCE,
            KEYS,
            {**valid, "X-Signature-Timestamp": f"{NOW}.5"},
            BODY,
            refused("INVALID_TIMESTAMP"),
        ),
    ]
    publics = [k["secret"] for k in KEYS]
    clock_codes = {"STALE_TIMESTAMP", "FUTURE_TIMESTAMP"}
    for v in vectors:
        body = tampered if v["name"] == "body_changed_by_one_byte" else BODY
        accepted = any(discord_accepts(v["headers"], body, public) for public in publics)
        signed_ok = v["expect"]["ok"] or v["expect"].get("code") in clock_codes
        assert accepted == signed_ok, v["name"]
    write("discord", "make_discord.py", vectors)


if __name__ == "__main__":
    main()

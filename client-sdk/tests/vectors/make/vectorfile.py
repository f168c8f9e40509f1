"""What every make_<scheme>.py shares: the harness clock, the secrets' shape and
the writer of providers/<scheme>.json, so each file regenerates byte for byte."""

import base64
import json
import pathlib

# The black-box harness clock and the tenants' tolerance.
NOW = 1764480000
TOLERANCE = 300

OUT = pathlib.Path(__file__).resolve().parent.parent / "providers"


def secrets(current, previous):
    """A current and a previous secret, as the tenant holds them during a rotation."""
    return [
        {"kid": "k2", "secret": current, "state": "current"},
        {"kid": "k1", "secret": previous, "state": "previous"},
    ]


def ok(event_id):
    return {"ok": True, "event_id": event_id}


def refused(code):
    return {"ok": False, "code": code}


def vector(scheme, name, source, keys, headers, body, expect, method=None, url=None):
    """One vector in the shape of signatures.json (see ../README.md)."""
    entry = {
        "scheme": scheme,
        "name": name,
        "source": source,
        "secrets": keys,
        "tolerance_s": TOLERANCE,
        "now": NOW,
        "headers": headers,
        "body_b64": base64.b64encode(body).decode(),
    }
    if method is not None:
        entry["method"] = method
    if url is not None:
        entry["url"] = url
    entry["expect"] = expect
    return entry


def one_byte_changed(body, needle):
    """`body` with the first byte of `needle` changed, so exactly one byte differs."""
    at = body.index(needle)
    return body[:at] + bytes([body[at] ^ 0x01]) + body[at + 1 :]


def write(scheme, script, vectors):
    OUT.mkdir(exist_ok=True)
    text = json.dumps(
        {"generated_by": f"tests/vectors/make/{script}", "vectors": vectors},
        indent=1,
        ensure_ascii=False,
    )
    (OUT / f"{scheme}.json").write_text(text + "\n", encoding="utf-8")

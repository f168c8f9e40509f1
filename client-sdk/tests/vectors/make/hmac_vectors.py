"""Shared pieces of the provider vector scripts: the fixed clock, the vector
shape of ../README.md and the writer, so every file regenerates byte for byte."""

import base64
import json
import pathlib

NOW = 1764480000
TOLERANCE = 300
HERE = pathlib.Path(__file__).resolve().parent


def ok(event_id=None):
    """A delivery the tenant accepts; `event_id` is the id hookd keys it by."""
    expect = {"ok": True}
    if event_id is not None:
        expect["event_id"] = event_id
    return expect


def fail(code):
    """A delivery refused with `code` from docs/error-codes.md."""
    return {"ok": False, "code": code}


def flip(body: bytes) -> bytes:
    """`body` with its last byte changed by one bit."""
    return body[:-1] + bytes([body[-1] ^ 1])


def vector(scheme, name, source, secrets, headers, body, expect, method=None, url=None):
    """One vector; `secrets` is a list of (kid, secret, state)."""
    out = {
        "scheme": scheme,
        "name": name,
        "source": source,
        "secrets": [{"kid": k, "secret": s, "state": st} for k, s, st in secrets],
        "tolerance_s": TOLERANCE,
        "now": NOW,
        "headers": headers,
        "body_b64": base64.b64encode(body).decode(),
    }
    if method is not None:
        out["method"] = method
    if url is not None:
        out["url"] = url
    out["expect"] = expect
    return out


def write(scheme, script, vectors):
    """Writes ../providers/<scheme>.json."""
    path = HERE.parent / "providers" / f"{scheme}.json"
    text = json.dumps({"generated_by": f"make/{script}", "vectors": vectors}, indent=1, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {len(vectors)} vectors to {path.name}")

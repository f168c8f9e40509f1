#!/usr/bin/env python3
"""Writes the `scheme = "hmac"` vectors: deliveries from two providers that no
preset covers, each verified by configuration alone.

- mailgun.json: Mailgun signs inside the JSON body, HMAC-SHA256 (hex) of
  timestamp + token, with the snippet from Mailgun's documentation
  (https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks):
      hmac.new(key, timestamp + token, hashlib.sha256).hexdigest()
- gitlab_token.json: GitLab sends the secret token itself in X-Gitlab-Token
  (https://docs.gitlab.com/user/project/integrations/webhooks/#create-a-webhook).

Standard library only, fixed clock and inputs: rerunning it rewrites both
files byte for byte.  Run from anywhere: python3 make_hmac.py
"""

import base64
import hashlib
import hmac
import json
import os

NOW = 1764480000
TOLERANCE = 300
HERE = os.path.dirname(os.path.abspath(__file__))

MAILGUN_SOURCE = (
    "Mailgun documentation, securing webhooks: "
    "hmac.new(key, timestamp+token, sha256).hexdigest() "
    "(https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks)"
)
MAILGUN_SPEC = {
    "signature": "/signature/signature",
    "algorithm": "sha256",
    "encoding": "hex",
    "signed": "{/signature/timestamp}{/signature/token}",
    "timestamp": "/signature/timestamp",
}
MAILGUN_SECRETS = [
    {"kid": "k2", "secret": "key-3ax6xnjp29jd6fds4gc373sgvjxteol0", "state": "current"},
    {"kid": "k1", "secret": "key-0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e", "state": "previous"},
]
WRONG_KEY = "key-ffffffffffffffffffffffffffffffff"


def mailgun_sign(key, timestamp, token):
    """Mailgun's documented computation."""
    return hmac.new(
        key=key.encode(), msg=(timestamp + token).encode(), digestmod=hashlib.sha256
    ).hexdigest()


def mailgun_verify(key, token, timestamp, signature):
    """Mailgun's documented verification, to check every vector against."""
    digest = mailgun_sign(key, timestamp, token)
    return hmac.compare_digest(str(signature), str(digest))


def mailgun_body(key, timestamp, token, sign_token=None):
    signature = mailgun_sign(key, str(timestamp), sign_token or token)
    body = {
        "signature": {"token": token, "timestamp": str(timestamp), "signature": signature},
        "event-data": {
            "event": "delivered",
            "id": "CPgfbmQMTCKtHW6uIWtuVe",
            "timestamp": 1764479990.123456,
            "recipient": "alice@example.com",
        },
    }
    return json.dumps(body, separators=(",", ":")).encode()


def vector(name, source, spec, secrets, body, expect, headers=None, event_id_field=None):
    v = {
        "scheme": "hmac",
        "name": name,
        "source": source,
        "hmac": spec,
        "secrets": secrets,
        "tolerance_s": TOLERANCE,
        "now": NOW,
        "headers": headers or {"content-type": "application/json"},
        "body_b64": base64.b64encode(body).decode(),
        "expect": expect,
    }
    if event_id_field:
        v["event_id_field"] = event_id_field
    return v


def mailgun():
    token = "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0"
    current, previous = MAILGUN_SECRETS[0]["secret"], MAILGUN_SECRETS[1]["secret"]
    ok = {"ok": True, "event_id": "CPgfbmQMTCKtHW6uIWtuVe"}
    cases = [
        ("valid", mailgun_body(current, NOW, token), ok),
        ("valid_previous_secret_in_overlap", mailgun_body(previous, NOW, token), ok),
        (
            "token_changed_one_byte",
            mailgun_body(current, NOW, token[:-1] + "1", sign_token=token),
            {"ok": False, "code": "BAD_SIGNATURE"},
        ),
        ("wrong_secret", mailgun_body(WRONG_KEY, NOW, token), {"ok": False, "code": "BAD_SIGNATURE"}),
        (
            "stale_timestamp",
            mailgun_body(current, NOW - TOLERANCE - 1, token),
            {"ok": False, "code": "STALE_TIMESTAMP"},
        ),
        (
            "future_timestamp",
            mailgun_body(current, NOW + TOLERANCE + 1, token),
            {"ok": False, "code": "FUTURE_TIMESTAMP"},
        ),
    ]
    vectors = []
    for name, body, expect in cases:
        sig = json.loads(body)["signature"]
        accepted = any(
            mailgun_verify(s["secret"], sig["token"], sig["timestamp"], sig["signature"])
            for s in MAILGUN_SECRETS
        )
        assert accepted == (expect["ok"] or expect["code"] != "BAD_SIGNATURE"), name
        vectors.append(
            vector(name, MAILGUN_SOURCE, MAILGUN_SPEC, MAILGUN_SECRETS, body, expect,
                   event_id_field="/event-data/id")
        )
    unsigned = json.loads(mailgun_body(current, NOW, token))
    del unsigned["signature"]["signature"]
    body = json.dumps(unsigned, separators=(",", ":")).encode()
    vectors.append(
        vector("missing_signature", MAILGUN_SOURCE, MAILGUN_SPEC, MAILGUN_SECRETS, body,
               {"ok": False, "code": "MISSING_SIGNATURE"}, event_id_field="/event-data/id")
    )
    return vectors


GITLAB_SOURCE = (
    "GitLab documentation, webhooks: the secret token is sent in X-Gitlab-Token "
    "(https://docs.gitlab.com/user/project/integrations/webhooks/#create-a-webhook)"
)
GITLAB_SPEC = {"signature": "header:X-Gitlab-Token", "mode": "token"}
GITLAB_SECRETS = [
    {"kid": "k2", "secret": "glwh-current-7d1f0c2b9e", "state": "current"},
    {"kid": "k1", "secret": "glwh-previous-3a8e5f60d4", "state": "previous"},
]


def gitlab():
    body = json.dumps(
        {"object_kind": "issue", "event_type": "issue",
         "object_attributes": {"id": 301, "iid": 23, "action": "open"}},
        separators=(",", ":"),
    ).encode()
    headers = lambda token: {
        "content-type": "application/json",
        "X-Gitlab-Event": "Issue Hook",
        **({"X-Gitlab-Token": token} if token is not None else {}),
    }
    ok = {"ok": True, "event_id": "301"}
    cases = [
        ("valid", GITLAB_SECRETS[0]["secret"], ok),
        ("valid_previous_secret_in_overlap", GITLAB_SECRETS[1]["secret"], ok),
        ("token_changed_one_byte", GITLAB_SECRETS[0]["secret"][:-1] + "5",
         {"ok": False, "code": "BAD_SIGNATURE"}),
        ("wrong_secret", "glwh-someone-else", {"ok": False, "code": "BAD_SIGNATURE"}),
        ("missing_token", None, {"ok": False, "code": "MISSING_SIGNATURE"}),
    ]
    return [
        vector(name, GITLAB_SOURCE, GITLAB_SPEC, GITLAB_SECRETS, body, expect,
               headers=headers(token), event_id_field="/object_attributes/id")
        for name, token, expect in cases
    ]


def write(name, vectors):
    path = os.path.join(HERE, name)
    with open(path, "w") as out:
        json.dump({"generated_by": "client-sdk/tests/vectors/hmac/make_hmac.py",
                   "vectors": vectors}, out, indent=1, ensure_ascii=False)
        out.write("\n")


if __name__ == "__main__":
    write("mailgun.json", mailgun())
    write("gitlab_token.json", gitlab())

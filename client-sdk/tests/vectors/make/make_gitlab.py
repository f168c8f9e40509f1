"""GitLab webhooks: the secret token travels as is in X-Gitlab-Token; nothing is
signed. Headers and body follow GitLab's documented example delivery (delivery
headers table and the push event payload). GitLab publishes no library that
signs, so the script checks each vector with the comparison GitLab documents
(the header equals the token)."""

import hmac
import json

from vectorfile import ok, one_byte_changed, refused, secrets, vector, write

SOURCE = "https://docs.gitlab.com/user/project/integrations/webhooks/#delivery-headers"
CURRENT = "glwt-current-6c1f0e9d2b7a4c58"
PREVIOUS = "glwt-previous-93ad14e07b2c6f51"
KEYS = secrets(CURRENT, PREVIOUS)

# GitLab's documented push event, trimmed to its top-level shape.
BODY = json.dumps(
    {
        "object_kind": "push",
        "event_name": "push",
        "before": "95790bf891e76fee5e1747ab589903a6a1f80f22",
        "after": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
        "ref": "refs/heads/master",
        "checkout_sha": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7",
        "user_id": 4,
        "user_name": "John Smith",
        "user_username": "jsmith",
        "project_id": 15,
        "project": {
            "id": 15,
            "name": "Diaspora",
            "path_with_namespace": "mike/diaspora",
            "default_branch": "master",
        },
        "commits": [
            {
                "id": "b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327",
                "message": "Update Catalan translation to e38cb41.",
                "timestamp": "2011-12-12T14:27:31+02:00",
            }
        ],
        "total_commits_count": 4,
    },
    separators=(",", ":"),
).encode()

EVENT_UUID = "13792a34-cac6-4fda-95a8-c58e00a3954e"
IDEMPOTENCY_KEY = "f5e5f430-f57b-4e6e-9fac-d9128cd7232f"


def headers(token, idempotency=True):
    sent = {
        "User-Agent": "GitLab/17.6.0",
        "Content-Type": "application/json",
        "X-Gitlab-Event": "Push Hook",
        "X-Gitlab-Instance": "https://gitlab.com",
        "X-Gitlab-Webhook-UUID": "02affd2d-2cba-4033-917d-ec22d5dc4b38",
        "X-Gitlab-Event-UUID": EVENT_UUID,
    }
    if idempotency:
        sent["Idempotency-Key"] = IDEMPOTENCY_KEY
    if token is not None:
        sent["X-Gitlab-Token"] = token
    return sent


def gitlab_accepts(sent, secret):
    """The documented check: the header is the configured secret token."""
    token = sent.get("X-Gitlab-Token")
    return token is not None and hmac.compare_digest(token.encode(), secret.encode())


def main():
    vectors = [
        vector("gitlab", "valid", SOURCE, KEYS, headers(CURRENT), BODY, ok(IDEMPOTENCY_KEY)),
        vector(
            "gitlab",
            "valid_previous_secret_in_overlap",
            SOURCE,
            KEYS,
            headers(PREVIOUS),
            BODY,
            ok(IDEMPOTENCY_KEY),
        ),
        vector(
            "gitlab",
            "before_17_4_event_uuid_is_the_id",
            SOURCE,
            KEYS,
            headers(CURRENT, idempotency=False),
            BODY,
            ok(EVENT_UUID),
        ),
        # The token does not cover the body: a changed body still carries a valid token.
        vector(
            "gitlab",
            "body_changed_by_one_byte_is_not_covered",
            SOURCE,
            KEYS,
            headers(CURRENT),
            one_byte_changed(BODY, b"Diaspora"),
            ok(IDEMPOTENCY_KEY),
        ),
        vector(
            "gitlab",
            "wrong_secret",
            SOURCE,
            KEYS,
            headers("glwt-someone-else-0000000000"),
            BODY,
            refused("BAD_SIGNATURE"),
        ),
        vector(
            "gitlab",
            "token_one_byte_short",
            SOURCE,
            KEYS,
            headers(CURRENT[:-1]),
            BODY,
            refused("BAD_SIGNATURE"),
        ),
        vector("gitlab", "missing_token", SOURCE, KEYS, headers(None), BODY, refused("MISSING_SIGNATURE")),
        vector(
            "gitlab",
            "empty_token",
            SOURCE,
            KEYS,
            headers(""),
            BODY,
            refused("INVALID_SIGNATURE_FORMAT"),
        ),
    ]
    live = [k["secret"] for k in KEYS]
    for v in vectors:
        sent = v["headers"]
        accepted = any(gitlab_accepts(sent, secret) for secret in live)
        assert accepted == v["expect"]["ok"], v["name"]
    write("gitlab", "make_gitlab.py", vectors)


if __name__ == "__main__":
    main()

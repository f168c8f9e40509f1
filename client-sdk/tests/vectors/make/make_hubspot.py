"""HubSpot (signature v3) vectors, signed with hubspot-api-client's own
Signature.get_signature(signature_version="v3") over method + URI + body +
X-HubSpot-Request-Timestamp (ms), and checked with Signature.is_valid at the
fixed clock. The URI is the one HubSpot signs: the called URL with the
characters HubSpot's docs list (%3A %2F %3F %40 %21 %24 %27 %28 %29 %2A %2C %3B)
decoded; each vector's `url` is the URL as called, still encoded."""

import re
from datetime import datetime
from importlib.metadata import version
from unittest import mock

import hubspot.utils.signature as signature_module
from hubspot.exceptions import InvalidSignatureTimestampError
from hubspot.utils.signature import Signature

from hmac_vectors import NOW, fail, flip, ok, vector, write

SOURCE = f"hubspot-api-client {version('hubspot-api-client')} Signature.get_signature v3"
CURRENT = "6b0f9d42-8c1e-4a7b-b3d5-2e9f0a1c7d84"
PREVIOUS = "f3a81c5e-0d27-4b96-8e4a-7c2d1b9e0f63"
WRONG = "00000000-1111-2222-3333-444444444444"
SECRETS = [("k2", CURRENT, "current"), ("k1", PREVIOUS, "previous")]
URL = "https://hooks.example.com/hooks/acme?portal=62515&tag=deal%3Awon%40eu&next=%2Fpipelines%2F7&q=a%20b"
BODY = (b'[{"eventId":1764479998,"subscriptionId":2881778,"portalId":62515,"appId":1160452,'
        b'"occurredAt":1764479997412,"subscriptionType":"contact.propertyChange","attemptNumber":0,'
        b'"objectId":1246965,"propertyName":"firstname","propertyValue":"Ren\xc3\xa9e","changeSource":"CRM"},'
        b'{"eventId":1764479999,"subscriptionId":2881778,"portalId":62515,"appId":1160452,'
        b'"occurredAt":1764479997413,"subscriptionType":"contact.creation","attemptNumber":0,'
        b'"objectId":1246966,"changeSource":"CRM"}]')
EVENT_ID = "1764479998"
DECODED = {"3A": ":", "2F": "/", "3F": "?", "40": "@", "21": "!", "24": "$", "27": "'",
           "28": "(", "29": ")", "2A": "*", "2C": ",", "3B": ";"}


def signed_uri(url):
    """The URI HubSpot signs: the listed escapes decoded, any letter case."""
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: DECODED.get(m.group(1).upper(), m.group(0)), url)


def headers(secret, millis=NOW * 1000 + 412, url=URL, method="POST", body=BODY):
    sig = Signature.get_signature(secret, body.decode(), "v3", signed_uri(url), method, str(millis))
    return {"X-HubSpot-Signature-v3": sig, "X-HubSpot-Request-Timestamp": str(millis)}


class FixedClock(datetime):
    """`datetime` whose now() is the vectors' clock."""

    @classmethod
    def now(cls, tz=None):
        return datetime.fromtimestamp(NOW, tz=tz)


def library_accepts(hdrs, body, url, method):
    with mock.patch.object(signature_module, "datetime", FixedClock):
        try:
            return any(
                Signature.is_valid(
                    hdrs.get("X-HubSpot-Signature-v3", ""), key, body.decode(), signed_uri(url), method,
                    "v3", hdrs.get("X-HubSpot-Request-Timestamp"),
                )
                for key in (CURRENT, PREVIOUS)
            )
        except InvalidSignatureTimestampError:
            return False


def main():
    valid = headers(CURRENT)
    cases = [
        ("valid", valid, BODY, URL, "POST", ok(EVENT_ID)),
        ("previous_secret", headers(PREVIOUS), BODY, URL, "POST", ok(EVENT_ID)),
        ("lowercase_escapes_decoded", headers(CURRENT), BODY, URL.replace("%3A", "%3a").replace("%2F", "%2f"),
         "POST", ok(EVENT_ID)),
        ("body_changed_one_byte", valid, flip(BODY), URL, "POST", fail("BAD_SIGNATURE")),
        ("wrong_secret", headers(WRONG), BODY, URL, "POST", fail("BAD_SIGNATURE")),
        ("signed_over_the_encoded_uri",
         {**valid, "X-HubSpot-Signature-v3": Signature.get_signature(
             CURRENT, BODY.decode(), "v3", URL, "POST", valid["X-HubSpot-Request-Timestamp"])},
         BODY, URL, "POST", fail("BAD_SIGNATURE")),
        ("other_url", valid, BODY, URL.replace("acme", "acme2"), "POST", fail("BAD_SIGNATURE")),
        ("other_method", valid, BODY, URL, "PUT", fail("BAD_SIGNATURE")),
        ("stale_timestamp", headers(CURRENT, (NOW - 301) * 1000), BODY, URL, "POST", fail("STALE_TIMESTAMP")),
        ("future_timestamp", headers(CURRENT, (NOW + 301) * 1000), BODY, URL, "POST", fail("FUTURE_TIMESTAMP")),
        ("no_timestamp", {"X-HubSpot-Signature-v3": valid["X-HubSpot-Signature-v3"]}, BODY, URL, "POST",
         fail("MISSING_SIGNATURE")),
        ("v1_signature_only", {"X-HubSpot-Signature": Signature.get_signature(CURRENT, BODY.decode(), "v1"),
                               "X-HubSpot-Signature-Version": "v1"}, BODY, URL, "POST", fail("MISSING_SIGNATURE")),
        ("timestamp_in_seconds_with_fraction", {**valid, "X-HubSpot-Request-Timestamp": f"{NOW}.412"}, BODY, URL,
         "POST", fail("INVALID_TIMESTAMP")),
    ]
    # HubSpot's library refuses only old timestamps and reads fractional ones;
    # hookd also refuses the future and anything but integer milliseconds.
    stricter = {"future_timestamp", "timestamp_in_seconds_with_fraction"}
    vectors = []
    for name, hdrs, body, url, method, expect in cases:
        if name not in stricter:
            assert library_accepts(hdrs, body, url, method) == expect["ok"], name
        vectors.append(vector("hubspot", name, SOURCE, SECRETS, hdrs, body, expect,
                              method=None if method == "POST" else method, url=url))
    write("hubspot", "make_hubspot.py", vectors)


if __name__ == "__main__":
    main()

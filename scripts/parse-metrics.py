#!/usr/bin/env python3
"""Parses a /metrics answer read from stdin with the Prometheus Python
client's parsers and prints what it found as JSON, for hookd's tests.

Usage: parse-metrics.py text|openmetrics < metrics.txt

Prints {"families": {name: type}, "samples": [{"name", "labels", "value",
"exemplar"}]}; exits non-zero (with the parser's error) if the exposition
does not parse. Exits 3 when prometheus_client is not installed.
"""
import json
import sys

try:
    from prometheus_client.openmetrics import parser as openmetrics
    from prometheus_client import parser as text
except ImportError:
    sys.stderr.write("prometheus_client is not installed (pip install prometheus_client)\n")
    sys.exit(3)


def main():
    fmt = sys.argv[1]
    body = sys.stdin.read()
    parse = {
        "text": text.text_string_to_metric_families,
        "openmetrics": openmetrics.text_string_to_metric_families,
    }[fmt]
    families = {}
    samples = []
    for family in parse(body):
        families[family.name] = family.type
        for s in family.samples:
            exemplar = None
            if getattr(s, "exemplar", None) is not None:
                exemplar = {"labels": s.exemplar.labels, "value": s.exemplar.value}
            samples.append(
                {"name": s.name, "labels": s.labels, "value": s.value, "exemplar": exemplar}
            )
    json.dump({"families": families, "samples": samples}, sys.stdout)


if __name__ == "__main__":
    main()

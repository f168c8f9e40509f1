#!/usr/bin/env bash
# Checks the chart's PrometheusRule and Grafana dashboard with real tools,
# offline once installed: promtool (Debian's prometheus package) checks and
# unit-tests the rendered rules (helm/ci/rules_test.yaml), and tsc checks
# the dashboard JSON against Grafana's published dashboard types (npm
# @grafana/schema, pinned in helm/ci/grafana/). On a fresh Debian, as root,
# installs what it needs; the Python tools share scripts/helm-check.sh's
# venv. Exits non-zero on any failure, including a check that no longer
# catches a broken rule (see check_monitoring.py).
set -euo pipefail
cd "$(dirname "$0")/../.."

missing=()
command -v promtool >/dev/null || missing+=(prometheus)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
promtool --version 2>&1 | sed -n 1p

cache=${XDG_CACHE_HOME:-$HOME/.cache}
venv=${HOOKD_HELM_VENV:-$cache/hookd-helm-venv}
if [ ! -x "$venv/bin/pip" ] && ! python3 -m venv "$venv" >/dev/null 2>&1; then
  # Debian's python3 makes venvs only with python3-venv.
  rm -rf "$venv"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check helm-python-sdk==0.2.2 PyYAML

# Grafana's types and tsc, from the lock file, reinstalled when it changes.
schema=$cache/hookd-grafana-schema
if ! cmp -s helm/ci/grafana/package-lock.json "$schema/package-lock.json"; then
  rm -rf "$schema" && mkdir -p "$schema"
  cp helm/ci/grafana/package.json helm/ci/grafana/package-lock.json "$schema/"
  (cd "$schema" && npm ci --no-audit --no-fund --silent)
fi

work=$(mktemp -d /tmp/hookd-monitoring.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" helm/ci/check_monitoring.py helm/hookd "$work" "$schema/node_modules"

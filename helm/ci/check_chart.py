"""Checks the hookd Helm chart with the real Helm library, offline.

Lints it strictly, renders it for the documented scenarios, validates every
rendered manifest against the Kubernetes 1.30 schemas, asserts what each
scenario must contain and which values must be refused, then starts the real
hookd binary with the chart's ConfigMap and the environment its pod spec
sets, and waits for /readyz = 200.

Usage: python check_chart.py CHART_DIR HOOKD_BINARY
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import helm_python as helm
import kubernetes_validate
import yaml

KUBE = "1.30.0"
RELEASE, NAMESPACE = "hookd", "webhooks"

POSTGRES = {
    "replicaCount": 3,
    "storage": {
        "backend": "postgres",
        "postgres": {"existingSecret": "hookd-db", "migrationJob": True},
    },
    "auth": {"existingSecret": "hookd-keys"},
    "autoscaling": {"enabled": True, "minReplicas": 3, "maxReplicas": 12},
    "ingress": {
        "enabled": True,
        "className": "nginx",
        "hosts": ["hooks.example.com"],
        "tls": [{"secretName": "hooks-tls", "hosts": ["hooks.example.com"]}],
    },
    "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}},
    "networkPolicy": {"enabled": True},
    "otel": {
        "endpoint": "http://otel-collector.observability:4317",
        "resourceAttributes": {"deployment.environment": "prod"},
        "headersSecret": {"name": "otel-headers"},
    },
    "imagePullSecrets": [{"name": "regcred"}],
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "hooks", "effect": "NoSchedule"}],
}

TLS = {
    "grpc": {"tls": {"enabled": True, "existingSecret": "hookd-grpc-tls", "clientAuth": True}},
    "http": {"tls": {"enabled": True, "existingSecret": "hookd-http-tls"}},
    "metrics": {"listener": {"enabled": True}, "serviceMonitor": {"enabled": True}},
    "forward": {"allowNetworks": ["10.20.0.0/16"]},
    "networkPolicy": {"enabled": True},
}

# Tenants as a user would declare them: the secret comes from a Secret via
# extraEnv, the TOML emitter must turn every number into the right type.
TENANTS = {
    "tenants": [
        {
            "id": "acme",
            "scheme": "standard",
            "tolerance_secs": 300,
            "required_fields": ["type"],
            "rate_limit": {"per_sec": 100, "burst": 200},
            "secrets": [{"kid": "k1", "secret_env": "ACME_SIGNING_SECRET"}],
            "retry": {"schedule_secs": [30, 120.5], "window_secs": 86400, "jitter": 0.1},
        }
    ],
    "extraEnv": [{"name": "ACME_SIGNING_SECRET", "value": "whsec_" + base64.b64encode(b"k" * 24).decode()}],
}

# Monitoring for operators who alert with Prometheus: the PrometheusRule
# (two alerts tuned, one off) and the Grafana dashboard ConfigMap.
MONITORING = {
    "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}}},
    "prometheusRule": {
        "enabled": True,
        "labels": {"release": "prom"},
        "extraLabels": {"team": "payments"},
        "alerts": {"deadLetters": {"threshold": 250, "for": "15m"}, "notReady": {"enabled": False}},
    },
    "grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "hookd"}},
}

# Minimal structural checks of the prometheus-operator CRDs, whose schemas
# kubernetes-validate does not ship.
SERVICE_MONITOR = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "properties": {
                "selector": {"type": "object", "required": ["matchLabels"]},
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "object", "required": ["port"]},
                },
            },
        },
    },
}

PROMETHEUS_RULE = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "spec": {
            "type": "object",
            "required": ["groups"],
            "additionalProperties": False,
            "properties": {
                "groups": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["name", "rules"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "rules": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "object",
                                    "required": ["alert", "expr", "labels", "annotations"],
                                    "additionalProperties": False,
                                    "properties": {
                                        "alert": {"type": "string"},
                                        "expr": {"type": "string"},
                                        "for": {"type": "string", "pattern": "^(0|(([0-9]+)(ms|s|m|h|d|w|y))+)$"},
                                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}
CRD_SCHEMAS = {"ServiceMonitor": SERVICE_MONITOR, "PrometheusRule": PROMETHEUS_RULE}

failures: list[str] = []
passed = 0


def check(condition: bool, what: str) -> None:
    """Counts one assertion; collects failures instead of stopping."""
    global passed
    if condition:
        passed += 1
    else:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def render(chart: helm.Chart, values: dict) -> list[dict]:
    """Every rendered object of the chart for `values` (NOTES.txt left out)."""
    chart.validate_schema(values)
    out = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    docs = []
    for path, text in sorted(out.items()):
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


def validate(scenario: str, docs: list[dict]) -> None:
    """Schema-checks every object against Kubernetes 1.30, strictly."""
    import jsonschema

    for doc in docs:
        name = f"{scenario}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        try:
            if doc.get("kind") in CRD_SCHEMAS:
                jsonschema.validate(doc, CRD_SCHEMAS[doc["kind"]])
            else:
                kubernetes_validate.validate(doc, KUBE, strict=True)
            check(True, name)
        except Exception as e:  # noqa: BLE001 - report every invalid object
            check(False, f"{name} is not a valid 1.30 object: {e}")


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


def pod_spec(docs: list[dict]) -> dict:
    (workload,) = by_kind(docs, "StatefulSet") + by_kind(docs, "Deployment")
    return workload["spec"]["template"]["spec"]


def config_toml(docs: list[dict]) -> str:
    (cm,) = by_kind(docs, "ConfigMap")
    return cm["data"]["hookd.toml"]


def render_fails(chart: helm.Chart, values: dict, needle: str, what: str) -> None:
    """Asserts that `values` are refused (schema or template) with `needle` in the message."""
    try:
        chart.validate_schema(values)
        chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    except helm.HelmError as e:
        check(needle in str(e), f"{what}: message {str(e)!r} should mention {needle!r}")
        return
    check(False, f"{what}: rendered although it must fail")


def scenarios(chart: helm.Chart, chart_dir: str) -> dict[str, list[dict]]:
    rendered = {}
    for name, values in [("defaults", {}), ("postgres", POSTGRES), ("tls", TLS), ("tenants", TENANTS),
                         ("monitoring", MONITORING)]:
        report = helm.lint(chart_dir, values, strict=True, namespace=NAMESPACE, kube_version=f"v{KUBE}")
        problems = [m for m in report["messages"] if m["severity"] >= 2] + report["errors"]
        check(not problems, f"lint --strict ({name}): {problems}")
        rendered[name] = render(chart, values)
        validate(name, rendered[name])
    return rendered


def assert_defaults(docs: list[dict]) -> None:
    (sts,) = by_kind(docs, "StatefulSet")
    check(not by_kind(docs, "Deployment"), "defaults: no Deployment in sled mode")
    check(sts["spec"]["replicas"] == 1, "defaults: one sled replica")
    check(sts["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "10Gi",
          "defaults: a 10Gi PVC template")
    services = {s["metadata"]["name"]: s for s in by_kind(docs, "Service")}
    check(services.get("hookd-headless", {}).get("spec", {}).get("clusterIP") == "None",
          "defaults: headless Service")
    check(sts["spec"]["serviceName"] == "hookd-headless", "defaults: StatefulSet uses the headless Service")
    check({"hookd", "hookd-grpc", "hookd-metrics"} <= set(services), f"defaults: client Services {set(services)}")
    spec = pod_spec(docs)
    c = spec["containers"][0]
    sc = c["securityContext"]
    check(sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"] and sc["runAsNonRoot"]
          and sc["capabilities"]["drop"] == ["ALL"] and sc["seccompProfile"]["type"] == "RuntimeDefault",
          "defaults: hardened securityContext")
    check(c["livenessProbe"]["httpGet"]["path"] == "/healthz" and c["readinessProbe"]["httpGet"]["path"] == "/readyz",
          "defaults: probes on /healthz and /readyz")
    (secret,) = by_kind(docs, "Secret")
    key = base64.b64decode(base64.b64decode(secret["data"]["master-key"]))
    check(len(key) == 32, "defaults: generated master key is base64 of 32 bytes")
    check(secret["metadata"]["annotations"].get("helm.sh/resource-policy") == "keep",
          "defaults: the generated key Secret survives uninstall")
    check(len(by_kind(docs, "PodDisruptionBudget")) == 1, "defaults: a PodDisruptionBudget")
    for kind in ("Ingress", "ServiceMonitor", "NetworkPolicy", "HorizontalPodAutoscaler", "Job", "PrometheusRule"):
        check(not by_kind(docs, kind), f"defaults: no {kind}")
    check("backend" not in config_toml(docs), "defaults: sled TOML has no backend key")


def assert_postgres(docs: list[dict]) -> None:
    check(not by_kind(docs, "StatefulSet"), "postgres: no StatefulSet")
    (dep,) = by_kind(docs, "Deployment")
    check("replicas" not in dep["spec"], "postgres: the HPA owns the replica count")
    (hpa,) = by_kind(docs, "HorizontalPodAutoscaler")
    check(hpa["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"] and hpa["spec"]["minReplicas"] == 3,
          "postgres: HPA scales the Deployment")
    spec = pod_spec(docs)
    env = {e["name"]: e for e in spec["containers"][0]["env"]}
    ref = env["HOOKD_STORAGE__POSTGRES__URL"]["valueFrom"]["secretKeyRef"]
    check(ref == {"name": "hookd-db", "key": "url"}, f"postgres: URL from the existing Secret ({ref})")
    check(env["HOOKD_ADMIN_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "hookd-keys",
          "postgres: admin token from the existing Secret")
    check(not by_kind(docs, "Secret"), "postgres: no generated Secret with existingSecret")
    data = [v for v in spec["volumes"] if v["name"] == "data"]
    check(data and "emptyDir" in data[0] and "persistentVolumeClaim" not in data[0],
          "postgres: no persistent volume")
    toml = config_toml(docs)
    check('backend = "postgres"' in toml and "[storage.postgres]" in toml and "max_connections = 10" in toml,
          "postgres: TOML selects PostgreSQL")
    (job,) = by_kind(docs, "Job")
    check(job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
          and job["spec"]["template"]["spec"]["containers"][0]["args"][0] == "migrate",
          "postgres: migration hook Job runs hookd migrate")
    (ing,) = by_kind(docs, "Ingress")
    path = ing["spec"]["rules"][0]["http"]["paths"][0]
    check(path["path"] == "/hooks" and path["backend"]["service"]["name"] == "hookd",
          "postgres: Ingress routes only /hooks to the HTTP Service")
    check(len(by_kind(docs, "ServiceMonitor")) == 1, "postgres: ServiceMonitor")
    check(spec["imagePullSecrets"] == [{"name": "regcred"}] and spec["tolerations"], "postgres: scheduling values")
    check("OTEL_EXPORTER_OTLP_ENDPOINT" in env and "OTEL_EXPORTER_OTLP_HEADERS" in env, "postgres: OTEL env")


def assert_tls(docs: list[dict]) -> None:
    toml = config_toml(docs)
    for key in ('[grpc.tls]', 'cert_file = "/etc/hookd/tls/grpc/tls.crt"', 'client_ca_file = "/etc/hookd/tls/grpc/ca.crt"',
                '[http.tls]', 'addr = "0.0.0.0:9090"', 'allow_networks = ["10.20.0.0/16"]'):
        check(key in toml, f"tls: TOML has {key}")
    spec = pod_spec(docs)
    secrets = {v["secret"]["secretName"] for v in spec["volumes"] if "secret" in v}
    check(secrets == {"hookd-grpc-tls", "hookd-http-tls"}, f"tls: certificate Secrets mounted ({secrets})")
    c = spec["containers"][0]
    check(c["readinessProbe"]["httpGet"]["scheme"] == "HTTPS", "tls: probes use HTTPS")
    check(any(p["name"] == "metrics" for p in c["ports"]), "tls: metrics container port")
    (np,) = by_kind(docs, "NetworkPolicy")
    rules = np["spec"]["ingress"]
    check("from" not in rules[0] and rules[0]["ports"][0]["port"] == "http", "tls: ingress port open to all")
    check(rules[1]["from"][0]["namespaceSelector"]["matchLabels"] == {"hookd.io/control-plane": "true"}
          and rules[1]["ports"][0]["port"] == "grpc", "tls: gRPC only from labelled namespaces")


def assert_monitoring(docs: list[dict], chart_dir: str) -> None:
    (rule,) = by_kind(docs, "PrometheusRule")
    check(rule["metadata"]["labels"].get("release") == "prom", "monitoring: PrometheusRule carries the selector labels")
    rules = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    expected = {"HookdRouteFailing", "HookdCircuitBreakerOpen", "HookdDeadLetters", "HookdBacklogLag",
                "HookdTransformFailing", "HookdSignatureFailureSpike", "HookdRateLimited",
                "HookdContractRejectionSpike", "HookdHandshakeRefused", "HookdDown", "HookdStorageErrors"}
    check(set(rules) == expected, f"monitoring: the enabled alerts ({sorted(rules)})")
    dead = rules.get("HookdDeadLetters", {})
    check(dead.get("expr", "").endswith("> 250") and dead.get("for") == "15m",
          f"monitoring: dead-letter threshold and for from values ({dead.get('expr')}, {dead.get('for')})")
    for name, r in rules.items():
        check(r["labels"].get("team") == "payments" and r["labels"].get("severity"),
              f"monitoring: {name} has severity and the extra labels")
        check('job="hookd-metrics",namespace="webhooks"' in r["expr"],
              f"monitoring: {name} selects the ServiceMonitor's job and namespace")
    dashboards = [c for c in by_kind(docs, "ConfigMap") if c["metadata"]["name"] == "hookd-dashboard"]
    check(len(dashboards) == 1, "monitoring: the dashboard ConfigMap")
    if dashboards:
        (cm,) = dashboards
        check(cm["metadata"]["labels"].get("grafana_dashboard") == "1"
              and cm["metadata"]["annotations"] == {"grafana_folder": "hookd"},
              "monitoring: dashboard ConfigMap labelled for the Grafana sidecar")
        shipped = json.loads(Path(chart_dir, "dashboards", "hookd.json").read_text())
        check(json.loads(cm["data"]["hookd.json"]) == shipped, "monitoring: the ConfigMap holds dashboards/hookd.json")


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of env values."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), value)


def pod_env(docs: list[dict]) -> dict[str, str]:
    """The container env as the kubelet would resolve it from the rendered objects."""
    secrets = {s["metadata"]["name"]: s["data"] for s in by_kind(docs, "Secret")}
    fields = {"metadata.name": "hookd-0", "metadata.namespace": NAMESPACE}
    env: dict[str, str] = {}
    for e in pod_spec(docs)["containers"][0]["env"]:
        if "value" in e:
            env[e["name"]] = expand(e["value"], env)
        elif "secretKeyRef" in e["valueFrom"]:
            ref = e["valueFrom"]["secretKeyRef"]
            env[e["name"]] = base64.b64decode(secrets[ref["name"]][ref["key"]]).decode()
        else:
            env[e["name"]] = fields[e["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


def start_hookd(binary: str, docs: list[dict], tenant: str | None) -> None:
    """Runs hookd with the chart's config, args and env; waits for /readyz = 200."""
    with tempfile.TemporaryDirectory() as work:
        config = Path(work, "hookd.toml")
        config.write_text(config_toml(docs))
        args = [str(config) if a == "/etc/hookd/hookd.toml" else a for a in pod_spec(docs)["containers"][0]["args"]]
        data = Path(work, "data")
        # The pod binds 0.0.0.0:8080/50051 on /var/lib/hookd; here free
        # loopback ports and a temporary data dir, as flags over the file.
        args += ["--data-dir", str(data), "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HOOKD_", "OTEL_"))}
        env.update(pod_env(docs))
        log = Path(work, "hookd.log")
        with log.open("wb") as out:
            proc = subprocess.Popen([binary, *args], env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            addr, ready, deadline = None, None, time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                if addr is None:
                    m = re.search(r"http listening on ([0-9.]+:[0-9]+)", log.read_text(errors="replace"))
                    addr = m and m.group(1)
                if addr:
                    ready = status(f"http://{addr}/readyz")
                    if ready == 200:
                        break
                time.sleep(0.1)
            what = f"hookd with the chart's config ({'tenant ' + tenant if tenant else 'defaults'})"
            check(ready == 200, f"{what}: /readyz answered {ready}; log:\n{log.read_text(errors='replace')[:2500]}")
            check(not (data / "admin-token").exists() and not (data / "master.key").exists(),
                  f"{what}: used the chart's admin token and master key")
            if tenant and ready == 200:
                # Unsigned: 401 from a loaded tenant, where an unknown one is 404.
                code = status(f"http://{addr}/hooks/{tenant}", b'{"type":"x"}')
                check(code == 401, f"{what}: tenant {tenant} is loaded (unsigned POST answered {code})")
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            check(code == 0, f"hookd exited {code} after SIGTERM")


def status(url: str, body: bytes | None = None) -> int | None:
    req = urllib.request.Request(url, data=body, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=2) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


# Values whose contents are free-form Kubernetes or label maps: documented as a whole.
OPAQUE = {"podSecurityContext", "securityContext", "resources", "affinity", "nodeSelector",
          "commonLabels", "podAnnotations", "podLabels", "grpcNamespaceSelector", "metricsNamespaceSelector",
          "annotations", "labels", "resourceAttributes", "tlsConfig"}


def value_paths(values: dict, prefix: str = "") -> list[str]:
    """Dotted paths of every documented value in the chart's values.yaml."""
    paths = []
    for key, value in values.items():
        path = prefix + key
        if isinstance(value, dict) and value and key not in OPAQUE:
            paths.extend(value_paths(value, path + "."))
        else:
            paths.append(path)
    return paths


def assert_readme(chart: helm.Chart, chart_dir: str) -> None:
    """The chart's README names every value, and both install recipes."""
    readme = Path(chart_dir, "README.md").read_text()
    for path in value_paths(chart.values):
        check(f"`{path}`" in readme, f"README.md documents `{path}`")
    check("storage.backend=postgres" in readme and "helm install" in readme, "README.md: install recipes")


def assert_schema_closed(schema: dict, where: str = "values") -> None:
    """Every object of values.schema.json with named properties refuses other keys."""
    if "properties" in schema:
        check(schema.get("additionalProperties") is False, f"schema: {where} refuses unknown keys")
        for key, sub in schema["properties"].items():
            assert_schema_closed(sub, f"{where}.{key}")
    if isinstance(schema.get("items"), dict):
        assert_schema_closed(schema["items"], f"{where}[]")


def assert_notes(chart: helm.Chart) -> None:
    """NOTES.txt says where the ingress, the control plane and the admin token are."""
    notes = chart.render({}, name=RELEASE, namespace=NAMESPACE, is_install=True)["hookd/templates/NOTES.txt"]
    for needle in ("/hooks/<tenant_id>", "svc/hookd-grpc", "get secret hookd-auth", "admin-token"):
        check(needle in notes, f"NOTES.txt mentions {needle}")


def main() -> int:
    chart_dir, binary = sys.argv[1], sys.argv[2]
    started = time.monotonic()
    with helm.Chart.load(chart_dir) as chart:
        rendered = scenarios(chart, chart_dir)
        assert_defaults(rendered["defaults"])
        assert_postgres(rendered["postgres"])
        assert_tls(rendered["tls"])
        assert_monitoring(rendered["monitoring"], chart_dir)
        assert_readme(chart, chart_dir)
        assert_schema_closed(chart.schema)
        assert_notes(chart)
        render_fails(chart, {"replicaCount": 3}, "PostgreSQL", "sled mode with replicaCount=3")
        render_fails(chart, {"autoscaling": {"enabled": True}}, "PostgreSQL", "sled mode with autoscaling")
        render_fails(chart, {"storage": {"backend": "postgres"}}, "storage.postgres.existingSecret",
                     "postgres mode without a URL Secret")
        render_fails(chart, {"replicaCout": 3}, "replicaCout", "a typo at the top level")
        render_fails(chart, {"storage": {"persistance": {"size": "1Gi"}}}, "persistance", "a nested typo")
        render_fails(chart, {"tenants": [{"id": "a", "tolerence_secs": 5}]}, "tolerence_secs", "a tenant key typo")
        render_fails(chart, {"prometheusRule": {"enabled": True}, "metrics": {"enabled": False}}, "metrics.enabled",
                     "alert rules without metrics")
        render_fails(chart, {"prometheusRule": {"alerts": {"deadLeters": {"threshold": 5}}}}, "deadLeters",
                     "an alert name typo")
        render_fails(chart, {"grpc": {"tls": {"enabled": True}}}, "grpc.tls.existingSecret", "gRPC TLS without a Secret")
        start_hookd(binary, rendered["defaults"], None)
        start_hookd(binary, rendered["tenants"], "acme")
    print(f"helm chart checks took {time.monotonic() - started:.1f}s")
    print(f"helm-check: {passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

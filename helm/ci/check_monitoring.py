"""Checks the chart's PrometheusRule and Grafana dashboard with real tools.

Renders the chart (real Helm library) with every alert on, writes the
PrometheusRule's spec as a rule file, and runs `promtool check rules` and
`promtool test rules` (helm/ci/rules_test.yaml) on it; then proves both
checks bite: a copy with one broken expression must fail `check rules`, a
copy with a changed threshold must fail `test rules`. Every PromQL
expression of the dashboard is checked by promtool too (as recording rules,
template variables replaced), every metric the rules and the dashboard read
must be one hookd documents in docs/observability.md and registers in
server/src/metrics, every runbook_url
anchor must exist there, and the dashboard JSON is type-checked with `tsc`
against Grafana's published dashboard model (npm @grafana/schema), each
panel's options against its panel plugin's published options.

Usage: python check_monitoring.py CHART_DIR WORK_DIR SCHEMA_NODE_MODULES
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import helm_python as helm
import yaml

RELEASE, NAMESPACE = "hookd", "webhooks"
ROOT = Path(__file__).resolve().parents[2]
RULES_TEST = Path(__file__).with_name("rules_test.yaml")
DOCS = ROOT / "docs" / "observability.md"
METRICS_SRC = ROOT / "server" / "src" / "metrics"

# Series the rules read that hookd does not export itself: Prometheus' own
# scrape health, kube-state-metrics' readiness, and the gauge of hookd's
# operational alerts (open conditions per type).
EXTERNAL = {"up", "kube_pod_status_ready", "hookd_alerts_open"}

# Grafana's template variables, replaced by PromQL that parses the same way.
VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$job": ".+", "$tenant": ".+"}

# Panel types of the dashboard and their plugin's published types in
# @grafana/schema: the module, and whether it has a FieldConfig (its
# `Options` always).
PANEL_TYPES = {
    "timeseries": ("timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen", True),
    "stat": ("stat/panelcfg/x/StatPanelCfg_types.gen", False),
    "state-timeline": ("statetimeline/panelcfg/x/StateTimelinePanelCfg_types.gen", True),
}

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


def run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs a tool, capturing its output."""
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True)


def tool_passes(args: list[str], what: str, cwd: Path | None = None) -> None:
    """Asserts that a tool exits 0, showing its output when it does not."""
    out = run(args, cwd)
    check(out.returncode == 0, f"{what}: exit {out.returncode}\n{out.stdout}{out.stderr}")
    if out.returncode == 0:
        print(f"ok: {what}")


def tool_fails(args: list[str], needle: str, what: str, cwd: Path | None = None) -> None:
    """Asserts that a tool exits non-zero and says `needle`."""
    out = run(args, cwd)
    said = out.stdout + out.stderr
    check(out.returncode != 0 and needle in said, f"{what}: exit {out.returncode}, expected {needle!r} in\n{said}")
    if out.returncode != 0 and needle in said:
        print(f"ok: {what} (it said {needle!r})")


def dump(doc: dict, path: Path) -> None:
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=10**6))


def render_rules(chart_dir: str) -> dict:
    """The PrometheusRule of the chart with every alert enabled."""
    with helm.Chart.load(chart_dir) as chart:
        alerts = {name: {"enabled": True} for name in chart.values["prometheusRule"]["alerts"]}
        values = {"prometheusRule": {"enabled": True, "alerts": alerts}}
        chart.validate_schema(values)
        out = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    texts = [text for path, text in out.items() if not path.endswith("NOTES.txt")]
    docs = [d for text in texts for d in yaml.safe_load_all(text) if d and d.get("kind") == "PrometheusRule"]
    check(len(docs) == 1, f"one PrometheusRule rendered, got {len(docs)}")
    return docs[0]


def rules_of(spec: dict) -> list[dict]:
    return [r for g in spec["groups"] for r in g["rules"]]


def documented_metrics() -> set[str]:
    """Series names docs/observability.md lists, histograms with their suffixes."""
    names = set()
    for name, kind in re.findall(r"^\| `((?:hookd|process)_[a-z_]+)` \| ([a-z]+)", DOCS.read_text(), re.M):
        names.add(name)
        if kind == "histogram":
            names.update(f"{name}_{suffix}" for suffix in ("bucket", "sum", "count"))
    return names


def registered(name: str, source: str) -> bool:
    """Whether server/src/metrics registers `name`: under its full name, or
    without the suffixes prometheus-client adds (`_total`, `_info`, the unit,
    a histogram's `_bucket`/`_sum`/`_count`)."""
    candidates = [name]
    for suffix in ("_bucket", "_sum", "_count", "_total", "_info", "_seconds", "_bytes"):
        if candidates[-1].endswith(suffix):
            candidates.append(candidates[-1].removesuffix(suffix))
    return any(f'"{c}"' in source for c in candidates)


def metrics_in(expr: str) -> set[str]:
    """Series names an expression selects: hookd's and process metrics, and
    any identifier followed by a label matcher."""
    names = set(re.findall(r"\b((?:hookd|process)_[a-z_]+)\b", expr))
    names.update(re.findall(r"\b([a-z_:][a-z0-9_:]*)\{", expr))
    return names


def check_annotations(spec: dict) -> None:
    """Every alert says what broke, why, what to do, and links an existing anchor."""
    headings = {h.strip().lower().replace(" ", "-") for h in re.findall(r"^#+ (.+)$", DOCS.read_text(), re.M)}
    for rule in rules_of(spec):
        name, notes = rule["alert"], rule.get("annotations", {})
        check(notes.get("summary") and len(notes.get("description", "")) > 80,
              f"{name}: summary and a description in plain words")
        check(rule["labels"].get("severity") in ("info", "warning", "critical"), f"{name}: severity label")
        url = notes.get("runbook_url", "")
        anchor = url.partition("#")[2]
        check(url.startswith("docs/observability.md#") and anchor in headings,
              f"{name}: runbook_url {url!r} names a heading of docs/observability.md")


def check_metrics(what: str, exprs: list[str]) -> None:
    """Every series an expression reads is one hookd exports (or EXTERNAL)."""
    known = documented_metrics() | EXTERNAL
    check(len(known) > 20, f"docs/observability.md lists hookd's metrics ({len(known)} found)")
    source = "".join(p.read_text() for p in sorted(METRICS_SRC.glob("*.rs")))
    for expr in exprs:
        names = metrics_in(expr)
        unknown = names - known
        check(not unknown, f"{what}: {sorted(unknown)} not documented in docs/observability.md, in {expr}")
        unregistered = {n for n in names - EXTERNAL if not registered(n, source)}
        check(not unregistered, f"{what}: {sorted(unregistered)} not registered in server/src/metrics, in {expr}")


def check_rules(spec: dict, work: Path) -> None:
    """promtool check rules and test rules, and proof that both catch a mistake."""
    rules = work / "hookd-rules.yaml"
    dump(spec, rules)
    shutil.copy(RULES_TEST, work / "rules_test.yaml")
    tool_passes(["promtool", "check", "rules", str(rules)], "promtool check rules (chart's PrometheusRule)")
    tool_passes(["promtool", "test", "rules", "rules_test.yaml"], "promtool test rules (helm/ci/rules_test.yaml)", work)
    original = rules.read_text()
    broken = copy.deepcopy(spec)
    rule = next(r for r in rules_of(broken) if r["alert"] == "HookdSignatureFailureSpike")
    rule["expr"] = rule["expr"].replace("[5m]))", "[5m])")
    dump(broken, rules)
    tool_fails(["promtool", "check", "rules", str(rules)], "HookdSignatureFailureSpike",
               "a broken expression fails promtool check rules")
    wrong = copy.deepcopy(spec)
    rule = next(r for r in rules_of(wrong) if r["alert"] == "HookdDeadLetters")
    rule["expr"] = rule["expr"].replace("> 100", "> 200")
    dump(wrong, rules)
    tool_fails(["promtool", "test", "rules", "rules_test.yaml"], "HookdDeadLetters",
               "a wrong threshold fails promtool test rules", work)
    rules.write_text(original)


def dashboard_exprs(dashboard: dict) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and query variable."""
    found = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            found.append((f"panel {panel['id']} ({panel['title']}) {target['refId']}", target["expr"]))
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            m = re.fullmatch(r"label_values\((.+), *[a-z_]+\)", var["query"]["query"])
            check(bool(m), f"variable {var['name']}: label_values(series, label)")
            if m:
                found.append((f"variable {var['name']}", m.group(1)))
    return found


def check_dashboard_promql(dashboard: dict, work: Path) -> None:
    """Every expression of the dashboard parses (promtool) and reads hookd's metrics."""
    exprs = dashboard_exprs(dashboard)
    rules = []
    for i, (where, expr) in enumerate(exprs):
        for var, value in VARIABLES.items():
            expr = expr.replace(var, value)
        check("$" not in expr, f"{where}: only known variables ({expr})")
        rules.append({"record": f"hookd_dashboard:expr_{i}", "expr": expr})
    path = work / "dashboard-exprs.yaml"
    dump({"groups": [{"name": "dashboard", "rules": rules}]}, path)
    tool_passes(["promtool", "check", "rules", str(path)], f"promtool parses the dashboard's {len(rules)} expressions")
    check_metrics("dashboard", [e for _, e in exprs])


def check_dashboard_model(dashboard: dict) -> None:
    """What a Grafana import needs besides the types: ids, layout, variables."""
    ids = [p["id"] for p in dashboard["panels"]]
    check(len(ids) == len(set(ids)), "dashboard: panel ids are unique")
    for p in dashboard["panels"]:
        g = p["gridPos"]
        check(g["x"] + g["w"] <= 24, f"panel {p['id']}: within the 24-column grid")
        if p["type"] != "row":
            check(p["datasource"] == {"type": "prometheus", "uid": "${datasource}"},
                  f"panel {p['id']}: reads the $datasource variable")
            check(p["type"] in PANEL_TYPES, f"panel {p['id']}: type {p['type']} is type-checked")
    names = {v["name"]: v for v in dashboard["templating"]["list"]}
    check(names.get("datasource", {}).get("type") == "datasource", "dashboard: a datasource variable")
    check(names.get("tenant", {}).get("type") == "query", "dashboard: a tenant variable")


def typescript_of(dashboard: dict) -> str:
    """The dashboard as a typed TypeScript literal: tsc checks it, excess keys
    included, against Grafana's dashboard and panel-plugin types. String
    enums of those types are read as their string values, as JSON has them."""
    imports, panels = [], []
    for i, (kind, (module, field_config)) in enumerate(PANEL_TYPES.items()):
        names = f"Options as O{i}" + (f", FieldConfig as F{i}" if field_config else "")
        imports.append(f'import type {{ {names} }} from "@grafana/schema/dist/esm/raw/composable/{module}";')
        custom = f"F{i}" if field_config else "Record<string, unknown>"
        panels.append(f'(Json<Omit<Panel<O{i}, {custom}>, "options" | "type">> & {{ type: "{kind}"; options?: Json<O{i}> }})')
    imports, panels = "\n".join(imports), " | ".join(panels)
    return f"""import type {{ Dashboard, Panel, RowPanel }} from "@grafana/schema";
{imports}

type Json<T> = T extends string ? `${{T}}` : T extends readonly (infer E)[] ? Json<E>[]
  : T extends object ? {{ [K in keyof T]: Json<T[K]> }} : T;
type HookdPanel = {panels} | Json<RowPanel>;

export const dashboard: Json<Omit<Dashboard, "panels">> & {{ panels: HookdPanel[] }} = {json.dumps(dashboard, indent=2)};
"""


def check_dashboard_types(dashboard: dict, work: Path, node_modules: Path) -> None:
    """tsc --strict on the typed dashboard."""
    (work / "node_modules").unlink(missing_ok=True)
    (work / "node_modules").symlink_to(node_modules)
    (work / "dashboard.ts").write_text(typescript_of(dashboard))
    (work / "tsconfig.json").write_text(json.dumps({
        "compilerOptions": {"strict": True, "noEmit": True, "module": "esnext", "moduleResolution": "bundler",
                            "target": "es2022", "skipLibCheck": True},
        "files": ["dashboard.ts"],
    }))
    tsc = str(node_modules / ".bin" / "tsc")
    tool_passes([tsc, "-p", "tsconfig.json"], "tsc: the dashboard is a Grafana dashboard model (@grafana/schema)", work)
    bad = copy.deepcopy(dashboard)
    bad["panels"][1]["gridPos"]["width"] = 12
    (work / "dashboard.ts").write_text(typescript_of(bad))
    tool_fails([tsc, "-p", "tsconfig.json"], "width", "a misspelt panel key fails tsc", work)
    (work / "dashboard.ts").write_text(typescript_of(dashboard))


def main() -> int:
    chart_dir, work, node_modules = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]).resolve()
    work.mkdir(parents=True, exist_ok=True)
    rule = render_rules(chart_dir)
    spec = rule["spec"]
    check_rules(spec, work)
    check_annotations(spec)
    check_metrics("rules", [r["expr"] for r in rules_of(spec)])
    dashboard = json.loads(Path(chart_dir, "dashboards", "hookd.json").read_text())
    check_dashboard_model(dashboard)
    check_dashboard_promql(dashboard, work)
    check_dashboard_types(dashboard, work, node_modules)
    print(f"monitoring-check: {passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

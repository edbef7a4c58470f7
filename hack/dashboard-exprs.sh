#!/usr/bin/env bash
# Prints every PromQL expression of the chart's Grafana dashboards
# (charts/gantry/dashboards/*.json: panel targets, and the metric of each
# label_values() variable query) and of its PrometheusRule, one per line,
# with Grafana's variables replaced so each line is valid PromQL:
# $__rate_interval, $__interval, $__range → 5m; any other $var or ${var}
# → .* inside a regex matcher (=~, !~), x elsewhere. Duplicates are printed
# once. For checking the metric names the chart uses against the manager's.
# Usage: hack/dashboard-exprs.sh [path/to/helm]
#   RULES=FILE: read the PrometheusRule (or its spec) from FILE instead of
#   rendering it with helm.
set -euo pipefail
cd "$(dirname "$0")/.."
helm=${1:-helm}
chart=${CHART:-charts/gantry}
rules=${RULES:-}
if [ -z "$rules" ]; then
  rules=$(mktemp)
  trap 'rm -f "$rules"' EXIT
  "$helm" template t "$chart" --kube-version 1.36.3 -n ops --set metrics.prometheusRule.enabled=true \
    --show-only templates/prometheusrule.yaml >"$rules"
fi
python3 - "$chart/dashboards" "$rules" <<'PY'
import glob, json, os, re, sys

dash_dir, rules_file = sys.argv[1], sys.argv[2]
exprs = []

def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))  # rows hold their panels when collapsed

for path in sorted(glob.glob(os.path.join(dash_dir, "*.json"))):
    with open(path) as f:
        d = json.load(f)
    for v in d.get("templating", {}).get("list", []):
        q = v.get("query")
        if v.get("type") != "query":
            continue
        q = q.get("query", "") if isinstance(q, dict) else q
        m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\)\s*", q)
        exprs.append(m.group(1) if m else q)
    for p in panels(d.get("panels", [])):
        for t in p.get("targets", []):
            if t.get("expr"):
                exprs.append(t["expr"])

# The rules' expr fields. PyYAML when present; else the template's own
# layout: "expr: <one line>" or "expr: |-" and more-indented lines.
with open(rules_file) as f:
    text = f.read()
try:
    import yaml
    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "expr" and isinstance(v, str):
                    exprs.append(v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    for doc in yaml.safe_load_all(text):
        walk(doc)
except ImportError:
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(?:- )?expr:\s*(.*)$", lines[i])
        i += 1
        if not m:
            continue
        indent, val = len(m.group(1)), m.group(2)
        if val in ("|", "|-", ">", ">-"):
            block = []
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                block.append(lines[i].strip()); i += 1
            val = " ".join(b for b in block if b)
        exprs.append(val)

interval = re.compile(r"\$(?:__rate_interval|__interval|__range)\b|\$\{(?:__rate_interval|__interval|__range)(?::\w+)?\}")
var = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[\w+\]\]")
seen = set()
for e in exprs:
    e = " ".join(e.split())  # newlines and indentation
    e = interval.sub("5m", e)
    e = re.sub(r'(=~|!~)\s*"((?:[^"\\]|\\.)*)"', lambda m: m.group(1) + '"' + var.sub(".*", m.group(2)) + '"', e)
    e = var.sub("x", e)
    if e and e not in seen:
        seen.add(e)
        print(e)
PY

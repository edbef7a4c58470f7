#!/usr/bin/env bash
# Checks the chart's PrometheusRule with promtool: renders it (release t in
# namespace ops, so <fullname> is t-gantry), writes its spec as a rules file,
# runs `promtool check rules` on it and `promtool test rules` with
# test/alerts/gantry_test.yaml (which reads the rules as gantry-rules.yaml,
# next to it), and parses every expression hack/dashboard-exprs.sh prints
# (dashboards and rules) as a recording rule.
# Usage: hack/check-alerts.sh [path/to/helm]
set -euo pipefail
cd "$(dirname "$0")/.."
helm=${1:-helm}
chart=${CHART:-charts/gantry}
command -v promtool >/dev/null || { echo "check-alerts: promtool not found" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$helm" template t "$chart" --kube-version 1.36.3 -n ops --set metrics.prometheusRule.enabled=true \
  --show-only templates/prometheusrule.yaml >"$tmp/prometheusrule.yaml"
# The object's spec, dedented: "groups:" and below.
if python3 -c 'import yaml' 2>/dev/null; then
  python3 -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
assert len(docs) == 1 and docs[0]["kind"] == "PrometheusRule", "one PrometheusRule expected"
yaml.safe_dump(docs[0]["spec"], sys.stdout, sort_keys=False, width=1000)' "$tmp/prometheusrule.yaml" >"$tmp/gantry-rules.yaml"
else
  awk '/^[^ #-]/ { spec = ($0 == "spec:"); next } spec { sub(/^  /, ""); print }' \
    "$tmp/prometheusrule.yaml" >"$tmp/gantry-rules.yaml"
fi
grep -q '^groups:' "$tmp/gantry-rules.yaml" || { echo "check-alerts: no groups in the rendered PrometheusRule" >&2; exit 1; }
promtool check rules "$tmp/gantry-rules.yaml"
cp test/alerts/gantry_test.yaml "$tmp/"
promtool test rules "$tmp/gantry_test.yaml"

# Every dashboard and rule expression parses.
RULES="$tmp/prometheusrule.yaml" CHART="$chart" hack/dashboard-exprs.sh "$helm" >"$tmp/exprs"
python3 - "$tmp/exprs" >"$tmp/exprs-rules.yaml" <<'PY'
import json, sys
print("groups:\n- name: exprs\n  rules:")
for i, line in enumerate(l for l in open(sys.argv[1]).read().splitlines() if l):
    print("  - record: expr_%d\n    expr: %s" % (i, json.dumps(line)))
PY
n=$(grep -c . "$tmp/exprs")
[ "$n" -gt 0 ] || { echo "check-alerts: no expressions printed" >&2; exit 1; }
promtool check rules "$tmp/exprs-rules.yaml" >/dev/null || { promtool check rules "$tmp/exprs-rules.yaml"; exit 1; }
echo "check-alerts: ok ($n expressions parse)"

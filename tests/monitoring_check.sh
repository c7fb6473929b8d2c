#!/usr/bin/env bash
# docs/monitoring/: the Prometheus rules pass `promtool check rules` and their tests (`promtool test
# rules jetfan.rules.test.yml`), the Grafana dashboard is JSON
# with unique panel ids, and every jetfan or process metric either of them names is one jetfan
# exports (the table in daemon/CONTROL.md). Exits 77 (skipped) without promtool.
set -euo pipefail
root=${1:?usage: monitoring_check.sh REPO_ROOT}
dir=$root/docs/monitoring
if ! command -v promtool > /dev/null; then
  echo "skipped: promtool not found (Debian package prometheus; scripts/deps.sh installs it)"
  exit 77
fi
promtool check rules "$dir/jetfan.rules.yml"
promtool test rules "$dir/jetfan.rules.test.yml"  # the alerts fire on what they are for
python3 - "$dir/jetfan-dashboard.json" "$dir/jetfan.rules.yml" "$root/daemon/CONTROL.md" << 'PY'
import json, re, sys
dashboard_path, rules_path, control_path = sys.argv[1:4]
with open(dashboard_path) as f:
    dashboard = json.load(f)
ids = [p["id"] for p in dashboard["panels"]]
assert len(ids) == len(set(ids)), f"{dashboard_path}: panel ids repeat: {ids}"
exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
with open(rules_path) as f:
    exprs.append(f.read())
with open(control_path) as f:
    exported = set(re.findall(r"^\| `((?:jetfan|process)_[a-z_]+)", f.read(), re.M))
named = {re.sub(r"_(bucket|sum|count)$", "", m) for e in exprs for m in re.findall(r"\b(?:jetfan|process)_[a-z_]+", e)}
unknown = sorted(n for n in named if n not in exported)
if unknown:
    sys.exit(f"named in docs/monitoring/ but not exported (daemon/CONTROL.md): {', '.join(unknown)}")
print(f"docs/monitoring/: {len(dashboard['panels'])} panels, {len(named)} metrics, all exported")
PY

#!/usr/bin/env python3
"""`promtool check rules` on deploy/prometheus/sandgate-rules.yml, and on every PromQL query of
deploy/grafana/sandgate-dashboard.json made into a recording rule (promtool parses each one as
Prometheus would; Grafana's $variables are replaced by what they can stand for first).

Usage: promtool_check.py REPO_ROOT. Without promtool (Debian's `prometheus` package, installed
by scripts/install-deps.sh) it reports a skip — or fails where SANDGATE_TESTS_REQUIRE names
"promtool" (or "all")."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP_MARKER = "SANDGATE-TEST-SKIPPED"


def required(capability):
    listed = os.environ.get("SANDGATE_TESTS_REQUIRE", "")
    names = [n.strip() for n in listed.split(",")]
    return capability in names or "all" in names


def dashboard_queries(path):
    """Every target's expr in the dashboard (rows' nested panels too), with its panel's title."""
    with open(path, encoding="utf-8") as f:
        dashboard = json.load(f)
    queries = []

    def walk(panels):
        for panel in panels:
            walk(panel.get("panels", []))
            for target in panel.get("targets", []):
                queries.append((panel.get("title", "?"), target["expr"]))

    walk(dashboard["panels"])
    return queries


def check(promtool, rules_file):
    run = subprocess.run([promtool, "check", "rules", rules_file], capture_output=True, text=True)
    sys.stdout.write(run.stdout + run.stderr)
    return run.returncode == 0


def main():
    root = sys.argv[1]
    promtool = shutil.which("promtool")
    if promtool is None:
        reason = "promtool is not installed (Debian's prometheus package)"
        if required("promtool"):
            print("SANDGATE_TESTS_REQUIRE names 'promtool', which is missing: " + reason)
            return 1
        print(f"{SKIP_MARKER} (promtool): {reason}")
        return 0
    ok = check(promtool, os.path.join(root, "deploy/prometheus/sandgate-rules.yml"))
    queries = dashboard_queries(os.path.join(root, "deploy/grafana/sandgate-dashboard.json"))
    if not queries:
        print("the dashboard has no queries")
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        as_rules = os.path.join(scratch, "dashboard-queries.yml")
        with open(as_rules, "w", encoding="utf-8") as f:
            f.write("groups:\n  - name: dashboard\n    rules:\n")
            for i, (title, expr) in enumerate(queries):
                expr = expr.replace("$instance", ".*")
                f.write(f"      - record: dashboard:query_{i}\n")
                f.write(f"        expr: {json.dumps(expr)}\n")
        print(f"the dashboard's {len(queries)} queries:")
        ok = check(promtool, as_rules) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

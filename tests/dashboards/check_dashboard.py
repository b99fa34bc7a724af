#!/usr/bin/env python3
"""Checks a Grafana dashboard without Grafana (none is packaged for Debian): the dashboard-linter rules that
matter (datasource variable, every panel and target on it, $__rate_interval in rate(), units, titles and
descriptions, counters only inside rate/irate/increase), our own layout rules (unique ids, grid inside 24
columns, no overlaps, every $variable defined), then PromQL syntax through `promtool check rules`, and with
--prometheus URL every query against a live server (status success, and a non-empty result for --require)."""
import argparse, json, os, re, subprocess, sys, tempfile, urllib.parse, urllib.request

UNITS = {"s", "ms", "µs", "ns", "bytes", "decbytes", "Bps", "binBps", "bps", "GBs", "percentunit", "short", "ops", "reqps", "none"}


def substitute(expr):
    expr = expr.replace("$__rate_interval", "1m").replace("$__interval", "1m").replace("$__range", "1h")
    return re.sub(r"\$\{?(\w+)(:\w+)?\}?", ".*", expr)


def structure_errors(d):
    errors = []
    variables = {v["name"] for v in d.get("templating", {}).get("list", [])}
    builtin = {"__rate_interval", "__interval", "__range"}
    if not any(v.get("type") == "datasource" for v in d["templating"]["list"]):
        errors.append("no datasource template variable")
    if not d.get("uid"):
        errors.append("dashboard has no uid")
    ids, cells = set(), {}
    for p in d["panels"]:
        where = f"panel {p.get('id')} '{p.get('title')}'"
        if p.get("id") in ids:
            errors.append(f"{where}: duplicate id")
        ids.add(p.get("id"))
        if not p.get("title") or not p.get("description"):
            errors.append(f"{where}: needs a title and a description")
        if p.get("datasource") != {"type": "prometheus", "uid": "${datasource}"}:
            errors.append(f"{where}: datasource must be the $datasource variable")
        unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit")
        if unit not in UNITS:
            errors.append(f"{where}: unit '{unit}' not in the allow-list")
        g = p["gridPos"]
        if g["x"] < 0 or g["x"] + g["w"] > 24:
            errors.append(f"{where}: gridPos outside the 24-column grid")
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                if (x, y) in cells:
                    errors.append(f"{where}: overlaps panel {cells[(x, y)]}")
                    break
                cells[(x, y)] = p["id"]
        if not p.get("targets"):
            errors.append(f"{where}: no targets")
        for t in p.get("targets", []):
            e = t["expr"]
            if t.get("datasource") != p.get("datasource"):
                errors.append(f"{where}: target datasource differs from the panel's")
            for m in re.finditer(r"\b(rate|irate|increase)\(([^\[]*)\[([^\]]+)\]", e):
                if m.group(3) != "$__rate_interval":
                    errors.append(f"{where}: {m.group(1)}() must use [$__rate_interval]")
            for m in re.finditer(r"\b(\w+_total)\b", e):
                before = e[: m.start()]
                if not re.search(r"\b(rate|irate|increase)\([^()]*$", before):
                    errors.append(f"{where}: counter {m.group(1)} outside rate/irate/increase")
            for v in re.findall(r"\$\{?(\w+)", e):
                if v not in variables and v not in builtin:
                    errors.append(f"{where}: undefined variable ${v}")
            if "job=~" not in e or "instance=~" not in e:
                errors.append(f"{where}: every selector should match on job and instance")
    return errors


def promtool_errors(d):
    rules = [{"record": f"ncclscope:dashboard_panel{p['id']}_{t['refId']}", "expr": substitute(t["expr"])}
             for p in d["panels"] for t in p["targets"]]
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)  # JSON is YAML
    try:
        r = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    return [] if r.returncode == 0 else [f"promtool: {r.stdout}{r.stderr}"]


def live_errors(d, url, required):
    errors = []
    for p in d["panels"]:
        for t in p["targets"]:
            q = urllib.parse.urlencode({"query": substitute(t["expr"])})
            body = json.load(urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10))
            if body.get("status") != "success":
                errors.append(f"panel {p['id']}: query failed: {body}")
            elif p["id"] in required and not body["data"]["result"]:
                errors.append(f"panel {p['id']} '{p['title']}': empty result against a live job")
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dashboard")
    ap.add_argument("--prometheus")
    ap.add_argument("--require", default="", help="comma-separated panel ids that must return data live")
    a = ap.parse_args()
    d = json.load(open(a.dashboard))
    errors = structure_errors(d)
    errors += promtool_errors(d)
    if a.prometheus:
        errors += live_errors(d, a.prometheus, {int(x) for x in a.require.split(",") if x})
    for e in errors:
        print("FAIL:", e)
    n = sum(len(p["targets"]) for p in d["panels"])
    print(f"{a.dashboard}: {len(d['panels'])} panels, {n} queries, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

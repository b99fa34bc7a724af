#!/usr/bin/env python3
"""Checks a Grafana dashboard without Grafana (none is packaged for Debian): the dashboard-linter rules that
matter (datasource variable, every panel and target on it, $__rate_interval in rate(), units, titles and
descriptions, counters only inside rate/irate/increase), our own layout rules (unique ids, grid inside 24
columns, no overlaps, every $variable defined, in queries, variable queries and links), clean import
(__inputs declares every ${DS_…} used, __requires lists Grafana, Prometheus and every panel type), label rules
(every ncclscope selector filters on our own ncclscope_job label through $job, every node_exporter selector on
host through $host, no selector or variable on Prometheus's scrape labels job/instance), every recorded series
(ncclscope:…) defined by a recording rule in ../rules (or --rules), then PromQL syntax through
`promtool check rules`, and with --prometheus URL every query and every variable against a live server (status
success, a non-empty result for --require, values for every query variable). --variable NAME prints the values
a variable takes on the live server, one a line. Joins that work as shipped: the DCGM link passes only the DCGM
dashboard's own variables (instance, gpu) from labels its query has, no dashboard link relies on a tag, every
per-rank time series is limited by topk($topk), legends name communicators by comm_name joined from
ncclscope:comm_name (never the comm hash), and DCGM series are joined on gpu_uuid."""
import argparse, json, os, re, subprocess, sys, tempfile, urllib.parse, urllib.request

BUILTIN_VARS = {"__rate_interval", "__interval", "__range", "__data", "__url_time_range", "__value", "__field",
                "__series", "__from", "__to", "__dashboard"}
SCRAPE_LABEL_FILTER = re.compile(r"(?<![\w])(job|instance)\s*(=~|!~|=|!=)")
SELECTOR = re.compile(r"(?<![\w:])((?:ncclscope[_:]|node_)[\w:]*)(\{[^}]*\})")
FAMILY = re.compile(r"(?<![\w:])((?:ncclscope[_:]|node_)[\w:]*)(?![\w:{])")
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
LABEL_VALUES = re.compile(r"^label_values\((.+),\s*(\w+)\)$")
UNITS = {"s", "ms", "µs", "ns", "bytes", "decbytes", "Bps", "binBps", "bps", "GBs", "percentunit", "short", "ops", "reqps", "none"}


CUSTOM = {"topk": "10"}  # custom variables: their current value (set from the dashboard in main)
DCGM_DASHBOARD_VARIABLES = {"instance", "gpu"}  # NVIDIA's dcgm-exporter dashboard (grafana/ in its repository)


def substitute(expr):
    for name, value in CUSTOM.items():
        expr = re.sub(r"\$\{?" + name + r"\b\}?", value, expr)
    expr = expr.replace("$__rate_interval", "1m").replace("$__interval", "1m").replace("$__range", "1h")
    return re.sub(r"\$\{?([A-Za-z_]\w*)(:\w+)?\}?", ".*", expr)  # not $1 of label_replace


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
            for v in re.findall(r"\$\{?([A-Za-z_]\w*)", e):
                if v not in variables and v not in builtin:
                    errors.append(f"{where}: undefined variable ${v}")
            errors += [f"{where}: {x}" for x in selector_errors(e)]
    errors += variable_errors(d, variables | builtin)
    errors += import_errors(d)
    errors += link_errors(d, variables)
    return errors


def selector_errors(e):
    """Our own labels only: ncclscope series by ncclscope_job ($job), node_exporter's by host ($host)."""
    errors = []
    if SCRAPE_LABEL_FILTER.search(e):
        errors.append("filters on Prometheus's scrape label job/instance; use ncclscope_job/host")
    # A family named anywhere but in label lists and strings must have matchers.
    bare = re.sub(r'"[^"]*"', '""', GROUPING.sub("", re.sub(r"\{[^}]*\}", "{}", e)))
    for m in FAMILY.finditer(bare):
        errors.append(f"selector {m.group(1)} without matchers")
    for m in SELECTOR.finditer(e):
        name, matchers = m.group(1), m.group(2)
        want = 'host=~"$host"' if name.startswith("node_") else 'ncclscope_job=~"$job"'
        if want not in matchers:
            errors.append(f"selector {name}{matchers} does not filter on {want}")
    return errors


def variable_errors(d, defined):
    errors = []
    for v in d["templating"]["list"]:
        if v.get("type") != "query":
            continue
        q = v["query"]["query"] if isinstance(v.get("query"), dict) else v.get("query", "")
        m = LABEL_VALUES.match(q)
        if not m:
            errors.append(f"variable {v['name']}: query '{q}' is not label_values(SELECTOR, LABEL)")
            continue
        if m.group(2) in ("job", "instance"):
            errors.append(f"variable {v['name']}: takes Prometheus's scrape label '{m.group(2)}', not ours")
        if not m.group(1).startswith("ncclscope_"):
            errors.append(f"variable {v['name']}: values from '{m.group(1)}', not an ncclscope family")
        if v.get("datasource") != {"type": "prometheus", "uid": "${datasource}"}:
            errors.append(f"variable {v['name']}: datasource must be the $datasource variable")
        for used in re.findall(r"\$\{?([A-Za-z_]\w*)", q):
            if used not in defined:
                errors.append(f"variable {v['name']}: undefined variable ${used}")
    job = [v for v in d["templating"]["list"] if v["name"] == "job"]
    if not job or LABEL_VALUES.match(job[0]["query"]["query"]).group(2) != "ncclscope_job":
        errors.append("variable job must take the values of our ncclscope_job label")
    return errors


def import_errors(d):
    """What Grafana's import needs: every ${DS_…} declared in __inputs, every panel type in __requires."""
    errors = []
    inputs = {i.get("name"): i for i in d.get("__inputs", [])}
    if not any(i.get("type") == "datasource" and i.get("pluginId") == "prometheus" for i in inputs.values()):
        errors.append("__inputs declares no prometheus datasource")
    for used in set(re.findall(r"\$\{(DS_\w+)\}", json.dumps(d))):
        if used not in inputs:
            errors.append(f"${{{used}}} is used but not declared in __inputs")
    requires = {(r.get("type"), r.get("id")) for r in d.get("__requires", [])}
    wanted = {("grafana", "grafana"), ("datasource", "prometheus")} | {("panel", p["type"]) for p in d["panels"]}
    for t, i in sorted(wanted - requires):
        errors.append(f"__requires lacks {t} '{i}'")
    return errors


def link_errors(d, variables):
    """Variables in link titles and URLs (dashboard links, panel links, field links) are defined."""
    errors = []
    def walk(node, where):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "links" and isinstance(v, list):
                    for link in v:
                        for text in (link.get("url", ""), link.get("title", "")):
                            for used in re.findall(r"\$\{?([A-Za-z_]\w*)", text):
                                if used not in variables and used not in BUILTIN_VARS:
                                    errors.append(f"{where}: link '{link.get('title')}' uses undefined ${used}")
                else:
                    walk(v, where)
        elif isinstance(node, list):
            for x in node:
                walk(x, where)
    walk({"links": d.get("links", [])}, "dashboard")
    for p in d["panels"]:
        walk(p, f"panel {p.get('id')} '{p.get('title')}'")
    return errors


def join_errors(d):
    """The joins with DCGM, the communicator names and the per-rank limits work as shipped."""
    errors = []
    for link in d.get("links", []):
        if link.get("type") == "dashboards" or link.get("tags"):
            errors.append(f"dashboard link '{link.get('title')}' lists dashboards by tag (NVIDIA's DCGM dashboard has none)")
    for p in d["panels"]:
        where = f"panel {p.get('id')} '{p.get('title')}'"
        exprs = " ".join(t["expr"] for t in p["targets"])
        for link in re.findall(r'"url": "([^"]*dcgm_dashboard[^"]*)"', json.dumps(p)):
            passed = set(re.findall(r"var-(\w+)=", link))
            if not passed or passed - DCGM_DASHBOARD_VARIABLES:
                errors.append(f"{where}: DCGM link passes {sorted(passed)}, not the DCGM dashboard's variables {sorted(DCGM_DASHBOARD_VARIABLES)}")
            for field in re.findall(r"__data\.fields\.(\w+)", link):
                if not re.search(r"\b%s\b" % field, exprs):
                    errors.append(f"{where}: DCGM link reads field {field}, which its query does not produce")
        if "DCGM_" in exprs and not re.search(r"on \(gpu_uuid\)", exprs):
            errors.append(f"{where}: DCGM series must be joined on gpu_uuid")
        for t in p["targets"]:
            legend, e = t.get("legendFormat", ""), t["expr"]
            if "{{comm}}" in legend:
                errors.append(f"{where}: legend shows the communicator hash {{{{comm}}}}; use {{{{comm_name}}}}")
            if "{{comm_name}}" in legend and "group_left (comm_name) ncclscope:comm_name" not in e:
                errors.append(f"{where}: legend uses comm_name but the query does not join ncclscope:comm_name")
            if p.get("type") == "timeseries" and re.search(r"\{\{(rank|global_rank)\}\}", legend) and "topk($topk," not in e:
                errors.append(f"{where}: per-rank series without topk($topk, ...)")
    return errors


def recorded_series_errors(d, rules_dir):
    """Every recorded series (ncclscope:…) a query reads is defined by a recording rule of rules/."""
    if not os.path.isdir(rules_dir):
        return [f"no recording rules folder {rules_dir} (--rules)"]
    recorded = set()
    for name in sorted(os.listdir(rules_dir)):
        if name.endswith(".yml"):
            recorded |= set(re.findall(r"^\s*-?\s*record:\s*(\S+)", open(os.path.join(rules_dir, name)).read(), re.M))
    errors = []
    for p in d["panels"]:
        for t in p["targets"]:
            for used in re.findall(r"(?<![\w:])(ncclscope:[\w:]+)", t["expr"]):
                if used not in recorded:
                    errors.append(f"panel {p['id']}: {used} is recorded by no rule in {rules_dir}")
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


def variable_values(d, url, name):
    """The values a query variable takes on the live server (the other variables at All)."""
    v = next(v for v in d["templating"]["list"] if v["name"] == name)
    m = LABEL_VALUES.match(v["query"]["query"])
    q = urllib.parse.urlencode({"match[]": substitute(m.group(1))})
    body = json.load(urllib.request.urlopen(f"{url}/api/v1/label/{m.group(2)}/values?{q}", timeout=10))
    if body.get("status") != "success":
        raise RuntimeError(f"variable {name}: {body}")
    return body["data"]


def live_variable_errors(d, url):
    errors = []
    for v in d["templating"]["list"]:
        if v.get("type") == "query" and not variable_values(d, url, v["name"]):
            errors.append(f"variable {v['name']}: no values against a live job")
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dashboard")
    ap.add_argument("--prometheus")
    ap.add_argument("--require", default="", help="comma-separated panel ids that must return data live")
    ap.add_argument("--variable", help="print the values this variable takes on the live --prometheus server")
    ap.add_argument("--rules", help="folder of the recording rules the dashboard reads (default: ../rules from it)")
    a = ap.parse_args()
    d = json.load(open(a.dashboard))
    if a.variable:
        if not a.prometheus:
            ap.error("--variable needs --prometheus")
        print("\n".join(variable_values(d, a.prometheus, a.variable)))
        return 0
    for v in d["templating"]["list"]:
        if v.get("type") == "custom":
            CUSTOM[v["name"]] = str(v.get("current", {}).get("value", CUSTOM.get(v["name"], "")))
    errors = structure_errors(d)
    errors += join_errors(d)
    rules_dir = a.rules or os.path.join(os.path.dirname(os.path.abspath(a.dashboard)), "..", "rules")
    errors += recorded_series_errors(d, rules_dir)
    errors += promtool_errors(d)
    if a.prometheus:
        errors += live_errors(d, a.prometheus, {int(x) for x in a.require.split(",") if x})
        errors += live_variable_errors(d, a.prometheus)
    for e in errors:
        print("FAIL:", e)
    n = sum(len(p["targets"]) for p in d["panels"])
    print(f"{a.dashboard}: {len(d['panels'])} panels, {n} queries, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The mixin imported the way kube-prometheus imports one: vendored by jsonnet-bundler (`jb install`; emulated here,
Debian has no jb: mixin/ copied to vendor/ncclscope-mixin beside a jsonnetfile.json and lock naming it), evaluated
with `jsonnet -J vendor` from a file like kube-prometheus' own, and a PrometheusRule rendered from it as
kube-prometheus renders one. Asserts:
  - the standard shape: prometheusAlerts and prometheusRules as {groups}, grafanaDashboards by file name, the same
    groups as the checked-in rules/*.yml, every alert and recording rule of them, the dashboard;
  - a _config override (30 s scrapes, scrapeJob) changes the windows and the selector, not the recording names
    (nor, without scrapeJob, the dashboard);
  - the selector of scrapeJob matches a plain job and prometheus-operator's <namespace>/<name>, not another job
    (promtool unit test on the rendered rules);
  - legacyRecordingNames adds the old window-named series; promtool accepts every rendered PrometheusRule's groups.
Usage: check_mixin_vendored.py REPO_ROOT"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402

KUBE_PROMETHEUS_LIKE = """
local m = (import 'ncclscope-mixin/mixin.libsonnet') + { _config+:: %s };
// As kube-prometheus' addMixin: the hidden fields, each taken if the mixin has it.
local groups(field) = if std.objectHasAll(m, field) then m[field].groups else [];
{
  alerts: m.prometheusAlerts,
  rules: m.prometheusRules,
  dashboards: m.grafanaDashboards,
  prometheusRule: {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'ncclscope-mixin-rules', namespace: 'monitoring' },
    spec: { groups: groups('prometheusRules') + groups('prometheusAlerts') },
  },
}
"""

checks = Checks(passed="PASS: ", failed="FAIL: ")
check = checks.check


def vendor(root, tmp):
    """What `jb install` leaves: the dependency's files under vendor/ and the two jsonnetfiles naming it."""
    shutil.copytree(os.path.join(root, "mixin"), os.path.join(tmp, "vendor", "ncclscope-mixin"))
    dep = {"source": {"git": {"remote": "https://example.org/ncclscope.git", "subdir": "mixin"}},
           "version": "main", "name": "ncclscope-mixin"}
    with open(os.path.join(tmp, "jsonnetfile.json"), "w") as f:
        json.dump({"version": 1, "dependencies": [dep], "legacyImports": True}, f, indent=2)
    with open(os.path.join(tmp, "jsonnetfile.lock.json"), "w") as f:
        json.dump({"version": 1, "dependencies": [dict(dep, version="0" * 40, sum="")], "legacyImports": False}, f)


def evaluate(tmp, name, config):
    path = os.path.join(tmp, name + ".jsonnet")
    with open(path, "w") as f:
        f.write(KUBE_PROMETHEUS_LIKE % config)
    r = subprocess.run(["jsonnet", "-J", os.path.join(tmp, "vendor"), path], capture_output=True, text=True,
                       cwd=tmp)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: jsonnet -J vendor {name}.jsonnet: {r.stderr.strip()[:2000]}")
    return json.loads(r.stdout)


def promtool(args):
    r = subprocess.run(["promtool"] + args, capture_output=True, text=True)
    return r.returncode == 0, (r.stdout + r.stderr).strip()


def rules_of(groups, key):
    return [r[key] for g in groups for r in g["rules"] if key in r]


def exprs(groups):
    return "\n".join(r["expr"] for g in groups for r in g["rules"])


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    for tool in ("jsonnet", "promtool"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} is not installed (Debian packages jsonnet, prometheus)")
            return 77
    jf = json.load(open(os.path.join(root, "mixin", "jsonnetfile.json")))
    check(jf.get("dependencies") == [], "mixin/jsonnetfile.json exists and names no dependency (the mixin imports "
          "only its own files)")
    shipped = []
    for name in ("recording", "alerts", "hang"):
        shipped += yaml.safe_load(open(os.path.join(root, "rules", f"ncclscope-{name}.yml")))["groups"]

    with tempfile.TemporaryDirectory(prefix="ncclscope-vendored-") as tmp:
        vendor(root, tmp)
        base = evaluate(tmp, "default", "{}")
        site = evaluate(tmp, "site", "{scrapeIntervalSeconds: 30, scrapeJob: 'ncclscope'}")
        legacy = evaluate(tmp, "legacy", "{scrapeIntervalSeconds: 30, legacyRecordingNames: true}")

        # The shape.
        check(set(base["alerts"]) == {"groups"} and set(base["rules"]) == {"groups"},
              "prometheusAlerts and prometheusRules are {groups: [...]}")
        alert_groups = [g["name"] for g in base["alerts"]["groups"]]
        rule_groups = [g["name"] for g in base["rules"]["groups"]]
        check(rule_groups == ["ncclscope.recording"], f"prometheusRules holds the recording group ({rule_groups})")
        check({"ncclscope.alerts", "ncclscope.alerts.slow", "ncclscope.links", "ncclscope.hang"} <= set(alert_groups),
              f"prometheusAlerts holds the alert and hang groups ({alert_groups})")
        check(not rules_of(base["rules"]["groups"], "alert"), "prometheusRules holds no alert")
        alerts = rules_of(base["alerts"]["groups"], "alert")
        for a in ("NcclscopeStraggler", "NcclscopeCommStalled", "NcclscopeHang", "NcclscopeHangPage",
                  "NcclscopeNicDegraded"):
            check(a in alerts, f"alert {a} is in prometheusAlerts")
        check(base["prometheusRule"]["spec"]["groups"] == shipped,
              "the rendered PrometheusRule holds exactly the groups of the checked-in rules/*.yml")
        dash = base["dashboards"].get("ncclscope-overview.json", {})
        check(list(base["dashboards"]) == ["ncclscope-overview.json"] and dash.get("uid") == "ncclscope-overview"
              and len(dash.get("panels", [])) > 10, "grafanaDashboards has ncclscope-overview.json with its panels")

        # The override: windows follow it, names do not.
        names = rules_of(base["rules"]["groups"], "record")
        site_names = rules_of(site["rules"]["groups"], "record")
        check(names == site_names, f"the recording names are the same at 5 s and 30 s scrapes ({len(names)} names)")
        windowed = [n for n in names + rules_of(base["alerts"]["groups"], "record") if re.search(r":rate\d", n)]
        check(not windowed, f"no recording name encodes a window ({windowed})")
        check("[1m]" in exprs(base["rules"]["groups"]) and "[2m]" not in exprs(base["rules"]["groups"]),
              "the default recording rules rate over 1m")
        check("[2m]" in exprs(site["rules"]["groups"]) and "[1m]" not in exprs(site["rules"]["groups"]),
              "at 30 s scrapes the recording rules rate over 2m")
        check(legacy["dashboards"] == base["dashboards"],
              "the dashboard generated for 30 s scrapes is the one for 5 s (its queries read the same names)")
        hang = {g["name"]: g.get("interval") for g in site["alerts"]["groups"]}
        check(hang.get("ncclscope.hang") == "30s", f"at 30 s scrapes the hang group runs every 30s ({hang})")
        check('job=~"(.+/)?ncclscope"' in exprs(site["prometheusRule"]["spec"]["groups"])
              and "job=" not in exprs(base["prometheusRule"]["spec"]["groups"]),
              "scrapeJob puts job=~\"(.+/)?ncclscope\" on the series read; the default no job matcher")
        leg = legacy["rules"]["groups"]
        check([g["name"] for g in leg] == ["ncclscope.recording", "ncclscope.recording.legacy"]
              and "ncclscope:comm_straggler:rate2m" in rules_of(leg, "record"),
              "legacyRecordingNames records the old names too (ncclscope:comm_straggler:rate2m at 30 s)")

        # promtool on every rendered PrometheusRule's groups (JSON is YAML).
        for name, out in (("default", base), ("site", site), ("legacy", legacy)):
            path = os.path.join(tmp, f"{name}-rules.yml")
            with open(path, "w") as f:
                json.dump(out["prometheusRule"]["spec"], f)
            ok, log = promtool(["check", "rules", path])
            check(ok, f"promtool check rules accepts the {name} PrometheusRule's groups ({log.splitlines()[-1]})")

        # The scrapeJob selector against targets of a plain scrape config, of a PodMonitor, and of another job.
        up = 'up{job="%s",instance="%s",ncclscope_job="j"}'
        test = {"rule_files": [os.path.join(tmp, "site-rules.yml")], "evaluation_interval": "30s", "tests": [{
            "interval": "30s",
            "input_series": [{"series": up % ("ncclscope", "a:1"), "values": "1x10"},
                             {"series": up % ("monitoring/ncclscope", "b:1"), "values": "1x10"},
                             {"series": up % ("gpu-jobs/ncclscope", "c:1"), "values": "0x10"},
                             {"series": up % ("other-ncclscope", "d:1"), "values": "1x10"},
                             {"series": up % ("ncclscope-other", "e:1"), "values": "1x10"}],
            "promql_expr_test": [
                {"expr": "ncclscope:job_targets", "eval_time": "2m",
                 "exp_samples": [{"labels": 'ncclscope:job_targets{ncclscope_job="j"}', "value": 3}]},
                {"expr": "ncclscope:job_targets_down", "eval_time": "2m",
                 "exp_samples": [{"labels": 'ncclscope:job_targets_down{ncclscope_job="j"}', "value": 1}]}]}]}
        path = os.path.join(tmp, "selector_test.yml")
        with open(path, "w") as f:
            json.dump(test, f)
        ok, log = promtool(["test", "rules", path])
        check(ok, "scrapeJob's selector counts the targets of job ncclscope and of <namespace>/ncclscope, not "
              "other-ncclscope or ncclscope-other" + ("" if ok else "\n" + log[-2000:]))

    return checks.summary(passed="PASS: the vendored mixin evaluates, renders and checks as kube-prometheus would "
                                 "use it")


if __name__ == "__main__":
    sys.exit(main())

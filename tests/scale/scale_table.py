#!/usr/bin/env python3
"""The engine x shape x rule group table of docs/scaling.md from rule_eval_scale.py --json files.

  tests/scale/scale_table.py RUN.json...   (scale_matrix.sh writes them)

One row per run, phase and group: evaluations, median and slowest (the first after a reload, which warms
caches, left out), iterations the engine missed; per run and phase the engine's CPU (cores, and CPU seconds per
evaluation of any of its groups); per run the store's peak RSS, onset to NcclscopeHang and whether it named the
culprit.
"""
import json
import sys


def shape(run):
    n = f"{run['ranks']:,} × {run['comms']}"
    return f"{run['jobs']} × {n}" if run.get("jobs", 1) > 1 else n


def missed(metrics, group):
    """Iterations missed, from vmalert's or Prometheus's own counter (keys: group, or file;group)."""
    for key, m in (metrics or {}).items():
        if key == group or key.endswith(";" + group):
            return int(m.get("vmalert_iteration_missed_total", m.get("prometheus_rule_group_iterations_missed_total", 0)))
    return "–"


def rows(run):
    alert = run.get("hang_alert_s")
    alert = "–" if alert is None else f"{alert:.1f} s"
    rss = run.get("store_rss_kib", {}).get("VmHWM", 0) / 2**20
    for phase, groups in run["phases"].items():
        for group, s in groups.items():
            if not isinstance(s, dict) or "median_s" not in s:
                continue
            yield (f"| {run['engine']} | {shape(run)} | {'hang file alone' if phase == 'hang' else 'all files'} | "
                   f"`{group}` | {s['evaluations']} | {s['median_s']:.2f} / {s['max_s']:.2f} s | "
                   f"{missed(groups.get('group_metrics'), group)} | {groups['engine_cpu_per_s']:.2f} / "
                   f"{groups['cpu_s_per_evaluation']:.2f} | "
                   f"{rss:.2f} GiB | {alert} | {run.get('culprit_named', '–')} |")


def main():
    print("| engine | shape | phase | group | evaluations | median / max | missed | engine cores / CPU s per "
          "evaluation (phase) | store RSS peak | onset → `NcclscopeHang` | culprit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sys.argv[1:]:
        with open(path) as f:
            for row in rows(json.load(f)):
                print(row)


if __name__ == "__main__":
    main()

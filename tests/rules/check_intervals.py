#!/usr/bin/env python3
"""The rules at 15 s and 60 s scrape intervals: for each, generates rules/ from mixin/ with that
scrapeIntervalSeconds (scripts/gen-mixin.sh) and runs `promtool test rules` on unit tests written here with
series sampled at that interval (promtool `interval:` and `evaluation_interval:` both the scrape interval):
  - the recorded straggler series has its value right after a missed scrape, and NcclscopeStraggler fires
    (rate windows of >= 4 scrapes: with a window of 2 scrapes a missed scrape leaves one sample, no rate);
  - a rank whose target fails one scrape is not named by NcclscopeHang (the failed-scrape window spans three
    intervals, two failed scrapes in a row needed), one whose target stays down is named, class process.
Controls, which must FAIL the same tests: the 60 s rules with today's 1 m rate window, and with a 10 s window.
"""
import os, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generated_rules import have_tools, labels, run as run_generated  # noqa: E402

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")



def ident(job, r, comm=None, rank=None):
    d = dict(job="ncclscope", instance=f"h{r}:1", ncclscope_job=job, host=f"h{r}", global_rank=str(r))
    if comm:
        d.update(comm=comm, rank=str(rank if rank is not None else r))
    return d


def counter(step, n, missed=10):
    """A counter rising by step per scrape, one scrape missed (sample `missed`), as a real scrape sometimes is."""
    return " ".join("_" if k == missed else f"{k * step:g}" for k in range(n))


def straggler_test(s):
    n = 40
    series = []
    for r in range(3):
        i = ident("st", r, "0x5")
        per_op = 0.01 if r == 1 else 0.1  # rank 1 spends the least time per collective: the others wait for it
        series.append({"series": "ncclscope_comm_operations_total" + labels(**i, kind="coll", func="AllReduce"),
                       "values": counter(s, n)})
        series.append({"series": "ncclscope_comm_operation_seconds_total" + labels(**i, kind="coll"),
                       "values": counter(per_op * s, n)})
    late = ident("st", 1, "0x5")
    return {
        "interval": f"{s}s",
        "input_series": series,
        "promql_expr_test": [
            {"expr": "round(ncclscope:comm_straggler:rate, 0.000001)", "eval_time": f"{10 * s}s",
             "exp_samples": [{"labels": labels(**late, kind="coll"), "value": 0.09}]},
            {"expr": 'count by (alertname, comm, global_rank) (ALERTS{alertname="NcclscopeStraggler", alertstate="firing"})',
             "eval_time": f"{n * s - s}s",
             "exp_samples": [{"labels": labels(alertname="NcclscopeStraggler", comm="0x5", global_rank="1"), "value": 1}]},
        ],
    }


def down_test(s):
    """Job 'one': global rank 1's target fails one scrape (sample 8) while ranks 0 and 2 wait on it. Job 'two': its
    target fails from sample 8 on (its series go stale). Both: 3 ranks of communicator 0xd."""
    n = 30
    series = []
    for job, up1 in (("one", "1x7 0 1x21"), ("two", "1x7 0x22")):
        for r in range(3):
            i = ident(job, r)
            c = ident(job, r, "0xd")
            gone = r == 1
            series.append({"series": "up" + labels(**i), "values": up1 if gone else f"1x{n - 1}"})
            alive = (("1x7 stale 1x21" if job == "one" else "1x7 stale") if gone else f"1x{n - 1}")
            series.append({"series": "ncclscope_comm_info" + labels(**c, comm_name="", nranks="3", nnodes="3", abi="v6"),
                           "values": alive})
            series.append({"series": "ncclscope_comm_in_flight_operations" + labels(**c), "values": alive})
            series.append({"series": "ncclscope_comm_last_seq" + labels(**c, kind="coll"),
                           "values": alive.replace("1x", "41x").replace("1 ", "41 ")})
            if not gone:  # ranks 0 and 2 wait on rank 1 from sample 3 on
                series.append({"series": "ncclscope_comm_wait_seconds" + labels(
                    **c, **{"class": "peer"}, func="AllReduce", peer_global_rank="1", peer_host="h1", nic="eth0",
                    direction="recv", state="waiting"), "values": f"_x3 2+{s}x{n - 4}"})
    return {
        "interval": f"{s}s",
        "input_series": series,
        "promql_expr_test": [
            {"expr": 'count by (ncclscope_job) (count_over_time(ALERTS{alertname="NcclscopeHang", ncclscope_job="one"}[1h]))',
             "eval_time": f"{(n - 1) * s}s", "exp_samples": []},
            {"expr": 'count by (ncclscope_job, global_rank, class) (ALERTS{alertname="NcclscopeHang", alertstate="firing"})',
             "eval_time": f"{11 * s}s",
             "exp_samples": [{"labels": labels(ncclscope_job="two", global_rank="1", **{"class": "process"}), "value": 1}]},
        ],
    }


def run(tmp, name, config, s, window):
    """The promtool tests at interval s, after checking that the recording rules rate over `window` under the
    names that do not change with it (queries written against them survive a regeneration)."""
    out = os.path.join(tmp, name)
    ok, log = run_generated(ROOT, out, config, [straggler_test(s), down_test(s)], s)
    path = os.path.join(out, "rules", "ncclscope-recording.yml")
    text = open(path).read() if os.path.exists(path) else ""
    if f"[{window}]" not in text or "record: ncclscope:comm_straggler:rate\n" not in text:
        return False, log + f"\nthe recording rules do not rate over [{window}] as ncclscope:comm_straggler:rate"
    return ok, log


def main():
    if not have_tools():
        print("SKIP: promtool (Debian's prometheus) or jsonnet is not installed")
        return 77
    failures = []
    with tempfile.TemporaryDirectory(prefix="ncclscope-intervals-") as tmp:
        for s, window in ((15, "1m"), (60, "4m")):
            ok, log = run(tmp, f"s{s}", {"scrapeIntervalSeconds": s}, s, window)
            print(f"scrape interval {s} s (rate window {window}): {'PASS' if ok else 'FAIL'}")
            if not ok:
                failures.append(f"{s} s:\n{log[-3000:]}")
        for what, cfg in (("a 1m rate window", {"scrapeIntervalSeconds": 60, "rateWindow": "1m"}),
                          ("a 10s failed-scrape window", {"scrapeIntervalSeconds": 60, "hangTargetFailedWindow": "10s"})):
            ok, log = run(tmp, "control", cfg, 60, cfg.get("rateWindow", "4m"))
            print(f"control, 60 s with {what}: {'passed (wrong)' if ok else 'fails, as it must'}")
            if ok:
                failures.append(f"the 60 s tests pass with {what}: they do not test the window")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Pauses are not hangs: promtool unit tests of the generated rules over a healthy job whose global rank 1 pauses
P seconds before a collective every 10 minutes, 10 times (ranks 0 and 2 wait on it meanwhile, exactly as in a
`not_joined` hang), and then hangs for good. Series as ncclscope exports them (one scrape every 5 s).

  - every pause: NcclscopeHang (the early answer) names global rank 1 within 15 s; NcclscopeHangResumed follows
    its end, with ncclscope:hang_resumed_seconds its length;
  - 0 NcclscopeHangPage, not even pending (and 0 NcclscopeCommStalled/RankNotJoining) over the 10 pauses, for pauses of 20 s and of
    90 s with the shipped configuration;
  - the final hang pages within hangPageMinSeconds (300) + hangPageFor + one evaluation;
  - every class (the cases of rules/tests/hang_test.yml, with the page due at once) pages the culprit NcclscopeHang
    names, with the same labels;
  - learning: with hangPageMinSeconds 60 and pauses of 90 s, the first pause pages (nothing learned yet), the next
    9 do not (1.5 x 85 s learned), and the final hang pages at 1.5 x 85 s + hangPageFor, not later: a victim
    scrape that fails during it (the wait series vanish for one scrape) is not taken for a resume.
Control, which must FAIL the learning test: hangPageFactor 0 (nothing learned: every pause pages).
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generated_rules import have_tools, labels, run as run_generated  # noqa: E402

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
S = 5  # scrape and evaluation interval (s)
START, EVERY, PAUSES = 60, 600, 10
HANG_AT = START + PAUSES * EVERY  # the final hang's onset (s)



def ident(r):
    return dict(job="ncclscope", instance=f"h{r}:9850", ncclscope_job="pz", host=f"h{r}", global_rank=str(r))


def scenario(pause_s, hang_s, flicker_at=None):
    """Input series: rank 1 pauses pause_s every EVERY s from START, then hangs for hang_s. flicker_at: seconds after
    the hang's onset at which the targets of ranks 0 and 2 fail one scrape."""
    n = (HANG_AT + hang_s) // S + 1
    waits = [(START + i * EVERY, START + i * EVERY + pause_s) for i in range(PAUSES)] + [(HANG_AT, HANG_AT + hang_s + S)]
    flicker = None if flicker_at is None else (HANG_AT + flicker_at) // S

    def age(k):  # the victims' oldest wait at sample k, None between waits
        t = k * S
        return next((t - a for a, b in waits if a < t < b), None)

    def issued(k):  # collectives rank 1 issued by sample k: one per pause it came through (the others one more)
        t = k * S
        return sum(1 for a, _ in waits if a < t)

    def victim(value_of, idle):
        """A victim's series: value_of(age) while it waits, `idle` between waits (None: no sample, as the wait
        series is exported only while stalled), stale at the failed scrape."""
        out, prev = [], False
        for k in range(n):
            a = age(k)
            v = None if k == flicker else (value_of(a) if a is not None else idle)
            out.append(str(v) if v is not None else ("stale" if prev else "_"))
            prev = v is not None
        return " ".join(out)

    def alive(r, value):
        return " ".join("stale" if k == flicker and r != 1 else value for k in range(n))

    series = []
    for r in range(3):
        i, c = ident(r), dict(ident(r), comm="0xp1", rank=str(r))
        up = " ".join("0" if k == flicker and r != 1 else "1" for k in range(n))
        series.append({"series": "up" + labels(**i), "values": up})
        series.append({"series": "ncclscope_comm_info" + labels(**c, comm_name="", nranks="3", nnodes="3", abi="v6"),
                       "values": alive(r, "1")})
        series.append({"series": "ncclscope_comm_in_flight_operations" + labels(**c),
                       "values": alive(r, "0" if r == 1 else "1")})
        if r == 1:
            # Idle on its one communicator while it pauses: its collectives issued, one behind the waiting ranks'.
            series.append({"series": "ncclscope_comm_idle_last_seq" + labels(**c, by="kernel"),
                           "values": " ".join(str(issued(k) - 1) if age(k) is not None else "_" for k in range(n))})
        if r != 1:
            series.append({"series": "ncclscope_comm_wait_last_seq" + labels(**c),
                           "values": " ".join(
                               (str(issued(k)) if age(k) is not None and k != flicker else "_") for k in range(n))})
            series.append({"series": "ncclscope_comm_stalled" + labels(**c), "values": victim(lambda a: 1, 0)})
            series.append({"series": "ncclscope_comm_oldest_in_flight_age_seconds" + labels(**c),
                           "values": victim(lambda a: a, 0.01)})
            series.append({"series": "ncclscope_comm_wait_seconds" + labels(
                **c, **{"class": "peer"}, func="AllReduce", peer_global_rank="1", peer_host="h1", nic="eth0",
                direction="recv", state="waiting"), "values": victim(lambda a: a, None)})
    return {"interval": f"{S}s", "input_series": series}


def alerts(name, since, until, state="firing"):
    """A PromQL test: no `name` alert in state `state` anywhere in [since, until]."""
    return {"expr": f'count(count_over_time(ALERTS{{alertname="{name}", alertstate="{state}"}}[{until - since}s]))',
            "eval_time": f"{until}s", "exp_samples": []}


def firing(name, at, **match):
    sel = ", ".join([f'alertname="{name}"', 'alertstate="firing"'] + [f'{k}="{v}"' for k, v in match.items()])
    return {"expr": f"count(ALERTS{{{sel}}})", "eval_time": f"{at}s", "exp_samples": [{"labels": "{}", "value": 1}]}


def pause_checks(pause_s):
    checks = []
    for i in range(PAUSES):
        onset = START + i * EVERY
        checks.append(firing("NcclscopeHang", onset + 15, global_rank="1", ncclscope_job="pz"))
        checks.append(firing("NcclscopeHangResumed", onset + pause_s + 2 * S, global_rank="1", ncclscope_job="pz"))
    last = pause_s - S  # the last wait sample of a pause: its length as seen
    checks.append({"expr": 'max(max_over_time(ncclscope:hang_resumed_seconds{ncclscope_job="pz"}[2h]))',
                   "eval_time": f"{HANG_AT - S}s", "exp_samples": [{"labels": "{}", "value": last}]})
    return checks


def shipped_test(pause_s):
    """The shipped configuration (hangPageMinSeconds 300): no page over the pauses; the hang pages in time."""
    t = scenario(pause_s, 400)
    t["promql_expr_test"] = pause_checks(pause_s) + [
        alerts("NcclscopeHangPage", 0, HANG_AT, "pending"),
        alerts("NcclscopeHangPage", 0, HANG_AT),
        # (pending for one evaluation at an onset, where the alerts' group runs before the hang rules name the culprit)
        alerts("NcclscopeCommStalled", 0, HANG_AT),
        alerts("NcclscopeCommRankNotJoining", 0, HANG_AT),
        alerts("NcclscopeHangPage", HANG_AT, HANG_AT + 295),
        firing("NcclscopeHangPage", HANG_AT + 300 + 2 * S + S, global_rank="1", **{"class": "not_joined"}),
    ]
    return t


def learning_test():
    """hangPageMinSeconds 60, pauses of 90 s: only the first pause pages; the hang pages at 1.5 x 85 s + for."""
    t = scenario(90, 200, flicker_at=100)
    after = 1.5 * 85  # 127.5 s: stuck 130 s at the first evaluation past it, firing 2 scrapes later
    t["promql_expr_test"] = pause_checks(90) + [
        firing("NcclscopeHangPage", START + 85, global_rank="1"),
        alerts("NcclscopeHangPage", START + EVERY, HANG_AT, "pending"),
        {"expr": 'ncclscope:hang_page_after_seconds{ncclscope_job="pz"}', "eval_time": f"{HANG_AT + 120}s",
         "exp_samples": [{"labels": labels(__name__="ncclscope:hang_page_after_seconds", ncclscope_job="pz"),
                          "value": after}]},
        alerts("NcclscopeHangPage", HANG_AT, HANG_AT + 135),
        firing("NcclscopeHangPage", HANG_AT + 140, global_rank="1"),
    ]
    return t


def every_class_tests():
    """The hang cases of rules/tests/hang_test.yml (each class) with a page due at once (hangPageMinSeconds 1,
    hangPageFor 0s): wherever NcclscopeHang names a culprit, NcclscopeHangPage pages it, same labels and class."""
    import yaml
    with open(os.path.join(ROOT, "rules/tests/hang_test.yml")) as f:
        cases = yaml.safe_load(f)["tests"]
    tests, classes = [], set()
    for case in cases:
        checks = []
        for a in case.get("alert_rule_test", []):
            if a["alertname"] != "NcclscopeHang" or not a.get("exp_alerts"):
                continue
            samples = []
            for e in a["exp_alerts"]:
                want = dict(e["exp_labels"], alertname="NcclscopeHangPage", alertstate="firing", severity="critical")
                samples.append({"labels": "ALERTS" + labels(**want), "value": 1})
                classes.add(want["class"])
            checks.append({"expr": 'ALERTS{alertname="NcclscopeHangPage", alertstate="firing"}',
                           "eval_time": a["eval_time"], "exp_samples": samples})
        if checks:
            tests.append({"interval": case["interval"], "input_series": case["input_series"],
                          "promql_expr_test": checks})
    return tests, sorted(classes)


def run(tmp, name, config, tests):
    return run_generated(ROOT, os.path.join(tmp, name), config, tests, S)


def main():
    if not have_tools():
        print("SKIP: promtool (Debian's prometheus) or jsonnet is not installed")
        return 77
    failures = []
    with tempfile.TemporaryDirectory(prefix="ncclscope-pauses-") as tmp:
        for pause_s in (20, 90):
            ok, log = run(tmp, f"p{pause_s}", {}, [shipped_test(pause_s)])
            print(f"{PAUSES} pauses of {pause_s} s, shipped configuration: 0 pages, each named early and resumed, "
                  f"the hang paged within 300 s + for: {'PASS' if ok else 'FAIL'}")
            if not ok:
                failures.append(f"pauses of {pause_s} s:\n{log[-4000:]}")
        tests, classes = every_class_tests()
        ok, log = run(tmp, "classes", {"hangPageMinSeconds": 1, "hangPageFor": "0s"}, tests)
        print(f"every class pages its culprit ({', '.join(classes)}; {len(tests)} cases of rules/tests/hang_test.yml, "
              f"page due at once): {'PASS' if ok else 'FAIL'}")
        if not ok or len(classes) < 5:
            failures.append(f"every class ({classes}):\n{log[-4000:]}")
        ok, log = run(tmp, "learn", {"hangPageMinSeconds": 60}, [learning_test()])
        print(f"hangPageMinSeconds 60, {PAUSES} pauses of 90 s: the first pages, the next {PAUSES - 1} do not, the hang "
              f"pages at 1.5 x the learned 85 s (a failed scrape not taken for a resume): {'PASS' if ok else 'FAIL'}")
        if not ok:
            failures.append(f"learning:\n{log[-4000:]}")
        ok, _ = run(tmp, "control", {"hangPageMinSeconds": 60, "hangPageFactor": 0}, [learning_test()])
        print(f"control, hangPageFactor 0 (nothing learned): {'passed (wrong)' if ok else 'fails, as it must'}")
        if ok:
            failures.append("the learning test passes with nothing learned: it does not test the learning")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

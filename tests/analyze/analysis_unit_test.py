#!/usr/bin/env python3
"""Unit tests of ncclscope-analyze's matching logic on small hand-written dumps (ncclscope.comm.v1).

  python3 analysis_unit_test.py TOOLS_ANALYZE_DIR   (the directory holding ncclscope_analysis/)
"""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else
                os.path.join(os.path.dirname(__file__), "..", "..", "tools", "analyze"))
from ncclscope_analysis import cli, dumps, hang, report, schema, stragglers, trace  # noqa: E402

MS = 1_000_000


def coll(func, seq, start_ns=0, duration_ns=MS, state="completed", timing="gpu", **extra):
    r = {"kind": "coll", "func": func, "seq": seq, "bytes": 1024, "channels": 2, "state": state,
         "start_ns": start_ns, "arrival": extra.pop("arrival", seq)}
    if state == "completed":
        r.update(end_ns=start_ns + duration_ns, duration_ns=duration_ns, timing_source=timing)
    r.update(extra)
    return r


def p2p(func, peer, seq, state="completed", **extra):
    r = {"kind": "p2p", "func": func, "peer": peer, "seq": seq, "bytes": 1024, "state": state,
         "arrival": extra.pop("arrival", 100 + seq)}
    r.update(extra)
    return r


def dump(rank, nranks=3, completed=(), in_flight=(), host="h", comm="0x00000000000000aa", **extra):
    ops = {}
    for rec in list(completed) + list(in_flight):
        o = ops.setdefault((rec["kind"], rec["func"]), {"kind": rec["kind"], "func": rec["func"], "count": 0,
                                                         "bytes": 0, "last_seq": -1})
        o["last_seq"] = max(o["last_seq"], rec["seq"])
        if rec["state"] == "completed":
            o["count"] += 1
            o["bytes"] += rec["bytes"]
    d = {"schema": schema.SCHEMA, "comm_hash": comm, "comm_name": "t", "rank": rank, "nranks": nranks,
         "host": host, "pid": 100 + rank, "stalled": False, "snapshot_monotonic_ns": 10**12, "ops": list(ops.values()),
         "aggregates": [], "dropped": {}, "flight_recorder": {"depth": 16, "overwritten": 0,
                                                              "completed": list(completed), "in_flight": list(in_flight)}}
    d.update(extra)
    return d


def comm(*ds):
    return {d["rank"]: d for d in ds}


def problems(findings):
    return [f for f in findings if f["kind"] in report.PROBLEMS]


def history(n, func="AllReduce"):
    return [coll(func, s, start_ns=10**9 + s * 10 * MS) for s in range(n)]


STUCK = dict(state="kernel_started", kernel_channels_done=0, age_ns=5 * 10**9)


class HangTest(unittest.TestCase):
    def test_healthy_has_no_findings(self):
        ranks = comm(*(dump(r, completed=history(4)) for r in range(3)))
        self.assertEqual(hang.diagnose(ranks, 3), [])

    def test_collective_behind(self):
        waiting = [coll("AllReduce", 4, **STUCK)]
        ranks = comm(dump(0, completed=history(4), in_flight=waiting, stalled=True),
                     dump(1, completed=history(4)),
                     dump(2, completed=history(4), in_flight=waiting, stalled=True))
        [f] = problems(hang.diagnose(ranks, 3))
        self.assertEqual((f["kind"], f["ranks"], f["func"], f["seq"], f["waiting"]), ("behind", [1], "AllReduce", 4, [0, 2]))
        self.assertIn("rank 1 never issued AllReduce seq 4, which ranks 0, 2 are waiting in", f["headline"])

    def test_young_in_flight_is_not_a_wait(self):
        young = [coll("AllReduce", 4, state="kernel_started", age_ns=2 * MS)]
        ranks = comm(dump(0, completed=history(4), in_flight=young), dump(1, completed=history(4)),
                     dump(2, completed=history(4), in_flight=young))
        self.assertEqual(problems(hang.diagnose(ranks, 3)), [])

    def test_every_rank_stuck_inside_the_same_collective(self):
        ranks = comm(*(dump(r, completed=history(4), in_flight=[coll("AllReduce", 4, state="net_progress", net_steps_done=r,
                                                                      net_steps_total=16, age_ns=3 * 10**9)])
                       for r in range(3)))
        [f] = problems(hang.diagnose(ranks, 3))
        self.assertEqual((f["kind"], f["ranks"]), ("stuck", [0, 1, 2]))
        self.assertIn("every rank issued AllReduce seq 4", f["headline"])
        self.assertIn("rank 2: net_progress, network steps 2/16", f["text"])

    def test_missing_rank_with_waiters(self):
        ranks = comm(dump(0, completed=history(4), in_flight=[coll("AllReduce", 4, **STUCK)], stalled=True),
                     dump(2, completed=history(4), in_flight=[coll("AllReduce", 4, **STUCK)], stalled=True))
        [f] = problems(hang.diagnose(ranks, 3))
        self.assertEqual((f["kind"], f["ranks"], f["waiting"]), ("missing", [1], [0, 2]))
        self.assertIn("rank 1 wrote no dump while ranks 0, 2 wait in AllReduce seq 4", f["headline"])

    def test_missing_rank_nothing_in_flight(self):
        ranks = comm(dump(0, completed=history(4)), dump(1, completed=history(4)))
        [f] = problems(hang.diagnose(ranks, 3))
        self.assertEqual((f["kind"], f["ranks"], f["waiting"]), ("missing", [2], []))

    def test_p2p_behind_and_chain_root(self):
        # 0 -> 1 -> 2: rank 0 waits on rank 1, which itself waits on rank 2, which never posted its Recv.
        ranks = comm(dump(0, completed=[p2p("Send", 1, 1)], in_flight=[p2p("Send", 1, 2, **STUCK)], stalled=True),
                     dump(1, completed=[p2p("Recv", 0, 1), p2p("Send", 2, 1)],
                          in_flight=[p2p("Send", 2, 2, **STUCK)], stalled=True),
                     dump(2, completed=[p2p("Recv", 1, 1)]))
        found = problems(hang.diagnose(ranks, 3))
        roots = [f for f in found if f["root"]]
        self.assertEqual([f["ranks"] for f in roots], [[2]])
        self.assertIn("rank 2 never posted the operation(s) matching rank 1's Send to 2 #2", roots[0]["headline"])
        [chained] = [f for f in found if not f["root"]]
        self.assertEqual(chained["ranks"], [1])
        self.assertIn("itself waiting: rank 1 in Send to 2 #2", chained["text"])
        entry = report.analyze_comm("0xaa", ranks)
        self.assertEqual((entry["status"], entry["culprits"][0]), ("hang", 2))

    def test_p2p_unknown_when_recorder_overwrote(self):
        peer = dump(1, completed=[])
        peer["flight_recorder"]["overwritten"] = 5
        ranks = comm(dump(0, in_flight=[p2p("Send", 1, 9, **STUCK)], stalled=True), peer)
        found = problems(hang.diagnose(ranks, 2))
        self.assertEqual([f["kind"] for f in found], ["stuck"])  # not "behind": rank 1's progress is unknown

    def test_in_flight_at_finalize_counts(self):
        ranks = comm(dump(0, completed=history(2), in_flight=[coll("AllReduce", 2, state="enqueued")], reason="finalize"),
                     dump(1, completed=history(2), reason="finalize"))
        [f] = problems(hang.diagnose(ranks, 2))
        self.assertEqual((f["kind"], f["ranks"]), ("behind", [1]))


    def test_rank_behind_waits_in_another_communicator(self):
        stuck = [coll("AllReduce", 4, **STUCK)]
        a = comm(dump(0, nranks=2, completed=history(4), in_flight=stuck, stalled=True, comm="0xa"),
                 dump(1, nranks=2, completed=history(4), comm="0xa"))
        b = comm(dump(0, nranks=2, completed=history(2), comm="0xb"),
                 dump(1, nranks=2, completed=history(2), in_flight=[coll("AllGather", 0, **STUCK)], comm="0xb",
                      stalled=True))
        entry = {e["comm_hash"]: e for e in report.analyze({"0xa": a, "0xb": b})}
        [elsewhere] = [f for f in entry["0xa"]["findings"] if f["kind"] == "elsewhere"]
        self.assertIn("rank 1 (pid 101) is itself waiting in comm 0xb (t) as its rank 1: AllGather seq 0",
                      elsewhere["text"])


class StragglerTest(unittest.TestCase):
    def jobs(self, late_rank, late_ns, hosts=("h", "h", "h"), n=8):
        ds = []
        for r in range(3):
            recs = []
            for s in range(n):
                t0 = 10**9 + s * 100 * MS
                start = t0 + (late_ns if r == late_rank else (r * 50_000))
                # Everyone finishes together once the last rank arrived: the late rank's kernel is the shortest.
                end = t0 + late_ns + 2 * MS
                recs.append(coll("AllReduce", s, start_ns=start, duration_ns=end - start))
            ds.append(dump(r, completed=recs, host=hosts[r]))
        return comm(*ds)

    def test_host_clock(self):
        s = stragglers.diagnose(self.jobs(2, 20 * MS))
        self.assertEqual((s["method"], s["rank"], s["last_count"], s["is_straggler"]), ("host_clock", 2, 8, True))
        self.assertAlmostEqual(s["median_lateness_ns"] / MS, 20, places=0)

    def test_durations_across_hosts(self):
        s = stragglers.diagnose(self.jobs(1, 20 * MS, hosts=("a", "b", "c")))
        self.assertEqual((s["method"], s["rank"], s["is_straggler"]), ("durations", 1, True))
        self.assertAlmostEqual(s["median_lateness_ns"] / MS, 20, places=0)

    def test_small_jitter_is_no_straggler(self):
        s = stragglers.diagnose(self.jobs(1, 200_000))
        self.assertFalse(s["is_straggler"])

    def test_only_collectives_on_every_rank(self):
        ranks = self.jobs(2, 20 * MS, n=2)
        self.assertIsNone(stragglers.diagnose(ranks))

    def test_report_names_straggler(self):
        entry = report.analyze_comm("0xaa", self.jobs(2, 20 * MS))
        self.assertEqual((entry["status"], entry["culprits"]), ("straggler", [2]))
        self.assertIn("STRAGGLER: rank 2 arrives last in 8/8 collectives", entry["verdict"])


class InputTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, content):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        return path

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = cli.main(list(args))
        return rc, out.getvalue(), err.getvalue()

    def test_bad_inputs_exit_2_naming_the_file(self):
        cases = {"ncclscope-comm-x-rank0.json": "{not json",
                 "ncclscope-comm-y-rank0.json": {"schema": "other.v1"},
                 "ncclscope-comm-z-rank0.json": dict(dump(0), rank="0"),
                 "ncclscope-comm-w-rank0.json": dict(dump(0), flight_recorder={"completed": []}),
                 "ncclscope-comm-v-rank7.json": dump(7)}
        for name, content in cases.items():
            path = self.write(name, content)
            rc, _, err = self.run_main(path)
            self.assertEqual(rc, 2, name)
            self.assertIn(path, err)
        rc, _, err = self.run_main(os.path.join(self.dir.name, "nope"))
        self.assertEqual(rc, 2)
        self.assertIn("nope: no such file", err)

    def test_ranks_disagreeing_on_size(self):
        a = self.write("ncclscope-comm-aa-rank0.json", dump(0, nranks=2))
        b = self.write("ncclscope-comm-aa-rank1.json", dump(1, nranks=3))
        rc, _, err = self.run_main(a, b)
        self.assertEqual(rc, 2)
        self.assertIn("has 3 ranks here but 2", err)

    def test_latest_dump_of_a_rank_wins(self):
        stall = dump(0, nranks=1, in_flight=[coll("AllReduce", 0, **STUCK)], stalled=True, snapshot_monotonic_ns=1)
        final = dump(0, nranks=1, completed=[coll("AllReduce", 0)], snapshot_monotonic_ns=2)
        os.mkdir(os.path.join(self.dir.name, "a"))
        p1 = self.write("a/ncclscope-comm-aa-rank0.json", stall)
        p2 = self.write("ncclscope-comm-aa-rank0.json", final)
        comms = dumps.load_all([p2, p1])
        self.assertIs(comms["0x00000000000000aa"][0]["stalled"], False)

    def test_json_and_exit_status(self):
        self.write("ncclscope-comm-aa-rank0.json", dump(0, nranks=2, completed=history(3)))
        rc, out, _ = self.run_main("--json", self.dir.name)
        r = json.loads(out)
        self.assertEqual((rc, r["status"], r["communicators"][0]["status"]), (1, "problem", "missing"))
        self.write("ncclscope-comm-aa-rank1.json", dump(1, nranks=2, completed=history(3)))
        rc, out, _ = self.run_main(self.dir.name)
        self.assertEqual(rc, 0)
        self.assertTrue(out.startswith("healthy: 1 communicator(s)"), out)


class TraceTest(unittest.TestCase):
    def test_one_process_per_rank_one_track_per_comm(self):
        a = comm(*(dump(r, nranks=2, completed=history(2), comm="0xa") for r in range(2)))
        b = comm(*(dump(r, nranks=2, completed=history(3), in_flight=[coll("AllReduce", 3, **STUCK)], comm="0xb")
                   for r in range(2)))
        events = trace.chrome_trace({"0xa": a, "0xb": b})["traceEvents"]
        self.assertEqual(len({e["pid"] for e in events}), 2)
        self.assertEqual(len({(e["pid"], e["tid"]) for e in events if e["ph"] == "X"}), 4)
        self.assertEqual(sum(e["ph"] == "X" for e in events), 2 * 2 + 2 * 4)
        self.assertIn("AllReduce seq 3 (in flight)", {e["name"] for e in events})


if __name__ == "__main__":
    unittest.main(verbosity=1)

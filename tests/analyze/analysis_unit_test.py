#!/usr/bin/env python3
"""Unit tests of ncclscope-analyze's matching logic on small hand-written dumps (ncclscope.comm.v1).

  python3 analysis_unit_test.py TOOLS_ANALYZE_DIR   (the directory holding ncclscope_analysis/)
"""
import gzip
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
from ncclscope_analysis import cli, dumps, hang, nics, report, schema, stragglers, trace  # noqa: E402

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
    """{rank: summary} as the loader makes them from v1 dumps (normalised, compacted)."""
    out = {d["rank"]: dumps.compact(dumps.normalize(json.loads(json.dumps(d)))) for d in ds}
    for d in out.values():
        d["_written_ns"] = dumps.written_ns(d)
    return out


def v2_bytes(d, fr_member=None, drop=()):
    """A v1 test dump written as a v2 file: gzip member 1 the summary (less the keys in `drop`), member 2 the
    flight recorder."""
    s = dumps.normalize(json.loads(json.dumps(d)))
    s = {k: v for k, v in s.items() if not k.startswith("_") and k not in drop}
    s.update(schema=schema.SCHEMA_V2, part="summary")
    fr = fr_member if fr_member is not None else {"schema": schema.SCHEMA_V2, "part": "flight_recorder",
                                                  "completed": d["flight_recorder"]["completed"]}
    return gzip.compress(json.dumps(s).encode() + b"\n") + gzip.compress(json.dumps(fr).encode() + b"\n")


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
        self.assertIn("rank 1 never issued AllReduce seq 4, which ranks 0,2 are waiting in", f["headline"])

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
        self.assertEqual((f["kind"], f["ranks"], f["waiting"]), ("stuck", [], [0, 1, 2]))
        self.assertIn("every rank issued AllReduce seq 4", f["headline"])
        self.assertIn("rank 2: net_progress, network steps 2/16", f["text"])

    def test_missing_rank_with_waiters(self):
        ranks = comm(dump(0, completed=history(4), in_flight=[coll("AllReduce", 4, **STUCK)], stalled=True),
                     dump(2, completed=history(4), in_flight=[coll("AllReduce", 4, **STUCK)], stalled=True))
        [f] = problems(hang.diagnose(ranks, 3))
        self.assertEqual((f["kind"], f["ranks"], f["waiting"], f["seq"]), ("missing", [1], [0, 2], 4))
        self.assertIn("rank 1 wrote no dump while ranks 0,2 wait in AllReduce seq 4", f["headline"])

    def test_missing_rank_nothing_in_flight(self):
        ranks = comm(dump(0, completed=history(4)), dump(1, completed=history(4)))
        [f] = problems(hang.diagnose(ranks, 3))
        self.assertEqual((f["kind"], f["ranks"], f["waiting"]), ("missing", [2], []))

    def test_dead_rank_told_by_survivors_net_errors(self):
        lost = {"kind": "recv", "text": "peer 10.0.0.2:5000 (global rank 1, pid 77 on h2) closed the connection",
                "peer": "10.0.0.2:5000", "peer_global_rank": 1, "peer_pid": 77, "peer_host": "h2", "nic": "eth0",
                "comm_hash": None, "monotonic_ns": 1}
        cascade = dict(lost, peer_global_rank=0, peer_pid=100, peer_host="h", text="peer of rank 0 closed")
        stuck = [coll("AllReduce", 4, **STUCK)]
        ranks = comm(dump(0, completed=history(4), in_flight=stuck, stalled=True, identity={"global_rank": 0}),
                     dump(2, completed=history(4), in_flight=stuck, stalled=True, identity={"global_rank": 2}))
        ranks[0]["net_errors"] = [lost]
        ranks[2]["net_errors"] = [cascade]  # names rank 0, which wrote a dump: not the dead one
        [f] = problems(hang.diagnose(ranks, 3, live_globals={0, 2}, live_procs={("h", 100), ("h", 102)}))
        self.assertEqual((f["kind"], f["ranks"], f["waiting"]), ("dead", [1], [0, 2]))
        self.assertIn("rank 1 died (no dump; rank 0 lost the connection to global rank 1, pid 77 on h2 (10.0.0.2:5000))",
                      f["headline"])
        result = report.analyze({"0xaa": ranks})
        [c] = result["culprits"]
        self.assertEqual((c["kind"], c["host"], c["pid"], c["global_rank"]), ("dead", "h2", 77, 1))
        self.assertIn("journalctl -k", c["next_step"])

    def test_no_answer_to_the_dump_signal_is_dead(self):
        stuck = [coll("AllReduce", 4, **STUCK)]
        ranks = comm(dump(0, completed=history(4), in_flight=stuck, stalled=True, reason="request"),
                     dump(2, completed=history(4), in_flight=stuck, stalled=True, reason="request"))
        [f] = problems(hang.diagnose(ranks, 3))
        self.assertEqual((f["kind"], f["ranks"], f["seq"]), ("dead", [1], 4))
        self.assertIn("rank 1 wrote no dump although ranks 0,2 answered the dump signal", f["headline"])
        for d in ranks.values():
            d["reason"] = "stall"  # stall dumps alone: hung and alive, or dead, cannot be told
        self.assertEqual([f["kind"] for f in problems(hang.diagnose(ranks, 3))], ["missing"])

    def test_mismatch_by_arrival_number(self):
        others = [coll("AllReduce", 3, arrival=3, **STUCK)]
        odd = [coll("AllGather", 0, arrival=3, **STUCK)]
        ranks = comm(dump(0, completed=history(3), in_flight=others, stalled=True),
                     dump(1, completed=history(3), in_flight=odd, stalled=True),
                     dump(2, completed=history(3), in_flight=others, stalled=True))
        [f] = problems(hang.diagnose(ranks, 3))
        self.assertEqual((f["kind"], f["ranks"], f["func"], f["seq"], f["arrival"]), ("mismatch", [1], "AllGather", 0, 3))
        self.assertIn("rank 1 issued AllGather seq 0 as operation #3 of the communicator, where ranks 0,2 issued "
                      "AllReduce seq 3", f["headline"])
        result = report.analyze({"0xaa": ranks})
        self.assertEqual([(c["kind"], c["where"][0]["rank"]) for c in result["culprits"]], [("mismatch", 1)])

    def test_p2p_behind_and_chain_root(self):
        # 0 -> 1 -> 2: rank 0 waits on rank 1, which itself waits on rank 2, which never posted its Recv.
        ranks = comm(dump(0, completed=[p2p("Send", 1, 1)], in_flight=[p2p("Send", 1, 2, **STUCK)], stalled=True),
                     dump(1, completed=[p2p("Recv", 0, 1), p2p("Send", 2, 1)],
                          in_flight=[p2p("Send", 2, 2, **STUCK)], stalled=True),
                     dump(2, completed=[p2p("Recv", 1, 1)]))
        result = report.analyze({"0xaa": ranks})
        [entry] = result["entries"]
        roots = [f for f in problems(entry["findings"]) if f["root"]]
        self.assertEqual([f["ranks"] for f in roots], [[2]])
        self.assertIn("rank 2 never posted the operation(s) matching rank 1's Send to 2 #2", roots[0]["headline"])
        [chained] = [f for f in problems(entry["findings"]) if not f["root"]]
        self.assertEqual(chained["ranks"], [1])
        self.assertIn("the chain ends at pid 102 on h", chained["text"])
        self.assertEqual((entry["status"], entry["culprits"]), ("hang", [2]))
        self.assertEqual(result["victims"], {"0xaa": [0, 1]})
        self.assertEqual([c["pid"] for c in result["culprits"]], [102])

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

    def test_chain_across_communicators_names_the_root_only(self):
        # Tensor-parallel comm 0xa: global rank 1 never issued AllReduce 4, global rank 0 waits in it.
        # Data-parallel comm 0xb: ranks 0 (global 0) and 1 (global 2): global 0 never issued its AllReduce 4
        # there because it waits in 0xa; global 2 waits on it. Only global rank 1 is a culprit.
        stuck = [coll("AllReduce", 4, **STUCK)]
        ident = lambda g: {"global_rank": g, "world_size": 3}  # noqa: E731
        a = comm(dump(0, nranks=2, completed=history(4), in_flight=stuck, stalled=True, comm="0xa", pid=100,
                      identity=ident(0)),
                 dump(1, nranks=2, completed=history(4), comm="0xa", pid=101, identity=ident(1)))
        b = comm(dump(0, nranks=2, completed=history(4), comm="0xb", pid=100, identity=ident(0)),
                 dump(1, nranks=2, completed=history(4), in_flight=stuck, comm="0xb", pid=102, stalled=True,
                      identity=ident(2)))
        result = report.analyze({"0xa": a, "0xb": b})
        self.assertEqual([(c["global_rank"], c["where"][0]["comm_hash"], c["where"][0]["seq"]) for c in result["culprits"]],
                         [(1, "0xa", 4)])
        entry = {e["comm_hash"]: e for e in result["entries"]}
        self.assertEqual((entry["0xa"]["culprits"], entry["0xb"]["culprits"]), ([1], []))
        self.assertEqual(result["victims"], {"0xa": [0], "0xb": [0, 1]})
        self.assertIn("the chain ends at global rank 1, pid 101 on h in 0xa",
                      [f for f in entry["0xb"]["findings"] if f["kind"] == "behind"][0]["text"])


    def test_culprit_blamed_twice_stopped_where_its_own_dumps_say(self):
        # Global rank 1 is in comm 0xa (with global 0) and 0xb (with global 3) and issued AllReduce 4 in neither.
        # The wait in 0xb began first, but its own dumps decide: its next operation was for the communicator it
        # has been idle in longest. Both orders, so neither the wait race nor the comm hash can pass the test.
        ident = lambda g: {"global_rank": g, "world_size": 4}  # noqa: E731

        def first_place(a_offset_ns, b_offset_ns):
            own = lambda off: [coll("AllReduce", s, start_ns=10**9 + s * 10 * MS + off) for s in range(4)]  # noqa
            a = comm(dump(0, nranks=2, completed=history(4), comm="0xa", pid=100, identity=ident(0), stalled=True,
                          in_flight=[coll("AllReduce", 4, start_ns=3 * 10**9, **STUCK)]),
                     dump(1, nranks=2, completed=own(a_offset_ns), comm="0xa", pid=101, identity=ident(1)))
            b = comm(dump(0, nranks=2, completed=own(b_offset_ns), comm="0xb", pid=101, identity=ident(1)),
                     dump(1, nranks=2, completed=history(4), comm="0xb", pid=103, identity=ident(3), stalled=True,
                          in_flight=[coll("AllReduce", 4, start_ns=2 * 10**9, **STUCK)]))
            [c] = report.analyze({"0xa": a, "0xb": b})["culprits"]
            self.assertEqual((c["global_rank"], sorted(w["comm_hash"] for w in c["where"])), (1, ["0xa", "0xb"]))
            return c["where"][0]["comm_hash"]

        self.assertEqual(first_place(0, 5 * MS), "0xa")
        self.assertEqual(first_place(5 * MS, 0), "0xb")


def wait(cls, func="AllReduce", seq=4, peers=(), kind="coll", age_ns=5 * 10**9, threshold_ns=2 * 10**9):
    """A dump's `wait` field (docs/dump-format.md): the oldest in-flight operation past its stall threshold."""
    return {"class": cls, "kind": kind, "func": func, "seq": seq, "arrival": seq, "age_ns": age_ns,
            "threshold_ns": threshold_ns, "peers": list(peers)}


def waits_on(g, direction="recv", host=None, nic="eth0", waiting_ns=4 * 10**9, requests=1, failed=False):
    """One entry of wait.peers: this rank's network requests pending towards global rank g."""
    return {"peer_global_rank": g, "peer_host": host if host is not None else f"h{g}", "nic": nic,
            "direction": direction, "requests": requests, "waiting_ns": waiting_ns, "failed": failed}


NET_STUCK = dict(state="net_progress", net_steps_done=3, net_steps_total=16, age_ns=5 * 10**9)


def waiting_job(waits_by_rank, nranks=None, world_size=None, comm_hash="0x00000000000000aa", absent=()):
    """Ranks 0..n-1 of one communicator (global rank = rank, host h<rank>), each waiting inside AllReduce seq 4
    after seqs 0-3, with the `wait` field given per rank (a rank in `absent` writes no dump)."""
    nranks = nranks or len(waits_by_rank) + len(absent)
    ident = lambda g: {"global_rank": g, **({"world_size": world_size} if world_size else {})}  # noqa: E731
    return comm(*(dump(r, nranks=nranks, completed=history(4), in_flight=[coll("AllReduce", 4, **NET_STUCK)],
                       host=f"h{r}", comm=comm_hash, stalled=True, identity=ident(r), wait=w)
                   for r, w in sorted(waits_by_rank.items()) if r not in absent))


class WaitTest(unittest.TestCase):
    """The `wait` field: a hang where every rank issued the operation resolves to a link or a kernel-stuck rank;
    a wait on a rank without a dump names that process; dumps without the field analyse as before."""

    def test_link_between_the_two_ranks_of_a_communicator(self):
        ranks = waiting_job({0: wait("peer", peers=[waits_on(1, "send", nic="eth0", requests=2, waiting_ns=49 * 10**8)]),
                             1: wait("peer", peers=[waits_on(0, "recv", nic="eth1", waiting_ns=48 * 10**8)])})
        [f] = problems(hang.diagnose(ranks, 2))
        self.assertEqual((f["kind"], f["class"], f["ranks"], f["waiting"]), ("link", "link", [0, 1], []))
        self.assertEqual([(x["rank"], x["global_rank"], x["host"], x["nic"], x["direction"])
                          for x in f["link"]["endpoints"]], [(0, 0, "h0", "eth0", "send"), (1, 1, "h1", "eth1", "recv")])
        self.assertEqual(f["headline"], "the link between rank 0 (global rank 0 on h0), NIC eth0 and rank 1 (global "
                                        "rank 1 on h1), NIC eth1: both issued AllReduce seq 4 and each waits on the "
                                        "other's network requests")
        result = report.analyze({"0xaa": ranks})
        [c] = result["culprits"]
        self.assertEqual((c["kind"], c["class"], c["global_rank"], c["host"], c["nic"]), ("link", "link", 0, "h0", "eth0"))
        self.assertEqual((c["peer"]["global_rank"], c["peer"]["host"], c["peer"]["nic"]), (1, "h1", "eth1"))
        self.assertIn("check the link between h0 (eth0) and h1 (eth1)", c["next_step"])
        self.assertTrue(report.job_verdict(result).startswith(
            "PROBLEM: link between rank 0 and rank 1 of comm 0xaa (global rank 0, pid 100 on h0, NIC eth0 <-> "
            "global rank 1, pid 101 on h1, NIC eth1)"), report.job_verdict(result))
        self.assertEqual((result["entries"][0]["status"], result["entries"][0]["culprits"]), ("hang", [0, 1]))

    def test_a_rank_stuck_in_the_previous_operation_is_not_behind(self):
        # A link failed while ranks 2 and 3 were still in AllReduce seq 3 (their connections across it failed),
        # ranks 0 and 1 already in seq 4 waiting on them: 2 and 3 did not miss the call, they are stuck in the one
        # before. As the live rules do, the verdict follows the waits (a link), not "behind".
        waits = {0: wait("peer", peers=[waits_on(3, waiting_ns=49 * 10**8)]),
                 1: wait("peer", peers=[waits_on(0, waiting_ns=10**9)]),
                 2: wait("peer", seq=3, peers=[waits_on(1, failed=True, waiting_ns=48 * 10**8)]),
                 3: wait("peer", seq=3, peers=[waits_on(2, waiting_ns=10**9), waits_on(0, "send", failed=True)])}
        ranks = comm(*(dump(r, nranks=4, completed=history(4 if r < 2 else 3),
                            in_flight=[coll("AllReduce", 4 if r < 2 else 3, **NET_STUCK)], host=f"h{r}",
                            stalled=True, identity={"global_rank": r}, wait=w) for r, w in waits.items()))
        found = problems(hang.diagnose(ranks, 4))
        self.assertNotIn("behind", [f["kind"] for f in found])
        self.assertIn("link", [f["kind"] for f in found], found)

    def test_kernel_named_through_proxy_peers_by_rank_in_the_communicator(self):
        # NCCL's own transports with ProxyOp events: the entries name the peer by its rank in the communicator only
        # (peer_global_rank null, no NIC); the chains still lead to the kernel-stuck rank 2.
        def by_rank(r, direction="recv"):
            e = waits_on(None, direction, host="", nic="")
            e.update(peer_global_rank=None, peer_host=None, peer_rank=r)
            return e
        ranks = waiting_job({0: wait("peer", peers=[by_rank(2)]), 1: wait("peer", peers=[by_rank(0)]),
                             2: wait("kernel")})
        [f] = problems(hang.diagnose(ranks, 3))
        self.assertEqual((f["kind"], f["class"], f["ranks"]), ("kernel", "kernel", [2]))

    def test_link_in_a_ring_resolves_down_the_chains(self):
        # Ring 0 -> 1 -> 2 -> 3 -> 0 with the link 0 <-> 1 dead: 0 and 1 wait on each other; 2 waits on 1's data,
        # 3 on 2's, and 0 also (less long) on 3's: every chain leads to the 0 <-> 1 link.
        ranks = waiting_job({0: wait("peer", peers=[waits_on(3, "recv", waiting_ns=10**9),
                                                    waits_on(1, "send", waiting_ns=49 * 10**8)]),
                             1: wait("peer", peers=[waits_on(0, "recv")]),
                             2: wait("peer", peers=[waits_on(1, "recv")]),
                             3: wait("peer", peers=[waits_on(2, "recv")])})
        [f] = problems(hang.diagnose(ranks, 4))
        self.assertEqual((f["kind"], f["ranks"], f["waiting"]), ("link", [0, 1], [2, 3]))
        self.assertIn("; ranks 2,3 wait on them down the chain (rank 2 waits on rank 1, rank 3 waits on rank 2)",
                      f["headline"])
        result = report.analyze({"0xaa": ranks})
        self.assertEqual([(c["kind"], c["global_rank"], c["peer"]["global_rank"]) for c in result["culprits"]],
                         [("link", 0, 1)])
        self.assertEqual(result["victims"], {"0xaa": [2, 3]})

    def test_failed_connection_in_a_ring_without_a_mutual_pair_is_the_link(self):
        # Two hosts, two ranks each; every rank receives from the one before it (0 <- 3 <- 2 <- 1 <- 0) and host b's
        # NIC went down: 2's connection from 1 (across hosts) and 3's from 2 (same host, same NIC) failed. No two ranks
        # list each other, so no mutual pair marks the link; the failed cross-host connection does.
        def on(g, host, failed=False, waiting_ns=2 * 10**9):
            return waits_on(g, "recv", host=host, nic="rxe0", failed=failed, waiting_ns=waiting_ns)
        waits = {0: wait("peer", peers=[on(3, "b", waiting_ns=22 * 10**8)]), 1: wait("peer", peers=[on(0, "a")]),
                 2: wait("peer", peers=[on(1, "a", failed=True)]), 3: wait("peer", peers=[on(2, "b", failed=True)])}
        hosts = {0: "a", 1: "a", 2: "b", 3: "b"}
        job = lambda: comm(*(dump(r, nranks=4, completed=history(4), in_flight=[coll("AllReduce", 4, **NET_STUCK)],  # noqa: E731
                                  host=hosts[r], stalled=True, identity={"global_rank": r}, wait=w)
                             for r, w in waits.items()))
        ranks = job()
        [f] = problems(hang.diagnose(ranks, 4))
        self.assertEqual((f["kind"], f["class"], f["ranks"], f["waiting"]), ("link", "link", [2, 1], [0, 3]))
        self.assertIn("rank 2's connection with rank 1 failed in a ring of waits", f["headline"])
        result = report.analyze({"0xaa": ranks})
        self.assertEqual([(c["kind"], c["host"], c["peer"]["host"]) for c in result["culprits"]], [("link", "b", "a")])
        # The same ring with nothing failed names nobody: any of its links could be the slow one.
        for w in waits.values():
            w["peers"][0]["failed"] = False
        self.assertNotIn("link", [f["kind"] for f in problems(hang.diagnose(job(), 4))])

    def test_kernel_stuck_rank(self):
        # Rank 2's kernel does not finish (no network request pending); 1 and 3 wait on it over the network, 0
        # waits on 1.
        ranks = waiting_job({0: wait("peer", peers=[waits_on(1, "recv")]),
                             1: wait("peer", peers=[waits_on(2, "recv")]),
                             2: wait("kernel"),
                             3: wait("peer", peers=[waits_on(2, "send", nic="eth1")])})
        [f] = problems(hang.diagnose(ranks, 4))
        self.assertEqual((f["kind"], f["class"], f["ranks"], f["waiting"]), ("kernel", "kernel", [2], [0, 1, 3]))
        self.assertEqual(f["headline"], "rank 2 (global rank 2 on h2) is stuck in its own kernel of AllReduce seq 4 "
                                        "(launched, not finished, no network request pending), while ranks 1,3 wait "
                                        "on it over the network, rank 0 down the chain (rank 0 waits on rank 1)")
        result = report.analyze({"0xaa": ranks})
        [c] = result["culprits"]
        self.assertEqual((c["kind"], c["class"], c["global_rank"], c["host"], c["pid"]), ("kernel", "kernel", 2, "h2", 102))
        self.assertIn("Xid", c["next_step"])
        self.assertEqual(result["victims"], {"0xaa": [0, 1, 3]})
        self.assertTrue(c["line"].startswith("kernel stuck [class kernel]: global rank 2, pid 102 on h2: rank 2 (global rank 2 on "
                                             "h2) is stuck in its own kernel"), c["line"])

    def test_kernel_everywhere_names_nobody(self):
        # Every rank waits in its own kernel with no network request pending (an intra-node transfer or a GPU):
        # no rank can be told, the stuck verdict stays with class kernel.
        ranks = waiting_job({r: wait("kernel") for r in range(3)})
        [f] = problems(hang.diagnose(ranks, 3))
        self.assertEqual((f["kind"], f["class"], f["ranks"]), ("stuck", "kernel", []))
        self.assertIn("wait classes: ranks 0-2: kernel (no network request pending on any rank", f["text"])

    def test_wait_on_a_rank_without_a_dump_is_the_process(self):
        for failed, kind in ((False, "missing"), (True, "dead")):
            ranks = waiting_job({0: wait("peer", peers=[waits_on(1, "send", host="node7")]),
                                 2: wait("peer", peers=[waits_on(1, "recv", host="node7", failed=failed)])}, nranks=3)
            result = report.analyze({"0xaa": ranks})
            [f] = problems(result["entries"][0]["findings"])
            self.assertEqual((f["kind"], f["class"], f["ranks"], f["waiting"]), (kind, "process", [1], [0, 2]))
            self.assertIn("ranks 0,2 wait on global rank 1 on node7 (ranks 0,2 via eth0"
                          + (", connection failed)" if failed else ")") + " over the network", f["headline"])
            self.assertTrue(f["headline"].startswith("rank 1 died (no dump; the connection of rank 2 to it failed)"
                                                     if failed else "rank 1 wrote no dump while ranks 0,2 wait in "
                                                     "AllReduce seq 4; ranks 0,2 wait on global rank 1"), f["headline"])
            [c] = result["culprits"]
            self.assertEqual((c["kind"], c["class"], c["global_rank"], c["host"], c["no_dump"]),
                             (kind, "process", 1, "node7", True))
            self.assertIn(f"{report.KIND_WORD[kind]} [class process]: global rank 1, pid unknown on node7, no dump:",
                          c["line"])
            self.assertEqual(f["blamed"], [{"rank": 1, "global_rank": 1, "host": "node7", "pid": None}])

    def test_a_frozen_ranks_earlier_stall_dump_is_read_as_no_dump(self):
        # Rank 1 wrote a stall dump at seq 1 (a slow moment), went on, and froze before seq 4: it cannot answer the
        # dump signal, so its only dump is that old one. The others completed seq 3 with it: the dump is stale, and
        # the frozen rank is the process the waits end at, not a rank stuck in seq 1.
        old = dump(1, nranks=3, completed=history(1), in_flight=[coll("AllReduce", 1, **NET_STUCK)], host="h1",
                   stalled=True, identity={"global_rank": 1}, reason="stall",
                   wait=wait("peer", seq=1, peers=[waits_on(0)]))
        waiting = waiting_job({0: wait("peer", peers=[waits_on(2)]), 2: wait("peer", peers=[waits_on(1)])},
                              nranks=3, absent=(1,))
        waiting[1] = comm(old)[1]
        result = report.analyze({"0xaa": waiting})
        findings = result["entries"][0]["findings"]
        [stale] = [f for f in findings if f["kind"] == "stale"]
        self.assertEqual(stale["ranks"], [1])
        self.assertIn("rank 1's latest dump (stall) says AllReduce seq 1 was the last it issued, but the others "
                      "completed seq 3 with it since", stale["text"])
        [c] = result["culprits"]
        self.assertEqual((c["class"], c["global_rank"]), ("process", 1))

    def test_dumps_of_a_running_job_taken_moments_apart_are_not_stale(self):
        ranks = comm(dump(0, completed=history(2)), dump(1, completed=history(4)), dump(2, completed=history(3)))
        self.assertEqual([f for f in hang.diagnose(ranks, 3) if f["kind"] == "stale"], [])

    def test_no_kernelch_and_no_connection_cannot_tell(self):
        ranks = comm(*(dump(r, completed=history(4), completion_seen="none") for r in range(3)))
        result = report.analyze({"0xaa": ranks})
        self.assertEqual(result["entries"][0]["status"], "cannot_tell")
        self.assertEqual(report.job_status(result), "cannot_tell")
        self.assertTrue(report.job_verdict(result).startswith("cannot tell: 1 of 1 communicator(s)"))
        seen = comm(*(dump(r, completed=history(4), completion_seen="network") for r in range(3)))
        self.assertEqual(report.job_status(report.analyze({"0xaa": seen})), "healthy")

    @staticmethod
    def network_only_job(culprit_completed):
        """NCCL 2.31's default mask: nothing is ever in flight. Ranks 0 and 1 completed AllReduce seq 4 at enqueue
        and their connections went still in it (`wait`, network_only); rank 2 completed `culprit_completed`."""
        def still(peer):
            return dict(wait("peer", peers=[waits_on(peer)]), network_only=True)
        return comm(dump(0, completed=history(5), completion_seen="network", stalled=True, wait=still(2)),
                    dump(1, completed=history(5), completion_seen="network", stalled=True, wait=still(0)),
                    dump(2, completed=culprit_completed, completion_seen="network"))

    def test_no_kernelch_hang_from_still_connections(self):
        [f] = problems(hang.diagnose(self.network_only_job(history(4)), 3))
        self.assertEqual((f["kind"], f["class"], f["ranks"], f["waiting"]), ("behind", "not_joined", [2], [0, 1]))

    def test_no_kernelch_mismatch_from_the_operation_completed_instead(self):
        ranks = self.network_only_job(history(4) + [coll("AllGather", 0, arrival=4)])
        [f] = problems(hang.diagnose(ranks, 3))
        self.assertEqual((f["kind"], f["class"], f["ranks"], f["waiting"], f["func"]),
                         ("mismatch", "mismatch", [2], [0, 1], "AllGather"))

    def test_chain_across_communicators_ends_at_the_kernel_stuck_rank(self):
        # Comm 0xa (globals 0, 1): 0 waits on 1, whose kernel never started (its stream is busy). Comm 0xb
        # (globals 1, 2): 1 waits on 2, whose kernel does not finish. One culprit: global rank 2.
        def one(r, g, comm, w):
            return dump(r, nranks=2, completed=history(4), in_flight=[coll("AllReduce", 4, **NET_STUCK)], comm=comm,
                        host=f"h{g}", pid=100 + g, stalled=True, identity={"global_rank": g, "world_size": 3}, wait=w)
        a = comm(one(0, 0, "0xa", wait("peer", peers=[waits_on(1)])), one(1, 1, "0xa", wait("host")))
        b = comm(one(0, 1, "0xb", wait("peer", peers=[waits_on(2)])), one(1, 2, "0xb", wait("kernel")))
        result = report.analyze({"0xa": a, "0xb": b})
        self.assertEqual([(c["kind"], c["global_rank"], c["where"][0]["comm_hash"]) for c in result["culprits"]],
                         [("kernel", 2, "0xb")])
        [fa] = problems(result["entries"][0]["findings"])
        self.assertEqual((fa["kind"], fa["class"], fa["root"]), ("not_launched", "not_joined", False))
        self.assertIn("the chain ends at global rank 2, pid 102 on h2 in 0xb", fa["text"])

    def test_dumps_without_wait_analyse_as_before(self):
        def job(**extra):
            return comm(*(dump(r, completed=history(4), in_flight=[coll("AllReduce", 4, **NET_STUCK)], stalled=True,
                               identity={"global_rank": r}, **extra) for r in range(3)))
        old, null = report.analyze({"0xaa": job()}), report.analyze({"0xaa": job(wait=None)})
        [f] = problems(old["entries"][0]["findings"])
        self.assertEqual((f["kind"], f["class"], f["ranks"]), ("stuck", None, []))
        self.assertEqual(f["headline"], "every rank issued AllReduce seq 4 and are stuck inside (ranks 0-2: "
                                        "net_progress, network steps 3/16)")
        self.assertEqual(report.job_verdict(old), "PROBLEM: hang in comm 0xaa (t) with no single rank to blame")
        texts = []
        for result in (old, null):
            out = io.StringIO()
            report.print_text(result, out)
            texts.append(out.getvalue())
        self.assertEqual(texts[0], texts[1])
        self.assertNotIn("wait", texts[0].replace("waits inside", ""))


class WaitFileTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def run_files(self, waits):
        for r, w in waits.items():
            d = dump(r, nranks=len(waits), completed=history(4), in_flight=[coll("AllReduce", 4, **NET_STUCK)],
                     host=f"h{r}", stalled=True, identity={"global_rank": r, "world_size": len(waits)}, wait=w)
            with open(os.path.join(self.dir.name, f"ncclscope-comm-aa-rank{r}.json.gz"), "wb") as f:
                f.write(v2_bytes(d))
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = cli.main(["--json", self.dir.name])
        return rc, out.getvalue(), err.getvalue()

    def test_json_has_the_class_and_the_culprit(self):
        rc, out, err = self.run_files({0: wait("peer", peers=[waits_on(1)]), 1: wait("kernel"), 2: None})
        self.assertEqual(rc, 1, err)
        r = json.loads(out)
        [c] = r["culprits"]
        self.assertEqual((c["kind"], c["class"], c["global_rank"], c["host"]), ("kernel", "kernel", 1, "h1"))
        [f] = [f for f in r["communicators"][0]["findings"] if f["kind"] == "kernel"]
        self.assertEqual((f["class"], f["blamed"]), ("kernel", [{"host": "h1", "pid": 101, "global_rank": 1, "rank": 1}]))
        waits = [f for f in r["communicators"][0]["findings"] if f["kind"] == "wait"]
        self.assertEqual([(f["ranks"], f["class"]) for f in waits], [([0], "peer"), ([1], "kernel")])

    def test_launched_wait_is_read(self):
        # The library writes class "launched" where its net plugin does not carry the communicator (the finalize
        # dump of a communicator aborted after a peer died): not bad input, no edge, not a root by itself.
        rc, out, err = self.run_files({0: wait("launched"), 1: wait("launched")})
        self.assertEqual(rc, 1, err)
        r = json.loads(out)
        waits = [f for f in r["communicators"][0]["findings"] if f["kind"] == "wait"]
        self.assertEqual([(f["ranks"], f["class"]) for f in waits], [([0], "launched"), ([1], "launched")])
        self.assertIn("net plugin does not carry this communicator", waits[0]["text"])
        self.assertEqual([f["kind"] for f in r["communicators"][0]["findings"] if f.get("root") is not None], ["stuck"])

    def test_malformed_wait_is_bad_input(self):
        good = wait("peer", peers=[waits_on(1)])
        cases = [("x", "wait: expected object or null, got string"),
                 (dict(good, **{"class": "gpu"}), "wait.class: expected 'host', 'peer', 'kernel' or 'launched', got 'gpu'"),
                 ({k: v for k, v in good.items() if k != "threshold_ns"}, "wait.threshold_ns: missing"),
                 (dict(good, peers=[dict(waits_on(1), peer_global_rank="1")]),
                  "wait.peers[0].peer_global_rank: expected integer or null, got string"),
                 (dict(good, peers=[{k: v for k, v in waits_on(1).items() if k != "direction"}]),
                  "wait.peers[0].direction: missing"),
                 (dict(good, peers=[dict(waits_on(1), direction="both")]),
                  "wait.peers[0].direction: expected 'send' or 'recv', got 'both'"),
                 (dict(good, peers={}), "wait.peers: expected array, got object")]
        for bad, message in cases:
            rc, _, err = self.run_files({0: bad, 1: None})
            self.assertEqual(rc, 2, (bad, err))
            self.assertIn(f"ncclscope-comm-aa-rank0.json.gz: {message}", err)
            self.assertEqual(err.count("\n"), 1, err)


class StragglerTest(unittest.TestCase):
    def jobs(self, late_rank, late_ns, hosts=("h", "h", "h"), n=8):
        return comm(*StragglerTest.raw_jobs(late_rank, late_ns, hosts, n))

    @staticmethod
    def raw_jobs(late_rank, late_ns, hosts=("h", "h", "h"), n=8):
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
        return ds

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

    def test_last_by_chance_is_no_straggler(self):
        """2 ranks: last in 3 of 4 matches, 3 ms ahead, is what a coin toss gives (chance 0.31); last in 10 of
        10 is not (0.001)."""
        def pair(n, late_in):
            ds = []
            for r in range(2):
                recs = [coll("AllReduce", s, start_ns=10**9 + s * 100 * MS + (3 * MS if (r == 1) == (s in late_in)
                                                                                else 0), duration_ns=MS)
                        for s in range(n)]
                ds.append(dump(r, completed=recs, host="h"))
            return comm(*ds)
        s = stragglers.diagnose(pair(4, {0, 1, 2}))
        self.assertEqual((s["rank"], s["last_count"]), (1, 3))
        self.assertAlmostEqual(s["chance"], 5 / 16)
        self.assertFalse(s["is_straggler"])
        s = stragglers.diagnose(pair(10, set(range(10))))
        self.assertEqual((s["rank"], s["last_count"], s["is_straggler"]), (1, 10, True))

    def test_only_collectives_on_every_rank(self):
        ranks = self.jobs(2, 20 * MS, n=2)
        self.assertIsNone(stragglers.diagnose(ranks))

    def test_report_names_straggler(self):
        result = report.analyze({"0xaa": self.jobs(2, 20 * MS)})
        [entry] = result["entries"]
        self.assertEqual((entry["status"], entry["culprits"]), ("straggler", [2]))
        self.assertIn("STRAGGLER: rank 2 arrives last in 8/8 collectives", entry["verdict"])
        self.assertEqual([(c["kind"], c["pid"]) for c in result["culprits"]], [("straggler", 102)])

    def p2p_ring(self, late_rank, late_ns, n=8, hosts=("a", "b", "c")):
        """Each rank sends to rank+1 and receives from rank-1; a late rank arrives late at both its pairs, so its
        own operations are the short ones (its partners waited for it)."""
        ds = []
        for r in range(3):
            recs = []
            for s in range(1, n + 1):
                for func, peer in (("Send", (r + 1) % 3), ("Recv", (r - 1) % 3)):
                    pair_late = late_rank in (r, peer)
                    dur = (2 * MS if r == late_rank else late_ns + 2 * MS) if pair_late else 2 * MS + r * 10_000
                    recs.append(p2p(func, peer, s, start_ns=10**9 + s * 100 * MS, duration_ns=dur,
                                    timing_source="proxy", end_ns=0))
            ds.append(dump(r, completed=recs, host=hosts[r]))
        return comm(*ds)

    def test_p2p_straggler(self):
        s = stragglers.diagnose(self.p2p_ring(1, 5 * MS), "p2p")
        self.assertEqual((s["method"], s["rank"], s["is_straggler"], s["last_count"], s["ops"]),
                         ("durations", 1, True, 16, 16))
        result = report.analyze({"0xaa": self.p2p_ring(1, 5 * MS)})
        self.assertEqual([c["where"][0]["rank"] for c in result["culprits"]], [1])
        self.assertIn("point-to-point", result["entries"][0]["verdict"])
        self.assertFalse(stragglers.diagnose(self.p2p_ring(1, 100_000), "p2p")["is_straggler"])

    def test_symmetric_barrier_waits(self):
        # No operation matched on every rank (empty recorders), but NCCL 2.31's symmetric kernels report how
        # long each rank waited at the barrier: the straggler waited least.
        waits = {0: 21 * MS, 1: 20 * MS, 2: MS // 10}
        ranks = comm(*(dump(r, kernel_phases={"ops": 10, "symmetric_ops": 10, "symmetric_barrier_ns": 10 * w,
                                              "initial_sync_ns": 10 * w, "compute_ns": 0, "final_sync_ns": 0})
                       for r, w in waits.items()))
        self.assertIsNone(stragglers.diagnose(ranks))
        result = report.analyze({"0xaa": ranks})
        self.assertEqual([(c["kind"], c["where"][0]["rank"]) for c in result["culprits"]], [("straggler", 2)])
        self.assertIn("rank 2 waits least at the symmetric-kernel barrier of 10 collectives, 19.90 ms",
                      result["entries"][0]["verdict"])
        # With matched operations too, the barrier waits are shown beside the main method's figures.
        jobs = self.jobs(2, 20 * MS)
        for r, d in jobs.items():
            d["kernel_phases"] = {"symmetric_ops": 8, "symmetric_barrier_ns": 8 * waits[r]}
        [f] = [f for f in report.analyze({"0xaa": jobs})["entries"][0]["findings"] if f["kind"] == "straggler"]
        self.assertIn("symmetric-kernel barrier wait per operation, ms: 0: 21.00, 1: 20.00, 2: 0.10", f["text"])

    def test_realtime_needs_lateness_above_the_clock_error(self):
        ranks = self.jobs(1, 5 * MS, hosts=("a", "b", "c"))
        for r, d in ranks.items():
            d["recent"]["timing"] = ["cpu"] * len(d["recent"]["timing"])  # no GPU timing: clocks decide
            d["clock"] = {"mono_before_ns": 0, "realtime_ns": 10**18, "mono_after_ns": 1000, "esterror_ns": MS,
                          "maxerror_ns": 10 * MS, "synced": True}
        s = stragglers.diagnose(ranks)
        self.assertEqual((s["method"], s["rank"], s["is_straggler"]), ("realtime", 1, True))
        for d in ranks.values():
            d["clock"]["esterror_ns"] = 4 * MS  # combined 8 ms > the 5 ms lateness: could be the clocks
        s = stragglers.diagnose(ranks)
        self.assertEqual((s["rank"], s["is_straggler"]), (1, False))
        self.assertGreater(s["clock_error_ns"], 5 * MS)


class FileCase(unittest.TestCase):
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


class InputTest(FileCase):
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

    def test_a_stall_dump_and_a_later_request_dump_of_a_rank(self):
        # The files the library writes for one rank (docs/dump-format.md): the stall dump, with the `wait` of
        # AllReduce seq 4, then a request dump (SIGUSR2) without one. The request's snapshot is the state; the
        # stall's wait is kept while seq 4 is still in flight there, dropped once it has completed.
        os.mkdir(os.path.join(self.dir.name, "h0"))
        stuck = [coll("AllReduce", 4, **NET_STUCK)]
        stall = dump(0, nranks=1, completed=history(4), in_flight=stuck, stalled=True, snapshot_monotonic_ns=1,
                     reason="stall", wait=wait("kernel"))
        self.write_v2("h0/ncclscope-comm-aa-rank0-stall.json.gz", stall)
        for later, kept in ((dump(0, nranks=1, completed=history(4), in_flight=stuck, snapshot_monotonic_ns=2,
                                  reason="request", wait=None), True),
                            (dump(0, nranks=1, completed=history(5), snapshot_monotonic_ns=3, reason="request"), False)):
            self.write_v2("h0/ncclscope-comm-aa-rank0-request.json.gz", later)
            [d] = dumps.load_all([self.dir.name])["0x00000000000000aa"].values()
            self.assertEqual((d["reason"], d["snapshot_monotonic_ns"]), ("request", later["snapshot_monotonic_ns"]))
            self.assertEqual(d.get("wait"), wait("kernel") if kept else None)
            self.assertEqual(d.get("_wait_path", "").endswith("-stall.json.gz"), kept)

    def write_v2(self, name, d):
        with open(os.path.join(self.dir.name, name), "wb") as f:
            f.write(v2_bytes(d))

    def test_json_and_exit_status(self):
        self.write("ncclscope-comm-aa-rank0.json", dump(0, nranks=2, completed=history(3)))
        rc, out, _ = self.run_main("--json", self.dir.name)
        r = json.loads(out)
        self.assertEqual((rc, r["status"], r["communicators"][0]["status"]), (1, "problem", "missing"))
        self.write("ncclscope-comm-aa-rank1.json", dump(1, nranks=2, completed=history(3)))
        rc, out, _ = self.run_main(self.dir.name)
        self.assertEqual(rc, 0)
        self.assertTrue(out.startswith("healthy: 1 communicator(s)"), out)


class V2FileTest(FileCase):
    def write_bytes(self, name, data):
        path = os.path.join(self.dir.name, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_a_damaged_recorder_member_is_bad_input_in_every_mode(self):
        waiting = [coll("AllReduce", 4, **STUCK)]
        for r in (0, 2):
            self.write_bytes(f"ncclscope-comm-aa-rank{r}.json.gz",
                             v2_bytes(dump(r, completed=history(4), in_flight=waiting, stalled=True)))
        # Rank 1's recorder member is garbage: a verdict does not parse it, but a dump damaged after its summary
        # is not one to draw a verdict from (analyze_gzip_members_test.py has every case).
        bad_fr = gzip.compress(json.dumps(dump(1, completed=history(4))).encode())[:-8] + b"garbage!"
        self.write_bytes("ncclscope-comm-aa-rank1.json.gz",
                         v2_bytes(dump(1, completed=history(4)))[:-40] + bad_fr)
        for mode in ([], ["--json"], ["--trace", os.path.join(self.dir.name, "t.json")]):
            rc, _, err = self.run_main(*mode, self.dir.name)
            self.assertEqual(rc, 2, (mode, err))
            self.assertIn("ncclscope-comm-aa-rank1.json.gz: ", err)
            self.assertIn("flight recorder (gzip member 2)", err)

    def test_a_world_size_past_the_rank_bound_is_bad_input(self):
        # Found by dump_reader_fuzz.py: identity.world_size 2**31 (or 2**64-1) made the analyzer build a set of
        # that many global ranks (MemoryError, exit 3; the OOM killer without a memory limit).
        for world in (2**31, 2**64 - 1, 0):
            d = dict(dump(0, nranks=1, completed=history(2)), identity={"global_rank": 0, "world_size": world})
            path = self.write_bytes("ncclscope-comm-aa-rank0.json.gz", v2_bytes(d))
            rc, _, err = self.run_main(path)
            self.assertEqual(rc, 2, (world, err))
            self.assertIn(f"{path}: identity.world_size: {world} outside 1..{schema.MAX_RANKS}", err)

    def test_a_summary_without_p2p_is_bad_input(self):
        # Found by dump_reader_fuzz.py: a point-to-point hang whose waiting peer's summary had no `p2p` list
        # (every summary the writer makes has one) ended in KeyError, exit 3.
        waiting = [dict(coll("AllReduce", 2, **STUCK), kind="p2p", func="Send", peer=1)]
        self.write_bytes("ncclscope-comm-aa-rank0.json.gz", v2_bytes(dump(0, nranks=2, in_flight=waiting)))
        path = self.write_bytes("ncclscope-comm-aa-rank1.json.gz", v2_bytes(dump(1, nranks=2), drop=("p2p",)))
        rc, _, err = self.run_main(self.dir.name)
        self.assertEqual(rc, 2, err)
        self.assertIn(f"{path}: p2p: missing", err)

    def test_trace_reads_the_recorder_member(self):
        for r in (0, 1):
            self.write_bytes(f"ncclscope-comm-aa-rank{r}.json.gz", v2_bytes(dump(r, nranks=2, completed=history(3))))
        out_path = os.path.join(self.dir.name, "t.json")
        rc, out, err = self.run_main("--trace", out_path, self.dir.name)
        self.assertEqual(rc, 0, err)
        events = json.load(open(out_path))["traceEvents"]
        self.assertEqual(sum(e["ph"] == "X" for e in events), 6)

    def test_bad_gzip_exits_2_naming_the_file(self):
        good = v2_bytes(dump(0, nranks=1, completed=history(2)))
        cases = {"trunc": good[:20], "notgz": b"\x1f\x8b not really", "v1part": gzip.compress(b'{"schema": "ncclscope.comm.v2"}'),
                 "plain_v2": json.dumps({"schema": "ncclscope.comm.v2", "part": "summary"}).encode()}
        for name, data in cases.items():
            path = self.write_bytes(f"ncclscope-comm-{name}-rank0.json.gz", data)
            rc, _, err = self.run_main(path)
            self.assertEqual(rc, 2, (name, err))
            self.assertIn(path, err)

    def test_many_files_use_workers_and_agree(self):
        for r in range(80):
            self.write_bytes(f"ncclscope-comm-aa-rank{r}.json.gz", v2_bytes(dump(r, nranks=81, completed=history(2))))
        serial = dumps.load_all([self.dir.name], jobs=1)
        parallel = dumps.load_all([self.dir.name], jobs=2)
        self.assertEqual(sorted(serial["0x00000000000000aa"]), sorted(parallel["0x00000000000000aa"]))
        rc, out, _ = self.run_main("--jobs", "2", self.dir.name)
        self.assertEqual(rc, 1)
        self.assertIn("rank 80 wrote no dump", out)


class FormatTest(unittest.TestCase):
    def test_rank_ranges(self):
        from ncclscope_analysis.progress import rank_list, ranges
        self.assertEqual(ranges([0, 1, 2, 5, 7, 8]), "0-2,5,7,8")
        self.assertEqual(rank_list(range(16384)), "ranks 0-16383 (16384 ranks)")
        self.assertEqual(rank_list([3]), "rank 3")

    def test_missing_ranks_are_runs_not_lists(self):
        # The ranks without a dump are the gaps between those found: held and written as runs, counted exactly.
        from ncclscope_analysis.progress import MAX_RUNS_SHOWN, RankRuns, rank_list
        m = RankRuns.missing([0, 5, 6, 9], 12)
        self.assertEqual((m.runs, len(m), m.first(3)), ([(1, 4), (7, 8), (10, 11)], 8, [1, 2, 3]))
        self.assertEqual([r for r in range(-1, 13) if r in m], [1, 2, 3, 4, 7, 8, 10, 11])
        self.assertNotIn(None, m)
        self.assertEqual(rank_list(RankRuns.missing([0], 1 << 20)), "ranks 1-1048575 (1048575 ranks)")
        scattered = RankRuns.missing(range(0, 4 * MAX_RUNS_SHOWN, 2), 1 << 20)
        self.assertTrue(rank_list(scattered).endswith(f",... ({(1 << 20) - 2 * MAX_RUNS_SHOWN} ranks)"))

    def test_many_missing_ranks_blame_a_few_and_count_the_rest(self):
        f = problems(hang.diagnose(comm(dump(0, nranks=1 << 20, in_flight=[coll("AllReduce", 3, **STUCK)])),
                                   1 << 20))[0]
        self.assertEqual((f["kind"], f["ranks"], f["missing_count"], f["missing_ranges"]),
                         ("missing", list(range(1, 17)), (1 << 20) - 1, [[1, (1 << 20) - 1]]))


def with_nics(rank, host, seconds, rdma=(), tcp=(), uses=None, mapping="exact", downs=(), carrier=()):
    """A healthy rank's dump carrying its host's NIC events since it began (host_nics), and the NICs its traffic
    uses (uses: [(nic, port or None)]); downs: {rdma nic: link downs}, carrier: [(interface, carrier changes)]."""
    downs = dict(downs)
    h = {"seconds": seconds,
         "rdma": [{"nic": n, "port": 1, "retransmit": r, "congestion": 1000, "error": e, "link_downs": downs.get(n, 0)}
                  for n, r, e in rdma],
         "tcp": [{"nic": n, "retransmits": r} for n, r in tcp],
         "netdevs": [{"nic": n, "carrier_changes": c} for n, c in carrier]}
    if uses is not None:
        h["rank_nics"] = {"mapping": mapping,
                          "nics": [{"nic": n, **({"port": p} if p is not None else {})} for n, p in uses]}
    return dump(rank, nranks=4, completed=history(3), host=host, host_nics=h)


class NicsTest(unittest.TestCase):
    def test_the_lossy_port_is_named_and_the_far_end_below_a_quarter_is_not(self):
        c = comm(with_nics(0, "a", 100, rdma=[("mlx5_0", 750, 50), ("mlx5_1", 0, 0)]),
                 with_nics(1, "a", 60, rdma=[("mlx5_0", 400, 0)]),  # a younger rank of the same host: less
                 with_nics(2, "b", 100, rdma=[("mlx5_0", 150, 0)]),  # the far end: 1.5/s, under a quarter of 8/s
                 with_nics(3, "c", 100, tcp=[("eth0", 50)]))  # under 1/s
        got = nics.degraded({"0xaa": c})
        self.assertEqual([(n["host"], n["nic"], n["port"], n["per_second"]) for n in got], [("a", "mlx5_0", 1, 8.0)])
        self.assertIn("NIC mlx5_0 port 1 on a: 800 retransmission and error events in 100 s (8.0/s)",
                      nics.describe(got[0]))

    def test_both_ends_of_one_lossy_link_and_tcp(self):
        c = comm(with_nics(0, "a", 10, rdma=[("rxe0", 250, 0)]), with_nics(1, "b", 10, rdma=[("rxe0", 160, 0)]),
                 with_nics(2, "c", 10, tcp=[("vdata", 400)]), with_nics(3, "d", 10))
        got = nics.degraded({"0xaa": c})
        self.assertEqual([(n["host"], n["nic"]) for n in got], [("c", "vdata"), ("a", "rxe0"), ("b", "rxe0")])

    def test_the_ranks_behind_a_degraded_nic_are_named_with_how_it_is_known(self):
        c = comm(with_nics(0, "a", 10, rdma=[("mlx5_0", 250, 0), ("mlx5_1", 0, 0)], uses=[("mlx5_0", 1)],
                           mapping="nearest_gpu"),
                 with_nics(1, "a", 10, uses=[("mlx5_1", 1)], mapping="nearest_gpu"),
                 with_nics(2, "b", 10, tcp=[("eth0", 300)], uses=[("eth0", None)]),
                 with_nics(3, "b", 10, uses=[("eth0", None)]))
        got = {n["nic"]: n for n in nics.degraded({"0xaa": c})}
        self.assertEqual((got["mlx5_0"]["ranks"], got["mlx5_0"]["mapping"]), ([0], "nearest_gpu"))
        self.assertEqual((got["eth0"]["ranks"], got["eth0"]["mapping"]), ([2, 3], "exact"))
        self.assertTrue(nics.describe(got["eth0"]).endswith("; used by ranks 2, 3 (exact)"), nics.describe(got["eth0"]))
        d = dumps.normalize(json.loads(json.dumps(with_nics(0, "a", 10, uses=[("mlx5_0", 1)]))))
        s = {k: v for k, v in d.items() if not k.startswith("_")}
        s.update(schema=schema.SCHEMA_V2, part="summary")
        schema.check(s)

    def test_congestion_alone_old_dumps_and_a_short_jobs_setup_name_nothing(self):
        c = comm(with_nics(0, "a", 10), dump(1, nranks=4, completed=history(3)),
                 with_nics(2, "b", 0.35, tcp=[("lo", 4)]))  # 11/s, but 4 segments at connection setup
        self.assertEqual(nics.degraded({"0xaa": c}), [])

    def test_report_prints_it_and_the_json_carries_it(self):
        c = comm(with_nics(0, "a", 10, rdma=[("rxe0", 250, 0)]), with_nics(1, "a", 10), with_nics(2, "b", 10),
                 with_nics(3, "b", 10))
        result = report.analyze({"0xaa": c})
        out = io.StringIO()
        report.print_text(result, out)
        self.assertIn("degraded NIC rxe0 port 1 on a: 250 retransmission and error events in 10 s (25.0/s)",
                      out.getvalue())
        self.assertEqual(report.to_json(result)["degraded_nics"][0]["host"], "a")

    def test_a_flapping_link_is_named_from_its_link_downs(self):
        c = comm(with_nics(0, "a", 10, rdma=[("mlx5_0", 0, 3), ("mlx5_1", 0, 0)], downs={"mlx5_0": 3},
                           uses=[("mlx5_0", 1)]),
                 with_nics(1, "a", 5, rdma=[("mlx5_0", 0, 1)], downs={"mlx5_0": 1}),  # began later: fewer
                 with_nics(2, "b", 10, carrier=[("vdata", 4)], uses=[("vdata", None)]),
                 with_nics(3, "c", 10, carrier=[("vdata", 0)]))
        got = nics.flapping({"0xaa": c})
        self.assertEqual([(n["host"], n["nic"], n["port"], n["link_downs"]) for n in got],
                         [("a", "mlx5_0", 1, 3), ("b", "vdata", None, 2)])
        self.assertEqual(nics.describe_flap(got[1]), "NIC vdata on b: its link went down 2 time(s); used by rank 2 (exact)")
        result = report.analyze({"0xaa": c})
        out = io.StringIO()
        report.print_text(result, out)
        self.assertIn("flapping NIC mlx5_0 port 1 on a: its link went down 3 time(s)", out.getvalue())
        self.assertEqual(report.to_json(result)["flapping_nics"][0]["nic"], "mlx5_0")
        self.assertEqual(nics.flapping({"0xaa": comm(with_nics(0, "a", 10, rdma=[("mlx5_0", 0, 0)]))}), [])

    def test_schema_checks_host_nics(self):
        d = dumps.normalize(json.loads(json.dumps(with_nics(0, "a", 10, rdma=[("rxe0", 1, 0)]))))
        s = {k: v for k, v in d.items() if not k.startswith("_")}
        s.update(schema=schema.SCHEMA_V2, part="summary")
        schema.check(s)
        s["host_nics"]["rdma"][0]["retransmit"] = "many"
        with self.assertRaisesRegex(schema.SchemaError, r"host_nics.rdma\[0\].retransmit: expected integer"):
            schema.check(s)


class TraceTest(unittest.TestCase):
    def test_one_process_per_rank_one_track_per_comm(self):
        a = {d["rank"]: d for d in (dump(r, nranks=2, completed=history(2), comm="0xa") for r in range(2))}
        b = {d["rank"]: d for d in (dump(r, nranks=2, completed=history(3), in_flight=[coll("AllReduce", 3, **STUCK)],
                                         comm="0xb") for r in range(2))}
        events = trace.chrome_trace({"0xa": a, "0xb": b})["traceEvents"]
        self.assertEqual(len({e["pid"] for e in events}), 2)
        self.assertEqual(len({(e["pid"], e["tid"]) for e in events if e["ph"] == "X"}), 4)
        self.assertEqual(sum(e["ph"] == "X" for e in events), 2 * 2 + 2 * 4)
        self.assertIn("AllReduce seq 3 (in flight)", {e["name"] for e in events})

RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "rules")


def alert_classes():
    """The `class` label values the shipped hang rules give a culprit (rules/ncclscope-hang.yml)."""
    import re
    with open(os.path.join(RULES, "ncclscope-hang.yml")) as f:
        return set(re.findall(r"^\s+class: (\w+)\s*$", f.read(), re.M))


class VocabularyTest(FileCase):
    """One vocabulary from the alert to the analyzer: classes and exit status."""

    def test_every_alert_class_is_an_analyzer_class_and_back(self):
        hang_classes = {c for c, a in report.ALERT_OF_CLASS.items() if a == "NcclscopeHang"}
        self.assertEqual(alert_classes(), hang_classes)
        from ncclscope_analysis import waits
        self.assertEqual(set(waits.CLASS_OF_KIND.values()), hang_classes)
        self.assertEqual(report.ALERT_OF_CLASS["straggler"], "NcclscopeStraggler")

    def test_a_straggler_culprit_has_a_class_in_json_and_text(self):
        result = report.analyze({"0xaa": StragglerTest.jobs(None, 2, 20 * MS)})
        [c] = report.to_json(result)["culprits"]
        self.assertEqual((c["kind"], c["class"], c["alert"]), ("straggler", "straggler", "NcclscopeStraggler"))
        out = io.StringIO()
        report.print_text(result, out)
        self.assertIn("culprit  straggler [class straggler]: pid 102 on h: rank 2 arrives last", out.getvalue())

    def test_a_hang_culprit_names_its_class_in_text_without_wait_fields(self):
        # Dumps without the `wait` field: the class is the alert's all the same, on the culprit line too.
        waiting = [coll("AllReduce", 4, **STUCK)]
        ranks = comm(dump(0, completed=history(4), in_flight=waiting, stalled=True), dump(1, completed=history(4)),
                     dump(2, completed=history(4), in_flight=waiting, stalled=True))
        result = report.analyze({"0xaa": ranks})
        [c] = report.to_json(result)["culprits"]
        self.assertEqual((c["kind"], c["class"], c["alert"]), ("behind", "not_joined", "NcclscopeHang"))
        out = io.StringIO()
        report.print_text(result, out)
        self.assertIn("culprit  hang [class not_joined]: ", out.getvalue())
        self.assertIn("\n  behind    [class not_joined] rank 1 never issued AllReduce seq 4", out.getvalue())

    def exit_of(self, ranks):
        for n in os.listdir(self.dir.name):
            os.unlink(os.path.join(self.dir.name, n))
        for d in ranks:
            self.write(f"ncclscope-comm-aa-rank{d['rank']}.json", d)
        rc, out, _ = self.run_main("--json", self.dir.name)
        return rc, json.loads(out)

    def test_exit_status_tells_hang_from_straggler(self):
        healthy = [dump(r, completed=history(4)) for r in range(3)]
        waiting = [coll("AllReduce", 4, **STUCK)]
        hung = [dump(0, completed=history(4), in_flight=waiting, stalled=True), dump(1, completed=history(4)),
                dump(2, completed=history(4), in_flight=waiting, stalled=True)]
        late = [dict(d, schema=schema.SCHEMA) for d in StragglerTest.raw_jobs(2, 20 * MS)]
        self.assertEqual((cli.HEALTHY, cli.HANG, cli.STRAGGLER, cli.BAD_INPUT), (0, 1, 6, 2))
        rc, r = self.exit_of(healthy)
        self.assertEqual((rc, r["status"], r["problem"]), (0, "healthy", None))
        rc, r = self.exit_of(hung)
        self.assertEqual((rc, r["status"], r["problem"]), (1, "problem", "hang"))
        rc, r = self.exit_of(late)
        self.assertEqual((rc, r["status"], r["problem"]), (6, "problem", "straggler"))
        self.assertIn("6 straggler", cli.EXIT_STATUS)


class JobFilterTest(FileCase):
    def setUp(self):
        super().setUp()
        for job, ranks in (("job-a", 3), ("job-b", 2)):
            os.mkdir(os.path.join(self.dir.name, job))
            for r in range(ranks):
                self.write(f"{job}/ncclscope-comm-{ranks}-rank{r}.json",
                           dump(r, nranks=ranks, completed=history(4), comm=f"0x{ranks:016x}", job_id=job))

    def test_two_jobs_are_refused_with_the_list(self):
        rc, out, err = self.run_main(self.dir.name)
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("the dumps hold 2 jobs: job-a (3 dumps), job-b (2 dumps); pick one with --job ID", err)

    def test_job_picks_one(self):
        rc, out, _ = self.run_main("--json", "--job", "job-b", self.dir.name)
        r = json.loads(out)
        self.assertEqual((rc, [c["summary"]["ranks_found"] for c in r["communicators"]]), (0, [[0, 1]]))
        rc, _, err = self.run_main("--job", "job-c", self.dir.name)
        self.assertEqual(rc, 2)
        self.assertIn("no dump of job 'job-c'; the dumps hold: job-a (3 dumps), job-b (2 dumps)", err)

    def test_all_jobs_mixes_them(self):
        rc, out, _ = self.run_main("--json", "--all-jobs", self.dir.name)
        self.assertEqual((rc, len(json.loads(out)["communicators"])), (0, 2))
        with self.assertRaises(SystemExit) as usage, redirect_stderr(io.StringIO()):
            cli.main(["--all-jobs", "--job", "job-a", self.dir.name])
        self.assertEqual(usage.exception.code, 2)


class DumpAgeTest(FileCase):
    def test_each_dump_has_its_age_now_and_before_the_newest(self):
        base = 1_700_000_000 * 10**9
        for r, back_s in ((0, 0), (1, 30), (2, 5)):
            clock = {"mono_before_ns": 10**12, "realtime_ns": base - back_s * 10**9, "mono_after_ns": 10**12 + 100}
            self.write(f"ncclscope-comm-aa-rank{r}.json", dump(r, completed=history(4), clock=clock,
                                                               reason="request"))
        comms = dumps.load_all([self.dir.name])
        result = report.analyze(comms, now_ns=base + 60 * 10**9)
        ages = report.to_json(result)["communicators"][0]["summary"]["dumps"]
        self.assertEqual([(a["rank"], a["age_s"], a["before_newest_s"]) for a in ages],
                         [(0, 60.0, 0.0), (1, 90.0, 30.0), (2, 65.0, 5.0)])
        out = io.StringIO()
        report.print_text(result, out)
        self.assertIn("  dumps     written 60 s to 90 s ago; oldest: rank 1 (request) written 90 s ago, 30 s before "
                      "the job's newest dump;", out.getvalue())

    def test_without_a_clock_sample_the_file_time_dates_it(self):
        path = self.write("ncclscope-comm-aa-rank0.json", dump(0, nranks=1, completed=history(2)))
        os.utime(path, ns=(10**18, 10**18))
        [d] = dumps.load_all([path])["0x00000000000000aa"].values()
        self.assertEqual(d["_written_ns"], 10**18)


class RecoveredTest(FileCase):
    """Stall dumps left by a job that went on are recovered stalls, not a hang."""

    def stall(self, r, seq=4, t=1):
        return dump(r, completed=history(seq), in_flight=[coll("AllReduce", seq, **STUCK)], stalled=True,
                    reason="stall", snapshot_monotonic_ns=t,
                    clock={"mono_before_ns": t, "realtime_ns": 10**18 + t, "mono_after_ns": t})

    def test_leftover_stall_dumps_alone_are_a_hang(self):
        # Every rank's stall dump and nothing later: nothing shows progress, the verdict stays a hang.
        ranks = comm(*(self.stall(r) for r in range(3)))
        result = report.analyze({"0xaa": ranks})
        self.assertEqual(result["entries"][0]["status"], "hang")

    def test_a_later_dump_of_the_rank_past_the_stall(self):
        os.mkdir(os.path.join(self.dir.name, "h"))
        for r in range(3):
            self.write(f"h/ncclscope-comm-aa-rank{r}-stall.json", self.stall(r))
            self.write(f"h/ncclscope-comm-aa-rank{r}-request.json",
                       dump(r, completed=history(9), reason="request", snapshot_monotonic_ns=40 * 10**9,
                            clock={"mono_before_ns": 1, "realtime_ns": 10**18 + 40 * 10**9, "mono_after_ns": 1}))
        rc, out, _ = self.run_main(self.dir.name)
        self.assertEqual(rc, 0, out)
        self.assertTrue(out.startswith("healthy: 1 communicator(s), 3 rank dumps; 1 communicator(s) stalled and "
                                       "recovered"), out)
        self.assertNotIn("PROBLEM", out)
        self.assertIn("recovered rank 0's stall dump (written ", out)
        self.assertIn("40 s before the job's newest dump) waited in AllReduce seq 4; its later request dump no "
                      "longer has it in flight: recovered, not a hang", out)

    def test_other_ranks_completed_past_the_stall(self):
        # Rank 0's only dump is its stall dump; ranks 1 and 2 wrote their finalize dumps later, with seq 8 done:
        # rank 0 took part in it, so its stall in seq 4 is over.
        ranks = comm(self.stall(0), *(dump(r, completed=history(9), reason="finalize", snapshot_monotonic_ns=9)
                                      for r in (1, 2)))
        result = report.analyze({"0xaa": ranks}, now_ns=10**18 + 61 * 10**9)
        [e] = result["entries"]
        self.assertEqual(e["status"], "healthy")
        [f] = [f for f in e["findings"] if f["kind"] == "recovered"]
        self.assertEqual((f["ranks"], f["seq"], f["evidence"]["rank"], round(f["age_s"])), ([0], 4, 1, 61))
        self.assertIn("recovered from a stall on rank 0", e["verdict"])

    def test_a_hang_from_old_dumps_says_how_to_tell_a_recovery(self):
        ranks = comm(*(self.stall(r) for r in range(3)))
        for now_s, noted in ((30, False), (600, True)):
            result = report.analyze({"0xaa": ranks}, now_ns=10**18 + now_s * 10**9)
            r = report.to_json(result)
            self.assertEqual((r["problem"], round(r["newest_dump_age_s"])), ("hang", now_s))
            self.assertEqual(r["note"] is not None, noted)
            out = io.StringIO()
            report.print_text(result, out)
            self.assertEqual("  note     the job's newest dump was written 10 min ago: if the job still runs, this "
                             "stall may be over" in out.getvalue(), noted)

    def recovered(self, r, seq=4, t=9):
        return dump(r, completed=history(seq + 3), reason="recovered", snapshot_monotonic_ns=t,
                    clock={"mono_before_ns": t, "realtime_ns": 10**18 + t, "mono_after_ns": t})

    def test_a_running_job_whose_stall_is_over(self):
        # The dumps a job still running leaves after a pause of rank 1: ranks 0 and 2 stalled waiting on it and
        # wrote their recovered dumps once they went on; rank 1 never stalled, so it never dumped.
        os.mkdir(os.path.join(self.dir.name, "h"))
        for r in (0, 2):
            self.write(f"h/ncclscope-comm-aa-rank{r}-stall.json", self.stall(r))
            self.write(f"h/ncclscope-comm-aa-rank{r}-recovered.json", self.recovered(r))
        rc, out, _ = self.run_main(self.dir.name)
        self.assertEqual(rc, 0, out)
        self.assertNotIn("PROBLEM", out)
        self.assertIn("no rank stuck or late; in 1 of them ranks that never stalled wrote no dump", out)
        self.assertIn("undumped  rank 1 wrote no dump: a rank dumps on its own only when it stalls, and every stall "
                      "found is over", out)
        self.assertIn("its later recovered dump no longer has it in flight: recovered, not a hang", out)

    def test_a_rank_without_a_dump_beside_a_stall_not_over(self):
        # The same, but nothing shows rank 2's stall over (rank 0 went on only as far as the operation both waited
        # in): rank 1's silence is evidence again.
        ranks = comm(self.stall(0), self.stall(2))
        ranks[0] = dict(comm(dump(0, completed=history(5), reason="recovered", snapshot_monotonic_ns=9))[0],
                        _older=(ranks[0],))
        result = report.analyze({"0xaa": ranks})
        [e] = result["entries"]
        self.assertNotEqual(e["status"], "healthy")
        self.assertEqual([f["kind"] for f in e["findings"] if f["kind"] == "undumped"], [])

    def test_a_stall_still_in_flight_later_is_no_recovery(self):
        later = dict(self.stall(0, t=9), reason="request", stalled=False)
        ranks = {0: dict(comm(later)[0], _older=(comm(self.stall(0))[0],))}
        ranks.update({r: comm(self.stall(r))[r] for r in (1, 2)})
        result = report.analyze({"0xaa": ranks})
        self.assertEqual(result["entries"][0]["status"], "hang")
        self.assertEqual([f for f in result["entries"][0]["findings"] if f["kind"] == "recovered"], [])


if __name__ == "__main__":
    unittest.main(verbosity=1)

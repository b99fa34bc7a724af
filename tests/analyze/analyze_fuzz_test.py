#!/usr/bin/env python3
"""Property-based fuzz of ncclscope-analyze (hypothesis): whatever the dumps hold, main() ends with exit
status 0, 1 or 2 (2 with a one-line message naming the file), never another exception.

Inputs, as v1 dumps (one JSON document) or v2 dumps (gzip: a summary member, then a flight-recorder member;
the compressed bytes sometimes cut short): five jobs (the real NCCL 2.28.9 collective hang of tests/data/golden,
and made from it the same job healthy, a point-to-point hang, a straggler, and both ranks inside the all-reduce
with `wait` fields naming each other) whose dumps get fields replaced by other values of the same type or by
JSON values of any type, deleted, or nested 900 to 50,000 deep, their text truncated or spliced with invalid
UTF-8; and random JSON. Each case writes one to three dumps into a directory and calls the
analyzer in process. Derandomized: the same cases every run.

  python3 analyze_fuzz_test.py TOOLS_ANALYZE_DIR [CASES]   (default 10,000 cases)
"""
import copy
import gzip
import io
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tools", "analyze"))
CASES = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
try:
    from hypothesis import HealthCheck, given, settings, strategies as st
    from hypothesis.configuration import set_hypothesis_home_dir
except ImportError as e:
    sys.exit(f"FAIL: {sys.executable} cannot import hypothesis ({e}); scripts/install-deps.sh installs "
             f"python3-hypothesis")
from ncclscope_analysis import cli, dumps  # noqa: E402

GOLDEN = os.path.join(HERE, "..", "data", "golden", "nccl-2.28.9", "abort", "dumps")


def scenarios():
    """[rank 0's dump, rank 1's dump] of five jobs: the golden collective hang, the same job healthy (nothing
    in flight), a point-to-point hang (rank 0's Send to 1 #2 in flight; rank 1 posted Recv from 0 #1 only), a
    straggler, and a link (both ranks inside the all-reduce, their `wait` fields naming each other)."""
    hung = []
    for rank in (0, 1):
        with open(os.path.join(GOLDEN, f"ncclscope-comm-eb6c19cd5aa7c557-rank{rank}.json")) as f:
            hung.append(json.load(f))
    healthy = copy.deepcopy(hung)
    healthy[0]["flight_recorder"]["in_flight"] = []
    p2p = copy.deepcopy(hung)
    for rank, rec in ((0, p2p[0]["flight_recorder"]["in_flight"][0]), (1, p2p[1]["flight_recorder"]["completed"][0])):
        del rec["root"]
        rec.update(kind="p2p", func="Send" if rank == 0 else "Recv", peer=1 - rank, seq=2 - rank)
    straggle = copy.deepcopy(healthy)  # five all-reduces on one host, rank 1 enqueuing each 5 ms late
    for rank, d in enumerate(straggle):
        first = d["flight_recorder"]["completed"][0]
        d["host"] = "h"
        d["ops"][0].update(count=5, last_seq=4)
        d["flight_recorder"]["completed"] = [dict(first, seq=q, start_ns=10**9 * (q + 1) + 5_000_000 * rank,
                                                  end_ns=10**9 * (q + 1) + 6_000_000) for q in range(5)]
    linked = copy.deepcopy(hung)  # both ranks inside AllReduce seq 1, each waiting on the other (a link)
    linked[1]["ops"][0]["last_seq"] = 1
    linked[1]["flight_recorder"]["in_flight"] = copy.deepcopy(linked[0]["flight_recorder"]["in_flight"])
    for rank, d in enumerate(linked):
        d["wait"] = {"class": "peer", "kind": "coll", "func": "AllReduce", "seq": 1, "arrival": 2,
                     "age_ns": 2614047655, "threshold_ns": 2000000000,
                     "peers": [{"peer_global_rank": 1 - rank, "peer_host": None, "nic": "eth0",
                                "direction": "send" if rank == 0 else "recv", "requests": 2,
                                "waiting_ns": 2600000000, "failed": rank == 1}]}
    return [hung, healthy, p2p, straggle, linked]


SCENARIOS = scenarios()
DEEP = "@@deep@@"  # a placeholder string, replaced by deep nesting once the dump is text

leaves = (st.none() | st.booleans() | st.integers() | st.integers(-2, 2**64) | st.floats()
          | st.text(max_size=12) | st.sampled_from(["\ud800", "ncclscope.comm.v1", "coll", "p2p", "Send", "Recv"]))
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def same_type(v):
    if isinstance(v, bool):
        return st.booleans()
    if isinstance(v, int):
        return st.integers(-3, 3) | st.integers(-2**63, 2**64 - 1) | st.integers(0, 1 << 20)
    if isinstance(v, str):
        return st.text(max_size=12) | st.sampled_from(["coll", "p2p", "Send", "Recv", "AllReduce", "finalize"])
    return json_values


def paths(v, prefix=()):
    """Every (container path, key) in a JSON value."""
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, item in items:
        yield prefix, k
        yield from paths(item, prefix + (k,))


@st.composite
def mutated(draw, d):
    """A dump with 1 to 4 fields replaced, deleted or nested deep, as bytes, maybe truncated or spliced."""
    depth = None
    for _ in range(draw(st.integers(1, 4))):
        where = list(paths(d))
        if not where:
            break
        prefix, key = draw(st.sampled_from(where))
        parent = d
        for k in prefix:
            parent = parent[k]
        how = draw(st.sampled_from(["same type"] * 5 + ["replace"] * 3 + ["delete", "deep"]))
        if how == "same type":  # passes the type check: the analysis itself sees odd values
            parent[key] = draw(same_type(parent[key]))
        elif how == "delete":
            del parent[key]
        elif how == "deep" and depth is None:
            depth = draw(st.sampled_from([900, 1100, 50_000]))
            parent[key] = DEEP
        else:
            parent[key] = draw(json_values)
    text = json.dumps(d, indent=draw(st.sampled_from([None, 1])))
    if depth:
        text = text.replace(f'"{DEEP}"', "[" * depth + "]" * depth, 1)
    raw = text.encode("utf-8")
    how = draw(st.sampled_from(["as is"] * 6 + ["truncate", "bad utf-8"]))
    at = draw(st.integers(0, len(raw)))
    if how == "truncate":
        raw = raw[:at]
    elif how == "bad utf-8":
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\x80"])) + raw[at:]
    return raw


@st.composite
def random_dump(draw, v2=False):
    """Random JSON, half the time an object carrying the dump schema (so that it gets past the first check)."""
    v = draw(json_values)
    if isinstance(v, dict) and draw(st.booleans()):
        v["schema"] = "ncclscope.comm.v2" if v2 else "ncclscope.comm.v1"
        if v2:
            v["part"] = "summary"
    return json.dumps(v).encode("utf-8")


def v2_summary(d):
    """A v1 dump's content as the v2 summary and flight-recorder members (docs/dump-format.md)."""
    s = dumps.normalize(json.loads(json.dumps(d)))
    s = {k: v for k, v in s.items() if not k.startswith("_")}
    s.update(schema="ncclscope.comm.v2", part="summary", identity={"global_rank": d["rank"], "world_size": 2},
             clock={"mono_before_ns": 1, "realtime_ns": 10**18, "mono_after_ns": 2, "esterror_ns": 1000,
                    "maxerror_ns": 2000, "synced": True})
    return s, {"schema": "ncclscope.comm.v2", "part": "flight_recorder",
               "completed": d["flight_recorder"]["completed"]}


@st.composite
def v2_file(draw, seed, source):
    summary, fr = v2_summary(seed)
    head = (json.dumps(summary).encode() if source == "golden" else draw(mutated(summary)) if source == "mutated"
            else draw(random_dump(v2=True)))
    tail = json.dumps(fr).encode() if draw(st.booleans()) else draw(mutated(fr))
    raw = gzip.compress(head + b"\n") + gzip.compress(tail + b"\n")
    if draw(st.sampled_from([False] * 7 + [True])):
        raw = raw[:draw(st.integers(0, len(raw)))]
    return raw


@st.composite
def cases(draw):
    """([the bytes of each rank's dump], extra arguments). Composite strategies, not st.data(): hypothesis
    formats every st.data() draw for its report, which would take most of the run."""
    job = draw(st.sampled_from(SCENARIOS))
    files = []
    for rank in range(draw(st.integers(1, 3))):
        source = draw(st.sampled_from(["golden"] * 3 + ["mutated"] * 6 + ["random"]))
        seed = copy.deepcopy(job[rank % 2])
        if draw(st.booleans()):
            files.append(("json.gz", draw(v2_file(seed, source))))
            continue
        files.append(("json", json.dumps(seed).encode() if source == "golden" else draw(mutated(seed))
                      if source == "mutated" else draw(random_dump())))
    return files, draw(st.sampled_from([[], ["--json"], ["--trace"]]))


RUNS = {"count": 0, "status": {}}
WORK = tempfile.mkdtemp(prefix="ncclscope-fuzz-")
set_hypothesis_home_dir(os.path.join(WORK, ".hypothesis"))  # its caches, not in the working directory


@settings(max_examples=CASES, deadline=None, derandomize=True, database=None, print_blob=True,
          suppress_health_check=list(HealthCheck))
@given(cases())
def test_any_dumps(case):
    files, extra = case
    work = os.path.join(WORK, "case")
    shutil.rmtree(work, ignore_errors=True)
    os.mkdir(work)
    for rank, (ext, raw) in enumerate(files):
        with open(os.path.join(work, f"ncclscope-comm-eb6c19cd5aa7c557-rank{rank}.{ext}"), "wb") as f:
            f.write(raw)
    args = [work] + extra + ([os.path.join(WORK, "trace.json")] if extra == ["--trace"] else [])
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            rc = cli.main(args)
    except SystemExit as e:
        rc = e.code
    RUNS["count"] += 1
    RUNS["status"][rc] = RUNS["status"].get(rc, 0) + 1
    message = err.getvalue()
    assert rc in (0, 1, 2, 6), f"exit {rc}: {message}"  # healthy, hang, bad input, straggler
    assert "Traceback" not in message, message
    if rc == 2 and not message.startswith("ncclscope-analyze: the dumps hold "):  # a mutated job_id: two jobs
        assert message.count("\n") == 1 and message.startswith(f"ncclscope-analyze: {work}/"), message
    else:
        assert message == "", message


if __name__ == "__main__":
    start = time.monotonic()
    try:
        test_any_dumps()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
        print(f"analyze fuzz: {RUNS['count']} cases in {time.monotonic() - start:.1f} s, exit status counts "
              f"{dict(sorted(RUNS['status'].items()))}")
    if RUNS["count"] < CASES:
        sys.exit(f"FAIL: only {RUNS['count']} of {CASES} cases ran")
    print("PASS")

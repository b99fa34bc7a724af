#!/usr/bin/env python3
"""Time-bounded mutation fuzz of ncclscope-analyze's dump reader (the `fuzz` tier).

The corpus (tests/fuzz/corpus/dump_reader/) holds one folder per case, each the dumps of one real job: v1
documents and two-member gzip v2 files. Every case is first run as it is; then, until the time budget is
spent, one case at a time is copied with one to three of its files mutated and the analyzer's command line
(cli.main, in this process: thousands of executions a minute) is run on it, with no option, --json or --trace.

Mutations, chosen at random from a seeded generator: on the file's bytes (bits flipped, bytes set to edge
values, ranges deleted, duplicated or spliced in from another corpus file, the file cut short, bytes or
another gzip member appended) and, so that the checks past the gzip layer are reached too, on the JSON inside
(a value replaced by an edge value of its type or of another, a key deleted, a container replaced by one of
its elements, a value nested deep, the text cut or given invalid UTF-8) or on the members themselves (swapped,
one dropped or repeated, both joined in one), then compressed again member by member, sometimes followed by a
byte mutation.

A crash is any other outcome than exit 0 or 1 with nothing on stderr, or exit 2 with one line naming a file
of the case: an exception out of main(), another exit status (3 is an internal error), a traceback, more
than EXEC_TIMEOUT_S seconds for one execution, or more memory than --max-memory-mb (the process's address
space is capped: MemoryError, exit 3). Each crash's files are kept under --artifacts with why.txt;
copy the folder into the corpus as crash-<what> and it is a regression case, run as it is at the start of
every run (crash-* cases are not mutated: their one defect would end most of their mutants early).

  python3 dump_reader_fuzz.py TOOLS_ANALYZE_DIR [--corpus DIR] [--seconds 60] [--seed N] [--artifacts DIR]
                              [--max-memory-mb 2048]

Prints the seed (--seed replays the run, as far as the same number of executions fits the time), then last
`fuzz dump_reader: N executions in S s, K crashes`; exits 1 if K > 0.
"""
import argparse
import copy
import gzip
import io
import json
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import zlib
from contextlib import redirect_stderr, redirect_stdout

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.normpath(os.path.join(HERE, "..", "fuzz", "corpus", "dump_reader"))
EXEC_TIMEOUT_S = 20   # one execution: a handful of small dumps, normally milliseconds
MAX_ARTIFACTS = 20    # crash folders kept per run
MAX_MEMORY_MB = 2048  # the analyzer needs ~60 MB for these dumps
EDGE_BYTES = (0x00, 0xFF, 0x7F, 0x80, 0x1F, 0x8B, 0x22, 0x5B, 0x7B, 0x0A)
EDGE_VALUES = (None, True, False, 0, -1, 1, 2**31, 2**63 - 1, 2**63, 2**64, -2**63 - 1, 10**30, 1e308, -0.0,
               float("nan"), float("inf"), "", "x" * 300, "\ud800", "coll", "p2p", "Send", "Recv", "AllReduce",
               "summary", "flight_recorder", "ncclscope.comm.v1", "ncclscope.comm.v2", [], {}, [0], {"": 0})


class ExecTimeout(BaseException):
    """Raised by SIGALRM; a BaseException, so that main()'s `except Exception` cannot turn it into exit 3."""


def on_alarm(signum, frame):
    raise ExecTimeout()


# ---- the corpus ----

def load_corpus(top):
    """[(case name, [(file name, bytes)])], one per folder of `top` holding dump files."""
    cases = []
    for name in sorted(os.listdir(top)):
        folder = os.path.join(top, name)
        if not os.path.isdir(folder):
            continue
        files = []
        for f in sorted(os.listdir(folder)):
            if f.startswith("ncclscope-comm-") and (f.endswith(".json") or f.endswith(".json.gz")):
                with open(os.path.join(folder, f), "rb") as fh:
                    files.append((f, fh.read()))
        if files:
            cases.append((name, files))
    if not cases:
        sys.exit(f"FAIL: no corpus case (a folder of ncclscope-comm-* dumps) under {top}")
    return cases


# ---- mutations ----

def gzip_members(raw):
    """The inflated members of a whole multi-member gzip file, or None if it is not one."""
    members = []
    try:
        while raw:
            z = zlib.decompressobj(31)
            members.append(z.decompress(raw))
            if not z.eof:
                return None
            raw = z.unused_data
    except zlib.error:
        return None
    return members or None


def mutate_bytes(rng, raw, donors):
    """One byte-level mutation of a file's bytes."""
    n = len(raw)
    how = rng.choice(["flip", "flip", "edge", "delete", "duplicate", "splice", "truncate", "append", "member"])
    at = rng.randrange(n + 1)
    if how == "flip" and n:
        b = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(n)] ^= 1 << rng.randrange(8)
        return bytes(b)
    if how == "edge" and n:
        b = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(n)] = rng.choice(EDGE_BYTES)
        return bytes(b)
    if how == "delete":
        return raw[:at] + raw[at + rng.randint(1, max(1, min(4096, n // 4))):]
    if how == "duplicate":
        return raw[:at] + raw[at:at + rng.randint(1, 512)] + raw[at:]
    if how == "splice":
        donor = rng.choice(donors)
        d = rng.randrange(len(donor) + 1)
        return raw[:at] + donor[d:d + rng.randint(1, 2048)] + raw[at + rng.randint(0, 64):]
    if how == "truncate":
        return raw[:at]
    if how == "append":
        return raw + bytes(rng.choice(EDGE_BYTES) for _ in range(rng.randint(1, 16)))
    return raw + gzip.compress(rng.choice(donors)[:rng.randint(0, 256)])  # another member


def json_paths(v, prefix=()):
    """Every (container path, key) of a JSON value."""
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, item in items:
        yield prefix, k
        yield from json_paths(item, prefix + (k,))


SAME_TYPE = {  # values that pass the type check, so that the analysis itself sees them
    bool: (True, False),
    int: (0, -1, 1, 2, 3, 7, 2**31, 2**63 - 1, 2**63, 2**64 - 1, -2**63, 10**6, 10**18),
    float: (0.0, -1.0, 1e-9, 1e308),
    str: ("", "x" * 300, "\ud800", "coll", "p2p", "Send", "Recv", "AllReduce", "AllGather", "Broadcast",
          "finalize", "stall", "request", "gpu", "cpu", "proxy", "vm", "0x0000000000000001"),
}


def new_value(rng, old):
    """An edge value of the old value's type most of the time (a list or object: one of its elements
    dropped or repeated), else one of any type."""
    if rng.random() < 0.65:
        if type(old) in SAME_TYPE:
            return rng.choice(SAME_TYPE[type(old)])
        if isinstance(old, list) and old:
            i = rng.randrange(len(old))
            return old[:i] + old[i + 1:] if rng.random() < 0.5 else old + [old[i]] * rng.randint(1, 3)
    return copy.deepcopy(rng.choice(EDGE_VALUES))  # a copy: a later mutation may change its inside


def mutate_json(rng, text):
    """The JSON text with one to three values replaced, deleted, hoisted or nested deep, sometimes cut or
    made invalid UTF-8; text that is not JSON is only cut."""
    try:
        doc = json.loads(text)
    except ValueError:
        return text[:rng.randrange(len(text) + 1)]
    deep = None
    for _ in range(rng.randint(1, 3)):
        where = list(json_paths(doc))
        if not where:
            break
        prefix, key = rng.choice(where)
        parent = doc
        for k in prefix:
            parent = parent[k]
        how = rng.choice(["value"] * 12 + ["delete", "delete", "hoist", "deep"])
        if how == "delete":
            del parent[key]
        elif how == "deep" and deep is None:
            deep = rng.choice([900, 1100, 50_000])
            parent[key] = "@@deep@@"
        elif how == "hoist" and isinstance(parent[key], (list, dict)) and parent[key]:
            inner = parent[key]  # a container replaced by one of its elements
            parent[key] = inner[rng.choice(list(inner.keys()) if isinstance(inner, dict) else range(len(inner)))]
        else:
            parent[key] = new_value(rng, parent[key])
    out = json.dumps(doc)
    if deep:
        out = out.replace('"@@deep@@"', "[" * deep + "]" * deep, 1)
    raw = out.encode("utf-8")
    how = rng.choice(["as is"] * 18 + ["cut", "bad utf-8"])
    at = rng.randrange(len(raw) + 1)
    if how == "cut":
        raw = raw[:at]
    elif how == "bad utf-8":
        raw = raw[:at] + rng.choice([b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\x80"]) + raw[at:]
    return raw


def mutate_members(rng, members):
    """The members of a v2 file reordered, dropped, repeated or joined, each one whole: what a writer that
    got the format wrong would make."""
    how = rng.choice(["swap", "drop", "repeat", "join"])
    if how == "swap":
        return members[::-1]
    if how == "drop":
        gone = rng.randrange(len(members))
        return members[:gone] + members[gone + 1:]
    if how == "repeat":
        return members + [rng.choice(members)]
    return [b"".join(members)]


def mutate_file(rng, raw, donors):
    """One file of a case, mutated: inside its JSON (member by member for gzip, compressed again), its
    members rearranged, on its bytes, or a mix."""
    members = gzip_members(raw) if raw[:2] == b"\x1f\x8b" else None
    roll = rng.random()
    if roll < 0.8:
        if members:
            if rng.random() < 0.1:
                members = mutate_members(rng, members)
            else:
                i = rng.randrange(len(members))
                members[i] = mutate_json(rng, members[i])
            raw = b"".join(gzip.compress(m, 1) for m in members)
        else:
            raw = mutate_json(rng, raw)
        if roll < 0.75:
            return raw
    for _ in range(rng.randint(1, 3)):
        raw = mutate_bytes(rng, raw, donors)
    return raw


# ---- executions ----

def run_analyzer(cli, args):
    """(exit status or the exception that escaped, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    signal.alarm(EXEC_TIMEOUT_S)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            rc = cli.main(args)
    except SystemExit as e:
        rc = e.code
    except ExecTimeout:
        rc = f"no end within {EXEC_TIMEOUT_S} s"
    except BaseException as e:  # noqa: B902 - everything that escapes main() is a crash
        rc = f"{type(e).__name__} escaped main(): {str(e)[:200]}"
    finally:
        signal.alarm(0)
    return rc, err.getvalue()


OUTCOMES = {}  # exit status -> executions; exit 2 also by its cause's first words, to see what the mutations reach


def count_outcome(rc, message):
    key = str(rc) if rc != 2 else "2 " + " ".join(message.split(": ", 2)[-1].split()[:3])
    OUTCOMES[key] = OUTCOMES.get(key, 0) + 1


def crash_reason(rc, message, case_dir):
    """Why an outcome is a crash, or None."""
    if rc in (0, 1, 6):  # healthy, hang, straggler
        return None if message == "" else f"exit {rc} with stderr: {message[:500]!r}"
    if rc == 2 and message.startswith("ncclscope-analyze: the dumps hold ") and message.count("\n") == 1:
        return None  # a mutated job_id: the case's dumps are two jobs', refused as such
    if rc == 2:
        if message.count("\n") != 1 or "Traceback" in message:
            return f"exit 2 without a one-line message: {message[:500]!r}"
        if not message.startswith(f"ncclscope-analyze: {case_dir}/"):
            return f"exit 2 without naming a file of the case: {message[:500]!r}"
        return None
    return f"exit {rc}: {message[:500]!r}" if isinstance(rc, int) else str(rc)


def execute(cli, work, files, mode):
    """Writes `files` into a fresh folder and runs the analyzer on it; the crash reason or None."""
    case_dir = os.path.join(work, "case")
    shutil.rmtree(case_dir, ignore_errors=True)
    os.mkdir(case_dir)
    for name, raw in files:
        with open(os.path.join(case_dir, name), "wb") as f:
            f.write(raw)
    args = [case_dir] + mode + ([os.path.join(work, "trace.json")] if mode == ["--trace"] else [])
    rc, message = run_analyzer(cli, args)
    count_outcome(rc, message)
    return crash_reason(rc, message, case_dir)


def keep_crash(artifacts, label, files, mode, why):
    folder = os.path.join(artifacts, label)
    os.makedirs(folder, exist_ok=True)
    for name, raw in files:
        with open(os.path.join(folder, name), "wb") as f:
            f.write(raw)
    with open(os.path.join(folder, "why.txt"), "w") as f:
        f.write(f"mode: {' '.join(mode) or '(none)'}\n{why}\n")
    return folder


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tools_analyze", help="tools/analyze (the ncclscope_analysis package's folder)")
    ap.add_argument("--corpus", default=DEFAULT_CORPUS)
    ap.add_argument("--seconds", type=float, default=60.0, help="time budget of the mutation phase (default 60)")
    ap.add_argument("--seed", type=int, default=None, help="default: from the clock, printed")
    ap.add_argument("--artifacts", default=None, help="where crashes are kept (default: a new temporary folder)")
    ap.add_argument("--max-memory-mb", type=int, default=MAX_MEMORY_MB,
                    help=f"address space of this process (default {MAX_MEMORY_MB}): more is a crash, MemoryError")
    args = ap.parse_args()
    # An input that makes the analyzer allocate without bound must fail here as MemoryError (exit 3, a crash
    # kept like any other), not take the machine's memory and be killed by the OOM killer with nothing kept.
    resource.setrlimit(resource.RLIMIT_AS, (args.max_memory_mb << 20, args.max_memory_mb << 20))
    sys.path.insert(0, args.tools_analyze)
    from ncclscope_analysis import cli

    seed = args.seed if args.seed is not None else time.time_ns() % 10**9
    corpus = load_corpus(args.corpus)
    seeds = [(name, files) for name, files in corpus if not name.startswith("crash-")] or corpus
    donors = [raw for _, files in seeds for _, raw in files]
    for raw in list(donors):  # the JSON inside the gzip files too, as splice material
        donors += gzip_members(raw) or []
    signal.signal(signal.SIGALRM, on_alarm)
    work = tempfile.mkdtemp(prefix="ncclscope-fuzz-dump-reader-")
    artifacts = args.artifacts or os.path.join(work, "crashes")
    crashes, execs, kept = 0, 0, []
    print(f"fuzz dump_reader: seed {seed}, {len(corpus)} corpus cases, {args.seconds:g} s", flush=True)
    start = time.monotonic()
    try:
        for name, files in corpus:  # the cases as they are, crash regressions included
            for mode in ([], ["--json"], ["--trace"]):
                why = execute(cli, work, files, mode)
                execs += 1
                if why:
                    crashes += 1
                    print(f"CRASH on corpus case {name} ({' '.join(mode) or 'no option'}): {why}")
        deadline = start + args.seconds
        while time.monotonic() < deadline:
            rng = random.Random(f"{seed}:{execs}")
            name, files = rng.choice(seeds)
            files = list(files)
            for i in rng.sample(range(len(files)), min(rng.choice([1, 1, 1, 2, 3]), len(files))):
                files[i] = (files[i][0], mutate_file(rng, files[i][1], donors))
            mode = rng.choice([[], [], ["--json"], ["--trace"]])
            why = execute(cli, work, files, mode)
            execs += 1
            if why:
                crashes += 1
                if len(kept) < MAX_ARTIFACTS:
                    kept.append(keep_crash(artifacts, f"{seed}-{execs - 1}-{name}", files, mode, why))
                print(f"CRASH at execution {execs - 1} (seed {seed}, case {name}): {why}", flush=True)
    finally:
        if not kept or args.artifacts:  # the crash inputs are kept, in the work folder unless --artifacts
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - start
    if kept:
        print(f"crash inputs kept under {artifacts} (copy a folder into {args.corpus} to keep it as a regression)")
    print(f"seed {seed} (--seed replays this run); outcomes:")
    for key, n in sorted(OUTCOMES.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {n:7d}  exit {key}")
    print(f"fuzz dump_reader: {execs} executions in {elapsed:.0f} s, {crashes} crashes")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""ncclscope-analyze costs what the dumps it reads cost, not what they claim. A dump says how many ranks its
communicator has (`nranks`, up to 1,048,576); the ranks that wrote no dump are exactly what a post-mortem is
for, so one 2 KB dump claiming a million ranks must be analysed in bounded memory and time, with the exact count
of missing ranks and a short report. Each case runs the tool in a child process under an address-space limit
(RLIMIT_AS) and a time limit: the analyzer once built per-missing-rank structures (a culprit per missing rank,
each listing every place of every other), 21 GB for 1,048,576 claimed ranks, and a traceback under `ulimit -v`.

  python3 analyze_claimed_ranks_test.py [ANALYZE]   (ANALYZE: bin/ncclscope-analyze; default the source tree's)
"""
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import unittest
import zlib

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ANALYZE = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tools", "analyze",
                                                                  "ncclscope_analyze.py")
# Rank 0's request dump of a 2-rank job whose rank 1 never issued AllReduce seq 3 (a fuzz corpus case).
HUNG = os.path.join(HERE, "..", "fuzz", "corpus", "dump_reader", "sim-hang-v2",
                    "ncclscope-comm-87884915132a33ca-rank0.json.gz")
MAX_RANKS = 1 << 20           # the largest nranks the schema accepts
MEMORY_LIMIT = 1 << 30        # bytes of address space the child may map: far above what it needs
TIME_LIMIT_S = 60             # generous: the analysis itself takes well under a second
MAX_REPORT_BYTES = 64 << 10   # a report about one dump stays short whatever the dump claims
MAX_LISTED = 16               # progress.MAX_MISSING_LISTED: missing ranks blamed one culprit each


def _summary_and_recorder(path):
    """(summary dict, the raw bytes of gzip member 2) of a v2 dump."""
    with open(path, "rb") as f:
        raw = f.read()
    z = zlib.decompressobj(31)
    summary = json.loads(z.decompress(raw))
    return summary, z.unused_data


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


class ClaimedRanksTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ncclscope-claimed-")
        self.summary, self.recorder = _summary_and_recorder(HUNG)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write_dump(self, rank, nranks, comm="0x87884915132a33ca"):
        """Rank `rank` of a communicator claiming `nranks`; its identity keeps the job size of the 2-rank job
        (world_size 2), as an edited or corrupt dump would: the job then seems to lack one global rank."""
        s = dict(self.summary, rank=rank, nranks=nranks, comm_hash=comm, pid=self.summary["pid"] + rank,
                 identity=dict(self.summary["identity"], global_rank=rank))
        path = os.path.join(self.dir, f"ncclscope-comm-{comm[2:]}-rank{rank}.json.gz")
        with open(path, "wb") as f:
            f.write(gzip.compress(json.dumps(s).encode() + b"\n") + self.recorder)

    def run_limited(self, *args):
        """The tool in a child under MEMORY_LIMIT and TIME_LIMIT_S: (exit status, stdout, stderr)."""
        p = subprocess.run([sys.executable, ANALYZE, *args, self.dir], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIME_LIMIT_S, preexec_fn=_limit_memory)
        out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        self.assertNotIn("Traceback", err)
        self.assertNotIn("internal error", err)
        return p.returncode, out, err

    def assert_counted(self, nranks, missing):
        """Text and --json: exit 1 (a hang), every missing rank counted, a short report, few culprits."""
        rc, out, err = self.run_limited()
        self.assertEqual(rc, 1, err)
        self.assertLess(len(out), MAX_REPORT_BYTES)
        self.assertIn(f"1/{nranks} ranks" if missing == nranks - 1 else f"/{nranks} ranks", out)
        self.assertIn(f"({missing} ranks)", out)
        self.assertLessEqual(out.count("\n  culprit  "), MAX_LISTED)
        rc, out, err = self.run_limited("--json")
        self.assertEqual(rc, 1, err)
        self.assertLess(len(out), MAX_REPORT_BYTES)
        report = json.loads(out)
        comm = report["communicators"][0]
        self.assertEqual(comm["summary"]["missing_count"], missing)
        self.assertEqual(sum(b - a + 1 for a, b in comm["summary"]["missing_ranges"]), missing)
        blamed = [f for f in comm["findings"] if f.get("missing_count")]
        self.assertEqual([f["missing_count"] for f in blamed], [missing])
        self.assertEqual(len(report["culprits"]), min(missing, MAX_LISTED))

    def test_one_dump_claiming_the_most_ranks(self):
        self.write_dump(0, MAX_RANKS)
        self.assert_counted(MAX_RANKS, MAX_RANKS - 1)

    def test_one_dump_claiming_16384_ranks(self):
        self.write_dump(0, 16384)
        self.assert_counted(16384, 16383)

    def test_scattered_dumps_of_a_huge_communicator(self):
        # 100 dumps, every other rank: 100 gaps between them and the rest of the million after the last.
        for r in range(0, 200, 2):
            self.write_dump(r, MAX_RANKS)
        self.assert_counted(MAX_RANKS, MAX_RANKS - 100)


if __name__ == "__main__":
    unittest.main(verbosity=1)

#!/usr/bin/env python3
"""A v2 dump is two gzip members (docs/dump-format.md) and ncclscope-analyze checks both in
every mode, not only with --trace. From the real finalize dumps of a healthy 2-rank ncclscope-sim job (checked
in as a fuzz corpus case), rank 1's file is damaged after its summary: the second member cut short at its
header, its data, its trailer; missing; its CRC or length wrong; a byte of its data changed; bytes or a third
member after it. Each must end with exit 2 and one line naming the file and the cause, with and without
--json and --trace; the undamaged job is healthy (exit 0), so the damage is what the exit status reports.

  python3 analyze_gzip_members_test.py [ANALYZE]   (ANALYZE: bin/ncclscope-analyze; default the source tree's)
"""
import gzip
import os
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
JOB = os.path.join(HERE, "..", "fuzz", "corpus", "dump_reader", "sim-healthy-v2")
MODES = ([], ["--json"], ["--trace"])
MEMBER2 = "the flight recorder (gzip member 2)"


def first_member_length(raw):
    """Bytes of the first gzip member of `raw` (where the second begins)."""
    z = zlib.decompressobj(31)
    z.decompress(raw)
    assert z.eof, "the corpus dump's first member is not whole"
    return len(raw) - len(z.unused_data)


class GzipMembersTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ncclscope-members-")
        self.dumps = os.path.join(self.dir, "dumps")
        shutil.copytree(JOB, self.dumps)
        names = sorted(os.listdir(self.dumps))
        self.assertEqual(len(names), 2, names)
        self.victim = os.path.join(self.dumps, names[1])
        with open(self.victim, "rb") as f:
            self.raw = f.read()
        self.split = first_member_length(self.raw)
        self.assertLess(self.split + 20, len(self.raw), "no second member in the corpus dump")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_tool(self, mode):
        args = mode + ([os.path.join(self.dir, "trace.json")] if mode == ["--trace"] else [])
        p = subprocess.run([sys.executable, ANALYZE, *args, self.dumps], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=60)
        return p.returncode, p.stderr.decode(errors="replace")

    def damage(self, raw):
        with open(self.victim, "wb") as f:
            f.write(raw)

    def assert_bad_input(self, raw, cause):
        self.damage(raw)
        for mode in MODES:
            rc, err = self.run_tool(mode)
            self.assertEqual(rc, 2, f"{mode}: exit {rc}, expected 2 for {cause!r}; stderr: {err}")
            self.assertEqual(err.count("\n"), 1, f"{mode}: not one line: {err}")
            self.assertTrue(err.startswith(f"ncclscope-analyze: {self.victim}: "), f"{mode}: file not named: {err}")
            self.assertIn(cause, err, mode)

    def test_the_whole_job_is_healthy(self):
        for mode in MODES:
            rc, err = self.run_tool(mode)
            self.assertEqual((rc, err), (0, ""), mode)

    def test_second_member_cut_short_anywhere(self):
        n = len(self.raw)
        for cut in (self.split + 1, self.split + 10, (self.split + n) // 2, n - 8, n - 4, n - 1):
            with self.subTest(cut=cut - n):
                self.assert_bad_input(self.raw[:cut], f"{MEMBER2} ends early")

    def test_second_member_missing(self):
        self.assert_bad_input(self.raw[:self.split], "no flight recorder (gzip member 2) after the summary")

    def test_second_member_crc_and_length_checked(self):
        n = len(self.raw)
        for at, cause in ((n - 8, "incorrect data check"), (n - 4, "incorrect length check")):
            with self.subTest(cause=cause):
                bad = bytearray(self.raw)
                bad[at] ^= 0x01
                self.assert_bad_input(bytes(bad), f"{MEMBER2} is not readable gzip (Error -3 while decompressing "
                                                  f"data: {cause})")

    def test_second_member_data_damaged(self):
        bad = bytearray(self.raw)
        bad[(self.split + len(self.raw)) // 2] ^= 0x10
        self.assert_bad_input(bytes(bad), f"{MEMBER2} is not readable gzip")

    def test_nothing_after_the_second_member(self):
        self.assert_bad_input(self.raw + b"\0" * 8, f"8 bytes after {MEMBER2}")
        third = gzip.compress(b"{}\n")
        self.assert_bad_input(self.raw + third, f"{len(third)} bytes after {MEMBER2}")


if __name__ == "__main__":
    unittest.main(verbosity=1)

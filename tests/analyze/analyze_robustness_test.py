#!/usr/bin/env python3
"""ncclscope-analyze on hostile inputs and outputs: a FIFO named like a dump, 50,000-deep nesting, a closed
stdout, a full disk, a field of the wrong type, an internal error. Each must end with its exit status
(2 bad input, 3 internal error, 4 output not written) and a one-line message, never a hang or a traceback.

  python3 analyze_robustness_test.py TOOLS_ANALYZE_DIR ANALYZE   (ANALYZE: the built bin/ncclscope-analyze)
"""
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ANALYZE = sys.argv.pop(2) if len(sys.argv) > 2 else os.path.join(HERE, "..", "..", "tools", "analyze",
                                                                  "ncclscope_analyze.py")
sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tools", "analyze"))
from ncclscope_analysis import cli  # noqa: E402

GOLDEN = os.path.join(HERE, "..", "data", "golden", "nccl-2.28.9", "abort", "dumps")
RANK0 = "ncclscope-comm-eb6c19cd5aa7c557-rank0.json"


def golden(rank):
    with open(os.path.join(GOLDEN, f"ncclscope-comm-eb6c19cd5aa7c557-rank{rank}.json")) as f:
        return json.load(f)


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ncclscope-robust-")
        for name in os.listdir(GOLDEN):
            shutil.copy(os.path.join(GOLDEN, name), self.dir)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_tool(self, *args, stdout=subprocess.DEVNULL, env=None):
        """The installed tool as a process: (exit status, stderr); fails the test if it does not end in 30 s."""
        p = subprocess.run([sys.executable, ANALYZE, *args], stdout=stdout, stderr=subprocess.PIPE, timeout=30,
                           env=dict(os.environ, **(env or {})))
        err = p.stderr.decode(errors="replace")
        self.assertNotIn("Traceback", err)
        self.assertNotIn("Exception ignored", err)
        return p.returncode, err

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = cli.main(list(args))
        return rc, out.getvalue(), err.getvalue()

    def assert_one_line(self, err, *parts):
        self.assertEqual(err.count("\n"), 1, err)
        self.assertTrue(err.startswith("ncclscope-analyze: "), err)
        for p in parts:
            self.assertIn(p, err)


class InputTest(Base):
    def test_fifo_named_like_a_dump_is_skipped_not_opened(self):
        fifo = os.path.join(self.dir, "ncclscope-comm-00000000000000ff-rank0.json")
        os.mkfifo(fifo)
        rc, err = self.run_tool(self.dir)
        self.assertEqual(rc, 1, err)  # the golden abort: a hang
        self.assertIn(f"warning: {fifo}: not a regular file, skipped", err)
        rc, err = self.run_tool(fifo)
        self.assertEqual(rc, 2)
        self.assert_one_line(err, f"{fifo}: not a regular file")

    def test_unreadable_dump_is_bad_input_naming_it(self):
        # A dump whose read fails (EIO: a failing disk, a file system gone away) is bad input, exit 2, one
        # line naming the file: not an internal error. /proc/self/mem fails with EIO at offset 0 even for
        # root (these tests run as root, for whom chmod 000 changes nothing).
        if not os.path.exists("/proc/self/mem"):
            self.skipTest("no /proc/self/mem")
        eio = os.path.join(self.dir, "ncclscope-comm-00000000000000ff-rank0.json.gz")
        os.symlink("/proc/self/mem", eio)
        for args in ([self.dir], [eio], ["--trace", os.path.join(self.dir, "t.json"), self.dir]):
            rc, err = self.run_tool(*args)
            self.assertEqual(rc, 2, (args, err))
            self.assert_one_line(err, f"{eio}: cannot read (Input/output error)")
        for i in range(64):  # enough files for the worker processes (dumps.PARALLEL_FROM)
            shutil.copy(os.path.join(self.dir, RANK0), os.path.join(self.dir, f"copy{i}-{RANK0}"))
        rc, err = self.run_tool("--jobs", "2", self.dir)
        self.assertEqual(rc, 2, err)
        self.assert_one_line(err, f"{eio}: cannot read (Input/output error)")

    def test_path_through_a_file_is_bad_input_saying_why(self):
        under_a_file = os.path.join(self.dir, RANK0, RANK0)
        rc, err = self.run_tool(under_a_file)
        self.assertEqual(rc, 2, err)
        self.assert_one_line(err, f"{under_a_file}: cannot read (Not a directory)")

    def test_writers_work_folder_and_dangling_links_do_not_fail_the_run(self):
        # The writers' private folder (mode 0700, another user's for whoever runs the analyzer) holds only
        # temporary files: never entered. A dangling link named like a dump is skipped with a warning.
        work = os.path.join(self.dir, ".ncclscope-work-12345")
        os.mkdir(work)
        with open(os.path.join(work, "ncclscope-comm-00000000000000ee-rank0.json"), "w") as f:
            f.write("{half a dump")
        os.chmod(work, 0)
        dangling = os.path.join(self.dir, "ncclscope-comm-00000000000000dd-rank0.json")
        os.symlink(os.path.join(self.dir, "gone"), dangling)
        try:
            rc, err = self.run_tool(self.dir)
        finally:
            os.chmod(work, 0o700)
        self.assertEqual(rc, 1, err)  # the golden abort's hang, as without them
        self.assertIn(f"warning: {dangling}: cannot read", err)
        self.assertNotIn(".ncclscope-work-", err)

    def test_symlink_loop_ends(self):
        os.symlink(self.dir, os.path.join(self.dir, "loop"))
        rc, err = self.run_tool(self.dir)
        self.assertEqual(rc, 1, err)

    def test_deep_nesting_is_bad_input(self):
        deep = self.write("ncclscope-comm-00000000000000ff-rank0.json", "[" * 50000 + "]" * 50000)
        rc, err = self.run_tool(deep)
        self.assertEqual(rc, 2)
        self.assert_one_line(err, f"{deep}: not JSON", "nested too deeply")
        os.remove(deep)
        d = json.dumps(dict(golden(0), events="@"))
        path = self.write(RANK0, d.replace('"@"', "[" * 50000 + "]" * 50000))
        rc, err = self.run_tool(self.dir)
        self.assertEqual(rc, 2)
        self.assert_one_line(err, f"{path}: not JSON", "nested too deeply")

    def test_wrong_type_names_file_and_field(self):
        d = golden(0)
        d["flight_recorder"]["in_flight"][0]["seq"] = "1"
        path = self.write(RANK0, json.dumps(d))
        rc, _, err = self.run_main(self.dir)
        self.assertEqual(rc, 2)
        self.assert_one_line(err, f"{path}: flight_recorder.in_flight[0].seq: expected integer, got string")
        for field, value, message in [
                ("aggregates", [{"kind": "coll"}], "aggregates[0].func: missing"),
                ("dropped", {"x": 1.5}, "dropped.x: expected integer, got number"),
                ("host", "\ud800", "host: expected string, got string with an unpaired surrogate"),
                ("pid", 1 << 70, "pid: expected integer, got integer outside the 64-bit range"),
                ("stalled", 0, "stalled: expected boolean, got integer"),
                ("nranks", 0, "nranks: 0 outside 1..")]:
            self.write(RANK0, json.dumps(dict(golden(0), **{field: value})))
            rc, _, err = self.run_main(self.dir)
            self.assertEqual(rc, 2, field)
            self.assert_one_line(err, f"{path}: {message}")

    def test_invalid_utf8_and_truncation(self):
        path = os.path.join(self.dir, RANK0)
        with open(path, "wb") as f:
            f.write(b'{"schema": "ncclscope.comm.v1", "comm_hash": "\xff"}')
        rc, _, err = self.run_main(self.dir)
        self.assertEqual(rc, 2)
        self.assert_one_line(err, f"{path}: not JSON (not UTF-8: byte 0xff")
        self.write(RANK0, json.dumps(golden(0))[:100])
        rc, _, err = self.run_main(self.dir)
        self.assertEqual(rc, 2)
        self.assert_one_line(err, f"{path}: not JSON")


class OutputTest(Base):
    def test_closed_stdout_exits_quietly(self):
        r, w = os.pipe()
        os.close(r)  # every write to w now fails with EPIPE
        try:
            rc, err = self.run_tool(self.dir, stdout=w)
        finally:
            os.close(w)
        self.assertEqual((rc, err), (4, ""))
        p = subprocess.run([sys.executable, ANALYZE, self.dir], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=30, preexec_fn=lambda: os.close(1))  # no fd 1 at all (>&-)
        self.assertEqual(p.returncode, 4)
        self.assert_one_line(p.stderr.decode(), "cannot write the report: stdout is closed")

    def test_full_disk(self):
        with open("/dev/full", "w") as full:
            rc, err = self.run_tool("--json", self.dir, stdout=full)
        self.assertEqual(rc, 4)
        self.assert_one_line(err, "cannot write the report: No space left on device")
        rc, err = self.run_tool("--trace", "/dev/full", self.dir)
        self.assertEqual(rc, 4)
        self.assert_one_line(err, "cannot write /dev/full: No space left on device")

    def test_internal_error_is_one_line_unless_debugging(self):
        def boom(comms):
            raise RuntimeError("boom\nsecond line")
        saved, cli.analyze = cli.analyze, boom
        try:
            rc, _, err = self.run_main(self.dir)
            self.assertEqual(rc, 3)
            self.assert_one_line(err, "internal error: RuntimeError: boom", "NCCLSCOPE_ANALYZE_DEBUG=1")
            os.environ["NCCLSCOPE_ANALYZE_DEBUG"] = "1"
            rc, _, err = self.run_main(self.dir)
            self.assertEqual(rc, 3)
            self.assertIn("Traceback", err)
        finally:
            cli.analyze = saved
            os.environ.pop("NCCLSCOPE_ANALYZE_DEBUG", None)

    def test_help_documents_exit_status(self):
        out = io.StringIO()
        with redirect_stdout(out), self.assertRaises(SystemExit) as e:
            cli.main(["--help"])
        self.assertEqual(e.exception.code, 0)
        text = " ".join(out.getvalue().split())
        for status in ("0 healthy", "1 hang", "2 bad input", "3 internal error", "4 the report", "5 no problem",
                       "6 straggler"):
            self.assertIn(status, text)


if __name__ == "__main__":
    unittest.main(verbosity=1)

#!/usr/bin/env python3
"""Hostile inners (hostile.c) and a FIFO where a plugin should be, under the emulated job and ncclscope-loadcheck.
Each must end in a reported failure, never a hang (every run has a timeout; a regression fails, it does not hang):
  - re-entrant inners (a copy of ncclscope's table; an init that calls ncclscope's): the job's init fails with one
    line naming the inner's path and why; loadcheck of ncclscope wrapping them fails with that line;
  - a FIFO as NCCLSCOPE_NET_CHAIN (the job fails at set-up, one line) and as NCCLSCOPE_PROFILER_CHAIN (the job goes
    on without the second profiler, one line), and ncclscope itself as NCCLSCOPE_PROFILER_CHAIN (the same); loadcheck of ncclscope with the FIFO chain, and of the FIFO itself;
  - inners that crash, exit() or hang in init, under loadcheck (text and --json): exit status 1, the signal, the
    exit code or the hang named with the step; the crash under the job too (the rank dies, the sim says so).
Usage: hostile_inner_test.py SIM LOADCHECK LIB_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from checks import check, summary  # noqa: E402

SIM, LOADCHECK, LIB_DIR = sys.argv[1:4]
PLUGIN = os.path.join(LIB_DIR, "libnccl-net-ncclscope.so")


def env_with(**extra):
    env = dict(os.environ, LD_LIBRARY_PATH=LIB_DIR, NCCLSCOPE_PROM_PORT="-1", NCCLSCOPE_SOCKET_IFNAME="=lo",
               NCCL_DEBUG="WARN")
    env.pop("NCCLSCOPE_TRANSPORT", None)
    env.update(extra)
    return env


def run(cmd, env, timeout=60):
    """(returncode, stdout, stderr); returncode None when it hung past `timeout`."""
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return None, str(e.stdout or ""), str(e.stderr or "")


def job(tmp, name, **extra):
    env = env_with(NCCLSCOPE_DUMP_DIR=os.path.join(tmp, name), **extra)
    return run([SIM, "--ranks", "2", "--net-plugin", "ncclscope", "--sizes", "8:8", "--iters", "1", "--timeout", "30"],
               env)


def lines(text, pattern):
    return [l for l in text.splitlines() if re.search(pattern, l)]


def loadcheck(args, timeout=60, **extra):
    return run([LOADCHECK] + args, env_with(**extra), timeout)


with tempfile.TemporaryDirectory() as tmp:
    # Re-entrant inners: refused with one line, never a deadlock.
    for inner, why in [("inner-reentrant", r"ncclNetPlugin_v12 points back into ncclscope itself "
                                           r"\(.*libnccl-net-ncclscope\.so\), at function slot 1"),
                       ("inner-reentrant-call", r"called back into ncclscope \(net init\) from its init: refused")]:
        path = re.escape(f"libnccl-net-{inner}.so")
        rc, _, err = job(tmp, inner, NCCLSCOPE_NET_CHAIN=inner)
        check(rc is not None and "TIMEOUT" not in err, f"{inner}: the job does not hang (the sim's own timeout neither)")
        check(rc not in (None, 0), f"{inner}: the job's init fails (rc {rc})")
        said = lines(err, why)
        check(len(said) >= 1 and all(re.search(path, l) for l in said), f"{inner}: the line names the inner's path and why")
        check(len(set(l.split("] ", 1)[-1] for l in said)) == 1, f"{inner}: one line, once per rank ({len(said)} lines)")
        print("   job:       " + (said[0] if said else err[-400:]))
        rc, out, _ = loadcheck([PLUGIN], NCCLSCOPE_NET_CHAIN=inner)
        check(rc == 1, f"{inner}: loadcheck fails, exit 1 (got {rc})")
        said = lines(out, why)
        check(len(said) == 1, f"{inner}: loadcheck shows the plugin's one line ({len(said)})")
        print("   loadcheck: " + (said[0] if said else out[-400:]))

    # A FIFO where a plugin should be.
    fifo = os.path.join(tmp, "libnccl-net-fifo.so")
    os.mkfifo(fifo)
    rc, _, err = job(tmp, "fifo-net", NCCLSCOPE_NET_CHAIN=fifo)
    said = lines(err, re.escape(fifo) + r" is a FIFO \(named pipe\), not a regular file: not opened")
    check(rc not in (None, 0) and "TIMEOUT" not in err, f"fifo net chain: the job fails at set-up instead of hanging (rc {rc})")
    check(len(said) >= 1, "fifo net chain: the line says the path is a FIFO")
    print("   job:       " + (said[0] if said else err[-400:]))
    rc, _, err = job(tmp, "fifo-profiler", NCCLSCOPE_NET_CHAIN="", NCCLSCOPE_PROFILER_CHAIN=fifo)
    said = lines(err, r"NCCLSCOPE_PROFILER_CHAIN=.*: cannot load it \(.* is a FIFO \(named pipe\).*no second profiler")
    check(rc == 0, f"fifo profiler chain: the job goes on without the second profiler (rc {rc}: {err[-300:]})")
    check(len(said) >= 1, "fifo profiler chain: the line says the path is a FIFO")
    print("   job:       " + (said[0] if said else err[-400:]))
    # The profiler chain naming ncclscope (the table check by dladdr): the job goes on without it.
    rc, _, err = job(tmp, "self-profiler", NCCLSCOPE_NET_CHAIN="", NCCLSCOPE_PROFILER_CHAIN="ncclscope")
    said = lines(err, r"NCCLSCOPE_PROFILER_CHAIN=ncclscope: .* is ncclscope itself .*; no second profiler")
    check(rc == 0 and len(said) >= 1, f"profiler chain naming ncclscope: the job goes on, with the line (rc {rc})")
    rc, out, _ = loadcheck([PLUGIN], NCCLSCOPE_NET_CHAIN=fifo)
    said = lines(out, re.escape(fifo) + r" is a FIFO")
    check(rc == 1 and len(said) == 1, f"fifo net chain: loadcheck fails (rc {rc}) with the one line")
    print("   loadcheck: " + (said[0] if said else out[-400:]))
    rc, out, _ = loadcheck([fifo])
    check(rc == 1 and re.search(re.escape(fifo) + r" is a FIFO", out) is not None,
          f"fifo as loadcheck's PLUGIN: refused, exit 1 (got {rc})")

    # Crash, exit() and hang under loadcheck, the inner checked alone and wrapped by ncclscope.
    for inner, text, iso in [
            ("inner-crash", r"FAIL: the plugin crashed: SIGSEGV \(Segmentation fault\) in net init",
             {"outcome": "signal", "signal": "SIGSEGV (Segmentation fault)", "stage": "net init"}),
            ("inner-exit", r"FAIL: the plugin ended the check's process with exit\(3\) in net init",
             {"outcome": "exit", "exit_code": 3, "stage": "net init"}),
            ("inner-hang", r"FAIL: the plugin did not return within 2 s in net init \(a hang",
             {"outcome": "timeout", "stage": "net init"})]:
        lib = os.path.join(LIB_DIR, f"libnccl-net-{inner}.so")
        for target, extra in [(lib, {}), (PLUGIN, {"NCCLSCOPE_NET_CHAIN": inner})]:
            tag = f"{inner} ({'alone' if target == lib else 'wrapped'})"
            rc, out, _ = loadcheck(["--timeout", "2", target], timeout=30, **extra)
            check(rc == 1, f"{tag}: loadcheck exits 1 (got {rc})")
            said = lines(out, text)
            check(len(said) == 1, f"{tag}: loadcheck says /{text}/")
            print("   loadcheck: " + (said[0] if said else out[-400:]))
            rc, out, err = loadcheck(["--json", "--timeout", "2", target], timeout=30, **extra)
            try:
                doc = json.loads(out)
            except ValueError:
                doc = {}
            check(rc == 1 and doc.get("ok") is False and all(doc.get("isolation", {}).get(k) == v for k, v in iso.items())
                  and re.search(text[len("FAIL: "):], doc.get("error", "")) is not None,
                  f"{tag}: loadcheck --json reports it ({doc.get('isolation')}, {doc.get('error')})")

    # The crash under the job: the rank dies in ncclscope's init, and the sim says so instead of hanging.
    rc, out, err = job(tmp, "crash", NCCLSCOPE_NET_CHAIN="inner-crash")
    check(rc not in (None, 0), f"inner-crash: the job fails, does not hang (rc {rc})")
    said = lines(out + err, r"(?i)signal|SIGSEGV|segmentation")
    print("   job:       " + (said[0] if said else (out + err)[-400:]))

sys.exit(summary(passed="hostile inners: every failure reported, none a hang"))

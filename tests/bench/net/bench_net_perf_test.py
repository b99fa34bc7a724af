#!/usr/bin/env python3
"""bench_net_perf.py's attribution of perf samples to the processes of a bench_net trace: by thread and by the
process's measuring window (the plain pair's and the plugin's sender share a thread id), copies apart from the
rest, samples outside every window dropped."""
import os
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_net_perf import attribute, windows  # noqa: E402
from bench_net_trace import rows  # noqa: E402

TRACE = """\
t=10.000 run=0 role=plain-send size=1048576 bytes=1073741824 secs=1.0000 polls=1 idle_polls=0
kind=thread run=0 role=plain-send size=1048576 name=bench_net tid=100 samples=1 cpu=0
t=10.000 run=0 role=plain-recv size=1048576 bytes=1073741824 secs=1.0000 polls=1 idle_polls=0
kind=thread run=0 role=plain-recv size=1048576 name=bench_net tid=101 samples=1 cpu=1
t=12.000 run=0 role=plugin-send size=1048576 bytes=1073741824 secs=1.5000 polls=1 idle_polls=0
kind=thread run=0 role=plugin-send size=1048576 name=bench_net tid=100 samples=1 cpu=0
kind=thread run=0 role=plugin-send size=1048576 name=ncclscope-tx0 tid=105 samples=1 cpu=1
"""
SAMPLES = """\
  100/100   9.500000000:  ffffffff81000000 _copy_from_iter
  100/100   9.600000000:  ffffffff81000001 tcp_sendmsg_locked
  101/101   9.700000000:  ffffffff81000002 _copy_to_iter
  100/100  11.000000000:  ffffffff81000000 _copy_from_iter
  105/105  11.200000000:  ffffffff81000003 rep_movs_alternative
  105/105  11.300000000:  7f0000000000 ncclscope::net::tcp::Progress
  100/100  10.200000000:  ffffffff81000000 _copy_from_iter
  100/100  12.500000000:  ffffffff81000000 _copy_from_iter
  999/999  11.000000000:  ffffffff81000000 _copy_from_iter
    0/0     11.000000000:  ffffffff8225fe6b pv_native_safe_halt
"""


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.txt")
        with open(path, "w") as f:
            f.write(TRACE)
        got = attribute(windows(rows(path))[0], SAMPLES.splitlines())
    want = {(1048576, 0, "plain-send"): (2, 1), (1048576, 0, "plain-recv"): (1, 1),
            (1048576, 0, "plugin-send"): (3, 2)}
    print("got: ", got)
    print("want:", want)
    if got != want:
        print("FAIL: samples attributed wrongly")
        return 1
    print("ok: by thread and window; the 10.2 s, 12.5 s, unknown-thread and idle samples dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main())

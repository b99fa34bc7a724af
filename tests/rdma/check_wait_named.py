#!/usr/bin/env python3
"""check_wait_named.py --ranks R,… --peer-ranks R,… --peer-host HOST --nic NIC [--analyze ANALYZER]

One side of the two-host test rdma2_link_down_named (tests/rdma/CMakeLists.txt): did ncclscope name the
link when it went down? Run by check_wait_named.sh once the job has ended (its ranks wrote their dumps in
$RDMA2_OUT/dumps), checks this side's stall dumps (docs/dump-format.md): each rank of --ranks wrote one after the link went down
whose `wait` has class peer and a peer entry naming one of --peer-ranks (peer_global_rank) on --peer-host
via --nic. Prints what each dump says and how long after the link went down it was written: by the host's
clock (both files' mtimes on the 9p share: the time sim_ranks.sh --netdev-down wrote netdev_down.at, on
either side, and the dump's rename; the guests' own clocks are not compared), and on the side that took its
link down also by the guest's clock (the dump's clock.realtime_ns against the time in netdev_down.at).

--analyze ANALYZER (one side only): then waits (up to --wait-peer s) for the other side's stall dumps of
--peer-ranks (in $RDMA2_RESULTS/NAME.OTHER.d/dumps, NAME.SIDE.d being $RDMA2_OUT), runs `ANALYZER --json`
over both sides' dumps (once: each Python start costs seconds in the guest), prints its culprits and requires a link culprit between a rank of --ranks on this
host and a rank of --peer-ranks on --peer-host.

Exits 1 when a check failed, else 0.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time
import zlib


def summary(path):
    """The first gzip member of a dump: the one-line summary."""
    with open(path, "rb") as f:
        return json.loads(zlib.decompressobj(31).decompress(f.read()))


def stall_dumps(dumps, rank):
    """{path: summary} of rank's stall dumps (<dir>/<host>/ncclscope-comm-<hash>-rank<r>.json.gz)."""
    out = {}
    for p in glob.glob(os.path.join(dumps, "*", f"ncclscope-comm-*-rank{rank}.json.gz")):
        s = summary(p)
        if s.get("reason") == "stall":
            out[p] = s
    return out


def describe(w):
    if not w:
        return "wait: null"
    peers = "; ".join(f"{p['direction']} global rank {p['peer_global_rank']} on {p['peer_host']} via {p['nic']}, "
                      f"{p['requests']} requests, waiting {p['waiting_ns'] / 1e9:.2f} s"
                      + (", failed" if p["failed"] else "") for p in w.get("peers", []))
    return (f"wait {w['class']} in {w['func']} seq {w['seq']}, in flight {w['age_ns'] / 1e9:.2f} s "
            f"(threshold {w['threshold_ns'] / 1e9:.2f} s): {peers or 'no peers'}")


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--ranks", required=True)
    ap.add_argument("--peer-ranks", required=True)
    ap.add_argument("--peer-host", required=True)
    ap.add_argument("--nic", required=True)
    ap.add_argument("--analyze")
    ap.add_argument("--wait-peer", type=float, default=60)
    a = ap.parse_args()
    ranks = [int(r) for r in a.ranks.split(",")]
    peer_ranks = {int(r) for r in a.peer_ranks.split(",")}
    out, side = os.environ["RDMA2_OUT"], os.environ["RDMA2_SIDE"]
    other = "b" if side == "a" else "a"
    other_out = re.sub(rf"\.{side}\.d$", f".{other}.d", out)
    dumps, other_dumps = os.path.join(out, "dumps"), os.path.join(other_out, "dumps")
    print(f"=== check_wait_named ({side}): stall dumps of ranks {a.ranks} ===")
    failed = False

    def fail(msg):
        nonlocal failed
        print(f"FAIL: {msg}")
        failed = True

    down_at = [p for p in (os.path.join(out, "netdev_down.at"), os.path.join(other_out, "netdev_down.at"))
               if os.path.exists(p)]
    if not down_at:
        fail("no netdev_down.at on either side: the link was never taken down")
        return 1
    down_host_ns = os.stat(down_at[0]).st_mtime_ns
    down_guest_ns = int(float(open(down_at[0]).read()) * 1e9) if down_at[0].startswith(out + "/") else None
    own_host = None
    for r in ranks:
        found = stall_dumps(dumps, r)
        if not found:
            fail(f"rank {r} wrote no stall dump")
            continue
        for p, s in sorted(found.items()):
            w = s.get("wait")
            own_host = s["host"]
            after = (os.stat(p).st_mtime_ns - down_host_ns) / 1e9
            guest = f", {(s['clock']['realtime_ns'] - down_guest_ns) / 1e9:.2f} s by this guest's clock" \
                if down_guest_ns else ""
            print(f"rank {r} (global rank {s['identity']['global_rank']} on {s['host']}): stall dump "
                  f"{after:.2f} s after the link went down (host clock{guest}): {describe(w)}")
            if after < 0:
                fail(f"rank {r}'s stall dump {os.path.basename(p)} predates the link going down")
            if s["host"] == a.peer_host:
                fail(f"rank {r} runs on {s['host']}, the peer's host name: the hosts are not told apart")
            if not w or w.get("class") != "peer":
                fail(f"rank {r}'s wait is {w and w.get('class')}, not peer")
            elif not any(e.get("peer_global_rank") in peer_ranks and e.get("peer_host") == a.peer_host
                         and e.get("nic") == a.nic for e in w.get("peers", [])):
                fail(f"rank {r}'s wait names no rank of {a.peer_ranks} on {a.peer_host} via {a.nic}")

    if a.analyze:
        deadline = time.monotonic() + a.wait_peer
        while not all(stall_dumps(other_dumps, r) for r in peer_ranks) and time.monotonic() < deadline:
            time.sleep(0.5)
        missing = [r for r in sorted(peer_ranks) if not stall_dumps(other_dumps, r)]
        if missing:
            fail(f"no stall dump of ranks {missing} in {other_dumps} after {a.wait_peer:.0f} s")
        res = subprocess.run([a.analyze, "--json", dumps, other_dumps], stdout=subprocess.PIPE, text=True)
        print(f"=== {os.path.basename(a.analyze)} --json {dumps} {other_dumps}: status {res.returncode} ===")
        if res.returncode not in (0, 1):
            fail(f"the analyzer exited {res.returncode}")
            return 1
        culprits = json.loads(res.stdout).get("culprits", [])
        for c in culprits:
            print(f"culprit: {c['line']}")
        ends = [({c["global_rank"], c["peer"]["global_rank"]}, {c["host"], c["peer"]["host"]})
                for c in culprits if c["kind"] == "link" and c.get("peer")]
        if not any(len(g & set(ranks)) == 1 and len(g & peer_ranks) == 1 and h == {own_host, a.peer_host}
                   for g, h in ends):
            fail(f"no link culprit between a rank of {a.ranks} on {own_host} and one of {a.peer_ranks} on "
                 f"{a.peer_host}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

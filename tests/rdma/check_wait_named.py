#!/usr/bin/env python3
"""check_wait_named.py --ranks R,… --peer-ranks R,… --peer-host HOST --nic NIC [--analyze ANALYZER]

One side of the two-host test rdma2_link_down_named (tests/rdma/CMakeLists.txt): did ncclscope name the
link when it went down? Run by check_wait_named.sh once the job has ended (its ranks wrote their dumps in
$RDMA2_OUT/dumps). Checks this side's stall dumps (docs/dump-format.md): each rank of --ranks wrote one,
after the link went down, whose `wait` has class peer; and at least one of them names a rank of
--peer-ranks (peer_global_rank) on --peer-host via --nic. Not every rank: in the ring the rank that receives
over the link always waits on the other host, but its neighbour may wait only on it (rank 1 receiving from
rank 0 on its own host, nothing of its own pending towards B yet), and the dump keeps the wait of the moment
it was written. Each rank's entries are printed, with when its dump's snapshot was taken and when its wait
began (the snapshot less the longest waiting_ns of its entries) relative to the link going down, all on the
host's clock: netdev_down.at (written by sim_ranks.sh --netdev-down, on either side, just before `ip link set
down`) and each side's clock.at (written by check_wait_named.sh before the job) are files on the 9p share, whose
mtimes are the host's clock and whose contents are the guest's, so each guest's clock maps onto the host's (to
within a 9p write). A snapshot before the link went down, or a wait that began more than 2 s before it (the job
was already stuck, e.g. a guest starved by the host's load, and the fault proves nothing), fails.

--analyze ANALYZER (one side only): then waits (up to --wait-peer s) for the other side's stall dumps of
--peer-ranks (in $RDMA2_RESULTS/NAME.OTHER.d/dumps, NAME.SIDE.d being $RDMA2_OUT), runs `ANALYZER --json`
over both sides' dumps, prints its culprits and requires a link culprit between a rank of --ranks on this
host and a rank of --peer-ranks on --peer-host, and no culprit of another class than link or not_joined. One
exception, printed as a NOTE: instead of the link, culprits of class not_joined ("never issued AllReduce seq
N+1"), one of which is still in seq N because its own connection across the link failed (its dump's wait lists
a failed entry to the other host). That happens when the link goes down between the last transfer of an
operation and some ranks' completion of it: the ranks are then one operation apart, and the analyzer's
"behind" rule blames the processes still in seq N, not the link.

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
    """{path: summary} of rank's stall dumps (<dir>/<host>/ncclscope-comm-<hash>-rank<r>-stall.json.gz)."""
    out = {}
    for p in glob.glob(os.path.join(dumps, "*", f"ncclscope-comm-*-rank{rank}-stall.json.gz")):
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


def names(w, ranks, host, nic, failed=False):
    """The wait's entries naming one of ranks on host via nic (only failed ones with failed=True)."""
    return [e for e in (w or {}).get("peers", []) if e.get("peer_global_rank") in ranks
            and e.get("peer_host") == host and e.get("nic") == nic and (e.get("failed") or not failed)]


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--ranks", required=True)
    ap.add_argument("--peer-ranks", required=True)
    ap.add_argument("--peer-host", required=True)
    ap.add_argument("--nic", required=True)
    ap.add_argument("--analyze")
    ap.add_argument("--wait-peer", type=float, default=60)
    a = ap.parse_args()
    ranks = {int(r) for r in a.ranks.split(",")}
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

    def host_minus_guest(path):
        return os.stat(path).st_mtime_ns - int(float(open(path).read()) * 1e9)

    at = [d for d in (out, other_out) if os.path.exists(os.path.join(d, "netdev_down.at"))]
    if not at:
        fail("no netdev_down.at on either side: the link was never taken down")
        return 1
    down_ns = int(float(open(os.path.join(at[0], "netdev_down.at")).read()) * 1e9)
    down_ns += host_minus_guest(os.path.join(at[0], "clock.at"))  # on the host's clock
    offset = host_minus_guest(os.path.join(out, "clock.at"))
    down_mtime = os.stat(os.path.join(at[0], "netdev_down.at")).st_mtime_ns
    done = os.path.join(at[0], "netdev_down.done")
    if os.path.exists(done):
        print(f"`ip link set down` returned {(os.stat(done).st_mtime_ns - down_mtime) / 1e9:.2f} s after it began "
              "(host clock); times below are from its beginning")
    own_host, naming = None, []
    for r in sorted(ranks):
        found = stall_dumps(dumps, r)
        if not found:
            fail(f"rank {r} wrote no stall dump")
            continue
        for p, s in sorted(found.items()):
            w = s.get("wait")
            own_host = s["host"]
            c = s["clock"]
            snap = c["realtime_ns"] - (c["mono_before_ns"] - s["snapshot_monotonic_ns"]) + offset - down_ns
            began = snap - max([e["waiting_ns"] for e in (w or {}).get("peers", [])] or [(w or {}).get("age_ns", 0)])
            written = os.stat(p).st_mtime_ns - down_mtime
            print(f"rank {r} (global rank {s['identity']['global_rank']} on {s['host']}): stall dump taken "
                  f"{snap / 1e9:.2f} s after the link went down (written at {written / 1e9:.2f} s), its wait began "
                  f"at {began / 1e9:.2f} s: {describe(w)}")
            if snap < 0:
                fail(f"rank {r}'s stall dump {os.path.basename(p)} predates the link going down")
            elif began < -2e9:
                fail(f"rank {r}'s wait began {-began / 1e9:.2f} s before the link went down: the job was stuck already")
            if s["host"] == a.peer_host:
                fail(f"rank {r} runs on {s['host']}, the peer's host name: the hosts are not told apart")
            if not w or w.get("class") != "peer":
                fail(f"rank {r}'s wait is {w and w.get('class')}, not peer")
            elif names(w, peer_ranks, a.peer_host, a.nic):
                naming.append(r)
    print(f"ranks naming a rank of {a.peer_ranks} on {a.peer_host} via {a.nic}: "
          f"{','.join(map(str, naming)) or 'none'}")
    if not naming:
        fail(f"no rank's wait names a rank of {a.peer_ranks} on {a.peer_host} via {a.nic}")

    if a.analyze:
        deadline = time.monotonic() + a.wait_peer
        while not all(stall_dumps(other_dumps, r) for r in peer_ranks) and time.monotonic() < deadline:
            time.sleep(0.5)
        missing = [r for r in sorted(peer_ranks) if not stall_dumps(other_dumps, r)]
        if missing:
            fail(f"no stall dump of ranks {missing} in {other_dumps} after {a.wait_peer:.0f} s")
        res = subprocess.run([a.analyze, "--json", dumps, other_dumps], stdout=subprocess.PIPE, text=True)
        print(f"=== {os.path.basename(a.analyze)} --json {dumps} {other_dumps}: status {res.returncode} ===")
        if res.returncode not in (0, 1, 6):  # healthy, hang, straggler (docs/analyzer.md, exit status)
            fail(f"the analyzer exited {res.returncode}")
            return 1
        culprits = json.loads(res.stdout).get("culprits", [])
        for c in culprits:
            print(f"culprit: {c['line']}")
        hosts = {own_host, a.peer_host}
        links = [c for c in culprits if c["kind"] == "link" and c.get("peer")
                 and len({c["global_rank"], c["peer"]["global_rank"]} & ranks) == 1
                 and len({c["global_rank"], c["peer"]["global_rank"]} & peer_ranks) == 1
                 and {c["host"], c["peer"]["host"]} == hosts]
        # The exception: a rank blamed as not joined, itself waiting on a failed connection across the link.
        behind = []
        for c in culprits:
            if c.get("class") != "not_joined" or c["host"] not in hosts:
                continue
            mine = c["host"] == own_host
            d = stall_dumps(dumps if mine else other_dumps, c["global_rank"])
            across = [e for s in d.values()
                      for e in names(s.get("wait"), peer_ranks if mine else ranks, a.peer_host if mine else own_host,
                                     a.nic, failed=True)]
            if across:
                behind.append(c)
                e = across[0]
                print(f"NOTE: the analyzer blames global rank {c['global_rank']} on {c['host']} as not joined, but its "
                      f"dump says it waits in seq {next(iter(d.values()))['wait']['seq']} on a failed connection to "
                      f"global rank {e['peer_global_rank']} on {e['peer_host']} ({e['direction']}): the link failed "
                      "between an operation's last transfer and this rank's completion of it")
        others = [c for c in culprits if c.get("class") not in ("link", "not_joined")]
        if others:
            fail("culprits of another class than link or not_joined: " + ", ".join(
                f"{c['kind']} [class {c.get('class')}] global rank {c['global_rank']} on {c['host']}" for c in others))
        if links:
            print(f"link culprit(s) between {own_host} and {a.peer_host}: " + "; ".join(
                f"global rank {c['global_rank']} on {c['host']} <-> global rank {c['peer']['global_rank']} on "
                f"{c['peer']['host']}" for c in links))
        elif not behind:
            fail(f"no link culprit between a rank of {a.ranks} on {own_host} and one of {a.peer_ranks} on "
                 f"{a.peer_host}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

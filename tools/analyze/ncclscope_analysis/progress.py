"""What one rank had issued and what it had in flight when its dump was written.

Collectives are numbered per communicator and function by NCCL (seq from 0), so equal (func, seq) on two ranks
is the same collective. Point-to-point operations are numbered by ncclscope per (peer, direction) from 1:
rank A's Send to B #k pairs with rank B's Recv from A #k. A v2 summary has the last number per (peer,
direction) (`p2p`); a v1 dump only had its flight recorder, so there it is unknown (None) once the recorder has
overwritten entries and holds none for that peer.
"""
import bisect

PAIRED = {"Send": "Recv", "Recv": "Send"}


def last_coll_seq(d):
    """{func: last collective sequence number issued}."""
    return {o["func"]: o["last_seq"] for o in d["ops"] if o["kind"] == "coll"}


def last_p2p_seq(d, func, peer):
    """Last #k of func (Send/Recv) with peer that this rank issued; 0 if none; None if it cannot be told."""
    table = d.get("_p2p_last")
    if table is None:
        table = d["_p2p_last"] = {(e["peer"], e["func"]): e["last_seq"] for e in d["p2p"]}
    seq = table.get((peer, func))
    if seq is not None:
        return seq
    return 0 if d.get("_p2p_exact", True) else None


def realtime_offset_ns(d):
    """realtime - monotonic in ns from the dump's clock sample (the middle of its two monotonic reads), or None."""
    c = d.get("clock")
    return c["realtime_ns"] - (c["mono_before_ns"] + c["mono_after_ns"]) // 2 if c else None


def in_flight(d):
    """In-flight operations, oldest arrival first. Without KernelCh events (NCCL 2.31's default mask) an operation
    is done once enqueued and none is ever in flight; a rank whose connections went still then names the operation
    it waits in by its `wait` (network_only), which stands for the in-flight one."""
    if not d["in_flight"]:
        w = d.get("wait")
        return [_waited_op(w)] if w and w.get("network_only") else []
    return sorted(d["in_flight"], key=lambda r: r.get("arrival", 0))


def _waited_op(w):
    op = {"kind": w["kind"], "func": w["func"], "seq": w["seq"], "arrival": w["arrival"],
          "age_ns": w.get("age_ns", 0), "state": "network requests still"}
    peers = [p["peer_rank"] for p in w.get("peers") or () if p.get("peer_rank") is not None]
    if w["kind"] == "p2p" and peers:
        op["peer"] = peers[0]
    return op


def issued_at(d, arrivals):
    """{arrival: the operation a rank issued as that operation number of the communicator} for the numbers in
    `arrivals` that its newest completed ones (`recent`) hold: one pass over them, whatever `arrivals` holds."""
    rec = d.get("recent") or {}
    return {a: {"kind": rec["kind"][i], "func": rec["func"][i], "seq": rec["seq"][i], "arrival": a}
            for i, a in enumerate(rec.get("arrival") or ()) if a in arrivals}


MAX_RUNS_SHOWN = 32       # runs of consecutive ranks written out in one rank list; the count stays exact
MAX_MISSING_LISTED = 16   # ranks without a dump blamed one by one (a culprit each); the rest are counted in runs


class RankRuns:
    """A set of ranks as sorted, disjoint (first, last) runs of consecutive ranks. The ranks of a communicator
    that wrote no dump are the gaps between the dumps found: one run per gap, however many ranks a dump claims
    (up to 1,048,576), so what the analyzer holds and writes grows with the dumps it reads, never with the
    ranks it was told exist."""

    def __init__(self, runs):
        self.runs = list(runs)
        self.count = sum(last - first + 1 for first, last in self.runs)

    @classmethod
    def of(cls, rs):
        """The runs of an iterable of ranks."""
        runs = []
        for r in sorted(set(rs)):
            if runs and runs[-1][1] == r - 1:
                runs[-1][1] = r
            else:
                runs.append([r, r])
        return cls(tuple(run) for run in runs)

    @classmethod
    def missing(cls, found, nranks):
        """The ranks in 0..nranks-1 that are not in `found` (the ranks with a dump)."""
        runs, next_rank = [], 0
        for r in sorted(found):
            if r > next_rank:
                runs.append((next_rank, r - 1))
            next_rank = max(next_rank, r + 1)
        if next_rank < nranks:
            runs.append((next_rank, nranks - 1))
        return cls(runs)

    def __len__(self):
        return self.count

    def __contains__(self, rank):
        if not isinstance(rank, int):  # an operation without a peer
            return False
        i = bisect.bisect_right(self.runs, (rank, float("inf"))) - 1
        return i >= 0 and self.runs[i][0] <= rank <= self.runs[i][1]

    def first(self, n):
        """The n lowest ranks, as a list."""
        out = []
        for first, last in self.runs:
            out.extend(range(first, min(last + 1, first + n - len(out))))
            if len(out) >= n:
                break
        return out

    def text(self):
        """'0-2,5,7,8': a run of three or more as first-last; at most MAX_RUNS_SHOWN runs, then ',...'."""
        shown = [str(a) if a == b else f"{a}-{b}" if b > a + 1 else f"{a},{b}" for a, b in self.runs[:MAX_RUNS_SHOWN]]
        return ",".join(shown) + (",..." if len(self.runs) > MAX_RUNS_SHOWN else "")


def missing_fields(missing, key):
    """A set of ranks without a dump as finding or summary fields: the first MAX_MISSING_LISTED one by one under
    `key`, the exact count, every run ([first, last], one per gap between dumps) and, for the text, the set."""
    return {key: missing.first(MAX_MISSING_LISTED), "missing_count": len(missing),
            "missing_ranges": [list(run) for run in missing.runs], "_missing": missing}


def ranges(rs):
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7,8': rank sets of 16,384 ranks stay one short line."""
    return (rs if isinstance(rs, RankRuns) else RankRuns.of(rs)).text()


def rank_list(rs):
    """'rank 3' / 'ranks 0,1,3' / 'ranks 0-2,4-16383 (16383 ranks)' (ranks or RankRuns)."""
    runs = rs if isinstance(rs, RankRuns) else RankRuns.of(rs)
    if len(runs) == 1:
        return f"rank {runs.runs[0][0]}"
    return f"ranks {runs.text()}" + (f" ({len(runs)} ranks)" if len(runs) > 4 else "")


def op_name(r):
    """'AllReduce seq 3' or 'Send to 2 #4' / 'Recv from 1 #4'."""
    if r.get("kind") == "p2p":
        return f"{r['func']} {'to' if r['func'] == 'Send' else 'from'} {r.get('peer', '?')} #{r['seq']}"
    return f"{r['func']} seq {r['seq']}"


def state_text(r):
    """Where an in-flight operation is: enqueued / kernel started (channels done) / network steps done."""
    state = r.get("state", "?")
    if r.get("net_steps_total"):
        return f"{state}, network steps {r.get('net_steps_done', 0)}/{r['net_steps_total']}"
    if state == "kernel_started":
        return f"{state}, kernel channels done {r.get('kernel_channels_done', 0)}/{r.get('channels', 0)}"
    return state


def describe(r):
    ns = r.get("age_ns") or 0
    age = f", in flight {ns / 1e9:.1f} s" if ns >= 1e9 else f", in flight {ns / 1e6:.1f} ms" if ns else ""
    return f"{op_name(r)} ({r.get('bytes', '?')} B), {state_text(r)}{age}"

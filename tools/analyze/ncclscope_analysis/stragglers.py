"""The rank that arrives last, from the newest completed operations of every rank (the summary's `recent`).

Operations are matched within one communicator: a collective by (function, seq) on every rank, a
point-to-point operation by its pair (rank A's Send to B #k with rank B's Recv from A #k). Who arrived last:
- host clock: every rank on one host with one clock (their realtime-minus-monotonic offsets agree within
  SAME_CLOCK_NS): start times (CLOCK_MONOTONIC, when the rank enqueued the operation) compared directly.
- durations (across hosts): a late rank makes its partners' kernels wait for it, so it has the shortest GPU (or
  proxy) duration; each rank's lateness is the longest duration of the match minus its own. No clock is compared.
- realtime (across hosts, when the operations carry no GPU or proxy duration): start times mapped to realtime
  through each dump's clock sample; a rank is named only when it is late by more than the clocks' combined
  error (each kernel's estimated error plus half the sample's width), since less could be the clocks.
- symmetric barrier (NCCL 2.31+, KernelPhase events): in symmetric-memory kernels the initial_sync phase is the
  time a rank waited for the others, so the latest rank waits least. The dumps' per-rank totals give each
  rank's mean wait per operation: a clock-free measure that needs no matched operations, used when the others
  find too few, and shown beside them as the ranks' own account.
A straggler is the rank that is last in most of its matches and late by at least a millisecond and a tenth of
an operation's duration compared with the next-latest rank of the match (median over matches).
"""
import math
import statistics

from .progress import realtime_offset_ns

MIN_OPS = 3
MIN_SHARE = 0.6
MIN_LATE_NS = 1_000_000
MIN_LATE_FRACTION = 0.1
SAME_CLOCK_NS = 1_000_000
MAX_CHANCE = 0.01  # a rank last this often by chance alone, in a job where arrival order is random, is no verdict
TIMED = ("gpu", "proxy")
STRAGGLER_CLASS = "straggler"  # the class of a late rank's culprit, as the live alert NcclscopeStraggler names it


def _clock_offset(d):
    """(realtime - monotonic, error) in ns from the dump's clock sample, or None."""
    c = d.get("clock")
    if not c or not c.get("synced", True):
        return None
    width = max(0, c["mono_after_ns"] - c["mono_before_ns"])
    return realtime_offset_ns(d), c.get("esterror_ns", 0) + width // 2


def _one_clock(ranks):
    hosts = {d.get("host") for d in ranks.values()}
    if len(hosts) != 1 or None in hosts or "" in hosts:
        return False
    offsets = [o[0] for o in map(_clock_offset, ranks.values()) if o]
    return not offsets or max(offsets) - min(offsets) <= SAME_CLOCK_NS


def _matches(ranks, kind):
    """[{rank: index into that rank's recent columns}] of every complete match of `kind` operations."""
    groups = {}
    for r, d in ranks.items():
        rec = d["recent"]
        for i, (k, func, seq, peer) in enumerate(zip(rec["kind"], rec["func"], rec["seq"], rec["peer"])):
            if k != kind:
                continue
            if kind == "coll":
                key = (func, seq)
            elif func == "Send":
                key = (r, peer, seq)
            elif func == "Recv":
                key = (peer, r, seq)
            else:
                continue
            groups.setdefault(key, {})[r] = i
    want = len(ranks) if kind == "coll" else 2
    return [g for _, g in sorted(groups.items()) if len(g) == want]


def _arrivals(ranks, matches):
    """(method, [{rank: arrival in ns, larger is later}], [operation length in ns], clock error per rank)."""
    rec = {r: d["recent"] for r, d in ranks.items()}
    if _one_clock(ranks) and all(rec[r]["start_ns"][i] for g in matches for r, i in g.items()):
        lengths = [max(rec[r]["start_ns"][i] + rec[r]["duration_ns"][i] for r, i in g.items())
                   - min(rec[r]["start_ns"][i] for r, i in g.items()) for g in matches]
        return "host_clock", [{r: rec[r]["start_ns"][i] for r, i in g.items()} for g in matches], lengths, {}
    timed = [g for g in matches if all(rec[r]["timing"][i] in TIMED for r, i in g.items())]
    if len(timed) >= MIN_OPS:
        return ("durations", [{r: -rec[r]["duration_ns"][i] for r, i in g.items()} for g in timed],
                [max(rec[r]["duration_ns"][i] for r, i in g.items()) for g in timed], {})
    clocks = {r: _clock_offset(d) for r, d in ranks.items()}
    if all(clocks.values()):
        started = [g for g in matches if all(rec[r]["start_ns"][i] for r, i in g.items())]
        starts = [{r: rec[r]["start_ns"][i] + clocks[r][0] for r, i in g.items()} for g in started]
        lengths = [max(rec[r]["duration_ns"][i] for r, i in g.items()) for g in started]
        return "realtime", starts, lengths, {r: c[1] for r, c in clocks.items()}
    return None, [], [], {}


def chance_of(last, ops, group):
    """The chance that one rank of `group` arrives last in at least `last` of `ops` matches when arrival order
    is random (binomial tail, p = 1/group): 3 of 4 in a 2-rank communicator is a coin toss (0.31), 10 of 10 is
    not (0.001)."""
    p = 1 / group
    return sum(math.comb(ops, k) * p ** k * (1 - p) ** (ops - k) for k in range(last, ops + 1))


def diagnose(ranks, kind="coll"):
    """A dict with the latest-arriving rank and the figures (is_straggler tells the verdict), or None when
    there are too few matched operations."""
    if len(ranks) < 2:
        return None
    method, arrivals, lengths, clock_err = _arrivals(ranks, _matches(ranks, kind))
    if len(arrivals) < MIN_OPS:
        return None
    last_count = {r: 0 for r in ranks}
    matched = {r: 0 for r in ranks}
    lateness = {r: [] for r in ranks}   # after the first rank of the match to arrive
    lead = {r: [] for r in ranks}       # after the latest of the other ranks (negative: not last)
    for a in arrivals:
        first = min(a.values())
        order = sorted(a, key=a.get)
        last, runner_up = order[-1], order[-2]
        last_count[last] += 1
        for r, t in a.items():
            matched[r] += 1
            lateness[r].append(t - first)
            lead[r].append(t - (a[runner_up] if r == last else a[last]))
    seen = [r for r in ranks if matched[r]]
    rank = max(seen, key=lambda r: (last_count[r] / matched[r], statistics.median(lateness[r])))
    share = last_count[rank] / matched[rank]
    late_ns = statistics.median(lateness[rank])
    lead_ns = statistics.median(lead[rank])
    op_ns = statistics.median(lengths) if lengths else 0
    needed = max(MIN_LATE_NS, MIN_LATE_FRACTION * op_ns)
    error_ns = 0
    if clock_err:  # the straggler's clock and the next-latest rank's could each be off by their error
        error_ns = clock_err[rank] + max(v for r, v in clock_err.items() if r != rank)
        needed = max(needed, error_ns)
    per_rank = {r: statistics.median(v) for r, v in sorted(lateness.items()) if v}
    chance = chance_of(last_count[rank], matched[rank], min(len(a) for a in arrivals))
    return {
        "kind": kind, "method": method, "rank": rank, "ops": matched[rank], "last_count": last_count[rank],
        "share": share, "median_lateness_ns": late_ns, "median_lead_over_others_ns": lead_ns, "median_op_ns": op_ns,
        "clock_error_ns": error_ns, "median_lateness_per_rank_ns": per_rank, "chance": chance,
        "is_straggler": share >= MIN_SHARE and chance < MAX_CHANCE and lead_ns >= needed,
    }


def barrier_waits(ranks):
    """{rank: mean symmetric-kernel barrier wait per operation, ns}, or None unless every rank has one."""
    waits = {}
    for r, d in ranks.items():
        kp = d.get("kernel_phases") or {}
        ops = kp.get("symmetric_ops", 0) if isinstance(kp, dict) else 0
        if not isinstance(ops, int) or ops < MIN_OPS or not isinstance(kp.get("symmetric_barrier_ns"), int):
            return None
        waits[r] = kp["symmetric_barrier_ns"] / ops
    return waits if len(waits) >= 2 else None


def diagnose_barrier(ranks):
    """The straggler by symmetric barrier waits (the rank that waited least), or None without them."""
    waits = barrier_waits(ranks)
    if waits is None:
        return None
    order = sorted(waits, key=waits.get)
    rank, runner_up = order[0], order[1]
    late = {r: max(waits.values()) - w for r, w in waits.items()}
    lead = waits[runner_up] - waits[rank]
    ops = min(ranks[r]["kernel_phases"]["symmetric_ops"] for r in ranks)
    return {"kind": "coll", "method": "barrier", "rank": rank, "ops": ops, "last_count": ops, "share": 1.0,
            "median_lateness_ns": late[rank], "median_lead_over_others_ns": lead, "median_op_ns": 0,
            "clock_error_ns": 0, "median_lateness_per_rank_ns": dict(sorted(late.items())), "chance": None,
            "is_straggler": lead >= MIN_LATE_NS}


METHOD_TEXT = {"host_clock": "host clock, one host", "durations": "kernel durations",
               "realtime": "realtime clocks across hosts", "barrier": "symmetric-kernel barrier waits"}


def _per_rank_text(per_rank, limit=8):
    top = sorted(per_rank.items(), key=lambda kv: -kv[1])[:limit]
    more = f" (the {len(per_rank) - limit} others less)" if len(per_rank) > limit else ""
    return ", ".join(f"{r}: {v / 1e6:.2f}" for r, v in sorted(top)) + more


def finding(s, ranks=None):
    what = "collectives" if s["kind"] == "coll" else "point-to-point transfers (matched by peer and #)"
    err = f", clocks' combined error {s['clock_error_ns'] / 1e6:.2f} ms" if s["clock_error_ns"] else ""
    waits = barrier_waits(ranks) if ranks and s["method"] != "barrier" else None
    own = "; symmetric-kernel barrier wait per operation, ms: " + _per_rank_text(waits) if waits else ""
    if s["method"] == "barrier":
        return {
            "kind": "straggler", "class": STRAGGLER_CLASS, "ranks": [s["rank"]], "p2p": False, "waiting": [],
            "headline": f"rank {s['rank']} waits least at the symmetric-kernel barrier of {s['ops']} collectives, "
                        f"{s['median_lead_over_others_ns'] / 1e6:.2f} ms per operation less than the next "
                        f"({METHOD_TEXT['barrier']})",
            "text": f"rank {s['rank']} arrives last: in symmetric kernels the others wait for it; mean barrier "
                    f"wait per operation, ms below the longest: {_per_rank_text(s['median_lateness_per_rank_ns'])}"}
    return {
        "kind": "straggler", "class": STRAGGLER_CLASS, "ranks": [s["rank"]], "p2p": s["kind"] == "p2p", "waiting": [],
        "headline": f"rank {s['rank']} arrives last in {s['last_count']}/{s['ops']} {what}, median "
                    f"{s['median_lateness_ns'] / 1e6:.2f} ms after the first ({METHOD_TEXT[s['method']]})",
        "text": f"rank {s['rank']} arrives last in {s['last_count']} of its {s['ops']} matched {what}; median ms "
                f"after the first to arrive, latest ranks: {_per_rank_text(s['median_lateness_per_rank_ns'])}; "
                f"operations take {s['median_op_ns'] / 1e6:.2f} ms (median, {METHOD_TEXT[s['method']]}{err})" + own}

"""The rank that arrives last at collectives, from completed collectives present on every rank.

Matched by (function, seq) within one communicator. Two ways to tell who arrived last:
- host clock: when every rank's dump names the same host, their operation start times (CLOCK_MONOTONIC,
  the Coll event's start, i.e. when the rank enqueued it) are on one clock and compared directly.
- durations: across hosts the dumps hold no (realtime, monotonic) pair taken at one instant, so clocks are
  never compared; instead, a late rank makes every other rank's kernel wait for it, so it has the shortest
  GPU (or proxy) duration, and each rank's lateness is the longest duration minus its own.
A straggler is the rank that is last in most collectives and late by at least a millisecond and a tenth of an
operation's duration compared with the next-latest rank.
"""
import statistics

MIN_OPS = 3
MIN_SHARE = 0.6
MIN_LATE_NS = 1_000_000
MIN_LATE_FRACTION = 0.1


def _common_collectives(ranks):
    """[{rank: record}] for every completed collective that every rank recorded."""
    ops = {}
    for r, d in ranks.items():
        for rec in d["flight_recorder"]["completed"]:
            if rec["kind"] == "coll":
                ops.setdefault((rec["func"], rec["seq"]), {})[r] = rec
    return [recs for _, recs in sorted(ops.items()) if len(recs) == len(ranks)]


def _one_host(ranks):
    hosts = {d.get("host") for d in ranks.values()}
    return len(hosts) == 1 and None not in hosts and "" not in hosts


def _arrivals(common, ranks):
    """(method, [{rank: arrival time or -lateness in ns, larger is later}], [operation length in ns])."""
    if _one_host(ranks) and all(rec.get("start_ns") for recs in common for rec in recs.values()):
        lengths = [max(rec.get("end_ns", 0) or 0 for rec in recs.values()) - min(rec["start_ns"] for rec in recs.values())
                   for recs in common]
        return "host_clock", [{r: rec["start_ns"] for r, rec in recs.items()} for recs in common], lengths
    timed = [recs for recs in common if all(rec.get("timing_source") in ("gpu", "proxy") for rec in recs.values())]
    if len(timed) < MIN_OPS:
        return None, [], []
    return ("durations", [{r: -rec["duration_ns"] for r, rec in recs.items()} for recs in timed],
            [max(rec["duration_ns"] for rec in recs.values()) for recs in timed])


def diagnose(ranks):
    """A dict with the latest-arriving rank and the figures (is_straggler tells the verdict), or None when
    there are too few collectives common to every rank."""
    if len(ranks) < 2:
        return None
    method, arrivals, lengths = _arrivals(_common_collectives(ranks), ranks)
    if len(arrivals) < MIN_OPS:
        return None
    last_count = {r: 0 for r in ranks}
    lateness = {r: [] for r in ranks}   # after the first rank to arrive
    lead = {r: [] for r in ranks}       # after the latest of the other ranks (negative: not last)
    for a in arrivals:
        first = min(a.values())
        last_count[max(a, key=a.get)] += 1
        for r, t in a.items():
            lateness[r].append(t - first)
            lead[r].append(t - max(v for q, v in a.items() if q != r))
    rank = max(last_count, key=lambda r: (last_count[r], statistics.median(lateness[r])))
    share = last_count[rank] / len(arrivals)
    late_ns = statistics.median(lateness[rank])
    lead_ns = statistics.median(lead[rank])
    op_ns = statistics.median(lengths) if lengths else 0
    return {
        "method": method, "rank": rank, "ops": len(arrivals), "last_count": last_count[rank], "share": share,
        "median_lateness_ns": late_ns, "median_lead_over_others_ns": lead_ns, "median_op_ns": op_ns,
        "median_lateness_per_rank_ns": {r: statistics.median(v) for r, v in sorted(lateness.items())},
        "is_straggler": share >= MIN_SHARE and lead_ns >= max(MIN_LATE_NS, MIN_LATE_FRACTION * op_ns),
    }


def finding(s):
    method = "host clock, one host" if s["method"] == "host_clock" else "kernel durations"
    per_rank = ", ".join(f"{r}: {v / 1e6:.2f}" for r, v in s["median_lateness_per_rank_ns"].items())
    return {
        "kind": "straggler", "ranks": [s["rank"]],
        "headline": f"rank {s['rank']} arrives last in {s['last_count']}/{s['ops']} collectives, median "
                    f"{s['median_lateness_ns'] / 1e6:.2f} ms after the first rank ({method})",
        "text": f"rank {s['rank']} arrives last in {s['last_count']} of {s['ops']} collectives common to every "
                f"rank; median ms after the first rank to arrive, per rank: {per_rank}; operations take "
                f"{s['median_op_ns'] / 1e6:.2f} ms (median, {method})"}

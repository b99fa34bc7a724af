"""Hang diagnosis of one communicator: ranks missing, ranks behind, ranks stuck inside the same operation.

A rank is *behind* when it never issued an operation that other ranks are waiting in: a collective seq that
its last issued seq of that function has not reached, or the Send/Recv matching another rank's in-flight
Recv/Send. Ranks *stuck* all issued the operation and wait inside it (enqueued, kernel started, network steps).
A rank with no dump is *missing*: dead (killed, crashed), or alive with nothing in flight, which the stall
watch does not dump (SIGUSR2 makes every live rank dump).

A rank behind that is itself waiting on another rank is not the cause; the ranks at the end of the chain of
waits (waiting on nobody, or without a dump) are: their findings have root=True.

Findings are dicts: kind ("missing", "behind", "stuck" are problems; "in_flight" is detail), ranks,
root, headline (short, for the one-line verdict) and text (the detail line).
"""
from .progress import PAIRED, describe, in_flight, last_coll_seq, last_p2p_seq, op_name, state_text

# An in-flight operation younger than this in a dump of a live communicator whose stall watch did not fire is
# ordinary traffic (a SIGUSR2 dump of a running job), not a wait.
MIN_WAIT_NS = 1_000_000_000
MAX_IN_FLIGHT_SHOWN = 4


def _waiting(d, op):
    """An operation still in flight when its communicator was finalized (destroyed or aborted) never
    completed; otherwise it counts as a wait once the stall watch fired or it is MIN_WAIT_NS old."""
    return bool(d.get("stalled") or d.get("finalized") or d.get("reason") == "finalize") or \
        op.get("age_ns", 0) >= MIN_WAIT_NS


def _ranks(rs):
    rs = sorted(rs)
    return ("rank " if len(rs) == 1 else "ranks ") + ", ".join(str(r) for r in rs)


def _coll_behind(ranks, waits):
    findings = []
    issued = {r: last_coll_seq(d) for r, d in ranks.items()}
    for func in sorted(set().union(*issued.values())):
        seqs = {r: issued[r].get(func, -1) for r in ranks}
        top = max(seqs.values())
        waiting = sorted(r for r, ops in waits.items()
                         if any(o["kind"] == "coll" and o["func"] == func and o["seq"] == top for o in ops))
        late = sorted(r for r, s in seqs.items() if s < top)
        if not (waiting and late):
            continue
        last = ", ".join(f"rank {r}: " + (f"seq {seqs[r]}" if seqs[r] >= 0 else "none") for r in late)
        findings.append({
            "kind": "behind", "ranks": late, "func": func, "seq": top, "waiting": waiting,
            "last_seq": {r: seqs[r] for r in late},
            "headline": f"{_ranks(late)} never issued {func} seq {top}, which {_ranks(waiting)} "
                        f"{'is' if len(waiting) == 1 else 'are'} waiting in",
            "text": f"{_ranks(late)} never issued {func} seq {top}, which {_ranks(waiting)} "
                    f"{'is' if len(waiting) == 1 else 'are'} waiting in (last {func} issued: {last})"})
    return findings


def _p2p_behind(ranks, waits):
    """Ranks that never posted the Send/Recv matching another rank's waiting Recv/Send, grouped by the rank."""
    unmatched = {}
    for r, ops in sorted(waits.items()):
        for o in ops:
            peer = o.get("peer")
            if o["kind"] != "p2p" or o["func"] not in PAIRED or peer not in ranks:
                continue
            theirs = last_p2p_seq(ranks[peer], PAIRED[o["func"]], r)
            if theirs is not None and theirs < o["seq"]:
                unmatched.setdefault(peer, []).append((r, o, theirs))
    findings = []
    for peer, items in sorted(unmatched.items()):
        waiting = sorted({r for r, _, _ in items})
        what = "; ".join(f"rank {r}'s {op_name(o)} (rank {peer}'s last {PAIRED[o['func']]} "
                         f"{'from' if o['func'] == 'Send' else 'to'} {r}: #{theirs})" for r, o, theirs in items)
        findings.append({
            "kind": "behind", "ranks": [peer], "waiting": waiting, "p2p": True,
            "headline": f"rank {peer} never posted the operation(s) matching "
                        + ", ".join(f"rank {r}'s {op_name(o)}" for r, o, _ in items),
            "text": f"rank {peer} never posted the matching operation for: {what}"})
    return findings


def waiting_ops(d):
    """The in-flight operations of one dump that count as waits, oldest first."""
    return [o for o in in_flight(d) if _waiting(d, o)]


def _group_states(oldest):
    """'ranks 0, 1: kernel_started, kernel channels done 0/2; rank 3: enqueued'."""
    by_state = {}
    for r, o in sorted(oldest.items()):
        by_state.setdefault(state_text(o), []).append(r)
    return "; ".join(f"{_ranks(rs)}: {s}" for s, rs in by_state.items())


def _missing(missing, waits, oldest):
    if not waits:
        return {"kind": "missing", "ranks": missing, "waiting": [],
                "headline": f"{_ranks(missing)} wrote no dump (the others have nothing in flight)",
                "text": f"{_ranks(missing)} wrote no dump: dead (killed, crashed), dumps disabled, or its files "
                        f"not given; the ranks found have nothing waiting in flight"}
    # Every rank takes part in a collective; a point-to-point operation only waits on its peer.
    on_them = {r: [o for o in ops if o["kind"] == "coll" or o.get("peer") in missing] for r, ops in waits.items()}
    on_them = {r: ops for r, ops in on_them.items() if ops}
    by_op = {}
    for r, ops in sorted(on_them.items()):
        by_op.setdefault(op_name(ops[0]), []).append(r)
    what = "; ".join(f"{_ranks(rs)} {'waits' if len(rs) == 1 else 'wait'} in {op}" for op, rs in by_op.items())
    return {"kind": "missing", "ranks": missing, "waiting": sorted(on_them),
            "headline": f"{_ranks(missing)} wrote no dump while " + (what or "the others wait on other ranks"),
            "text": f"{_ranks(missing)} wrote no dump: dead (killed, crashed), or alive and idle (the stall watch "
                    f"dumps only ranks with a stuck operation; SIGUSR2 makes every live rank dump)"
                    + (f"; waiting on {'it' if len(missing) == 1 else 'them'}: {what}" if on_them else "")}


def _mark_roots(problems, waits, oldest):
    """A rank behind that is itself waiting (on a rank further behind) is not a root cause: mark the findings
    whose ranks wait on nobody (or wrote no dump) as root; in a cycle of waits, every one is."""
    blockers = {r for f in problems for r in f["ranks"]}
    roots = {r for r in blockers if r not in waits} or blockers
    for f in problems:
        f["root"] = any(r in roots for r in f["ranks"])
        if not f["root"]:
            f["text"] += "; itself waiting: " + ", ".join(f"rank {r} in {op_name(oldest[r])}" for r in f["ranks"])


def _marks(d):
    return ((" [stall watch fired]" if d.get("stalled") else "")
            + (" [still in flight at finalize]" if d.get("finalized") or d.get("reason") == "finalize" else ""))


def diagnose(ranks, nranks):
    """Findings for one communicator ({rank: dump}, its size); empty when nothing is missing or waiting."""
    findings = []
    missing = sorted(set(range(nranks)) - set(ranks))
    flights = {r: in_flight(d) for r, d in ranks.items()}
    waits = {r: waiting_ops(d) for r, d in ranks.items()}
    waits = {r: ops for r, ops in waits.items() if ops}
    oldest = {r: ops[0] for r, ops in waits.items()}

    problems = _coll_behind(ranks, waits) + _p2p_behind(ranks, waits)
    if missing:
        problems.append(_missing(missing, waits, oldest))
    elif waits and not problems:
        ops = sorted({op_name(o) for o in oldest.values()})
        idle = sorted(set(ranks) - set(waits))
        who = "every rank" if not idle else _ranks(waits)
        problems.append({
            "kind": "stuck", "ranks": sorted(waits), "ops": ops,
            "headline": f"{who} issued {', '.join(ops)} and {'are' if idle and len(waits) > 1 else 'is'} stuck "
                        f"inside ({_group_states(oldest)})",
            "text": f"{who} issued {', '.join(ops)} and waits inside it: {_group_states(oldest)}"
                    + (f"; {_ranks(idle)} have nothing in flight" if idle else "")})
    if problems and problems[0]["kind"] != "stuck":
        _mark_roots(problems, waits, oldest)
    else:
        for f in problems:
            f["root"] = True
    findings += sorted(problems, key=lambda f: not f["root"])
    for r, ops in sorted(flights.items()):
        d = ranks[r]
        where = f" on {d['host']}" if d.get("host") else ""
        for o in ops[:MAX_IN_FLIGHT_SHOWN]:
            findings.append({"kind": "in_flight", "ranks": [r],
                             "text": f"rank {r}{where}: {describe(o)}" + _marks(d)})
        if len(ops) > MAX_IN_FLIGHT_SHOWN:
            findings.append({"kind": "in_flight", "ranks": [r],
                             "text": f"rank {r}{where}: {len(ops) - MAX_IN_FLIGHT_SHOWN} more in flight"})
    return findings

"""Hang diagnosis of one communicator: ranks missing or dead, ranks behind, mismatched collectives, ranks stuck
inside the same operation.

A rank is *behind* when it never issued an operation that other ranks are waiting in: a collective seq that
its last issued seq of that function has not reached, or the Send/Recv matching another rank's in-flight
Recv/Send. Ranks in a *mismatch* wait in different collectives at the same arrival number (the n-th operation
each issued on the communicator): NCCL numbers each function separately, so AllGather seq 0 and AllReduce seq 3
never look alike by seq, but both are operation #3. Ranks *stuck* all issued the operation and wait inside it.
A rank with no dump is *missing*; it is *dead* when survivors lost their connections to a process that wrote
no dump ("peer … closed the connection": the network transport saw it go), or when the others answered the dump
signal and it did not; otherwise it is dead or alive and idle (the stall watch dumps only ranks with a stuck
operation; SIGUSR2 makes every live rank dump).

Where every rank issued the operation and the dumps carry the `wait` field, its peer entries name the rank or
the link the waits lead to instead (waits.py: "link", "kernel", "not_launched", "unresponsive"); without it,
the verdict is "stuck" as before.

Findings are dicts: kind ("missing", "dead", "behind", "mismatch", "stuck", "link", "kernel", "not_launched",
"unresponsive" are problems; "in_flight" and "wait" are detail), class (the live alert's: not_joined, process,
mismatch, kernel, link; None for a stuck verdict that names nobody), ranks (the blamed ranks; of ranks without a
dump the first MAX_MISSING_LISTED, all of them in missing_count and missing_ranges), waiting (the
ranks that wait on them), func/seq/peer where one operation is meant, headline (short) and text (the detail
line). Which blamed ranks are root causes is decided for the whole
job (chains.py), since a rank behind here may be waiting in another communicator.
"""
from . import waits as wait_field
from .progress import (PAIRED, RankRuns, describe, in_flight, issued_at, last_coll_seq, last_p2p_seq,
                       missing_fields, op_name, rank_list, realtime_offset_ns, state_text)

# An in-flight operation younger than this in a dump of a live communicator whose stall watch did not fire is
# ordinary traffic (a SIGUSR2 dump of a running job), not a wait.
MIN_WAIT_NS = 1_000_000_000
MAX_IN_FLIGHT_SHOWN = 4
MAX_IN_FLIGHT_RANKS = 8   # ranks whose in-flight detail is listed (the verdict names the rest in ranges)
LOST = ("recv", "send")   # net error kinds of a connection the peer closed or reset


def _is_wait_op(d, op):
    """op is the operation the dump's `wait` field describes (past its own stall threshold)."""
    w = d.get("wait")
    return bool(w) and (op.get("kind"), op.get("func"), op.get("seq")) == (w["kind"], w["func"], w["seq"])


def _waiting(d, op):
    """An operation still in flight when its communicator was finalized (destroyed or aborted) never
    completed; otherwise it counts as a wait once the stall watch fired, it is MIN_WAIT_NS old, or the dump's
    `wait` field says it is past its stall threshold."""
    return bool(d.get("stalled") or d.get("finalized") or d.get("reason") == "finalize") or \
        op.get("age_ns", 0) >= MIN_WAIT_NS or _is_wait_op(d, op)


def waiting_ops(d):
    """The in-flight operations of one dump that count as waits, oldest first."""
    return [o for o in in_flight(d) if _waiting(d, o)]


def _verb(rs):
    return "is" if len(rs) == 1 else "are"


def _mismatch(ranks, waits):
    """Ranks whose oldest waiting collective differs in function from the most common one at the same arrival
    number, or who completed a different collective as that operation (without KernelCh a rank's own collective
    is done once enqueued, so a mismatched rank waits in nothing). Returns (findings, {func: arrival}) so that the
    seq-based checks skip those functions."""
    at = {}
    for r, ops in waits.items():
        colls = [o for o in ops if o["kind"] == "coll" and "arrival" in o]
        if colls:
            at.setdefault(colls[0]["arrival"], {}).setdefault(colls[0]["func"], []).append((r, colls[0]))
    there = {a: {r for items in funcs.values() for r, _ in items} for a, funcs in at.items()}
    for r, d in ranks.items():  # linear in the dumps: each rank's `recent` read once
        for a, op in issued_at(d, at).items():
            if op["kind"] == "coll" and r not in there[a]:
                at[a].setdefault(op["func"], []).append((r, op))
    findings, skip = [], set()
    for arrival, funcs in sorted(at.items()):
        if len(funcs) < 2:
            continue
        common = max(funcs, key=lambda f: (len(funcs[f]), f))
        rs_common = sorted(r for r, _ in funcs[common])
        op_common = funcs[common][0][1]
        for func, items in sorted(funcs.items()):
            skip.add(func)
            if func == common:
                continue
            rs = sorted(r for r, _ in items)
            op = items[0][1]
            findings.append({
                "kind": "mismatch", "ranks": rs, "waiting": rs_common, "func": func, "seq": op["seq"],
                "arrival": arrival, "expected": {"func": common, "seq": op_common["seq"]},
                "headline": f"{rank_list(rs)} issued {op_name(op)} as operation #{arrival} of the communicator, "
                            f"where {rank_list(rs_common)} issued {op_name(op_common)}",
                "text": f"collectives called in a different order: {rank_list(rs)} {_verb(rs)} waiting in "
                        f"{op_name(op)}, {rank_list(rs_common)} in {op_name(op_common)}, both operation #{arrival} "
                        f"issued on this communicator"})
    return findings, skip


def _coll_behind(ranks, waits, skip):
    findings = []
    issued = {r: last_coll_seq(d) for r, d in ranks.items()}
    for func in sorted(set().union(*issued.values()) - skip):
        seqs = {r: issued[r].get(func, -1) for r in ranks}
        top = max(seqs.values())
        waiting = sorted(r for r, ops in waits.items()
                         if any(o["kind"] == "coll" and o["func"] == func and o["seq"] == top for o in ops))
        # A rank whose own dump says it is stalled in this communicator (a `wait`) issued an earlier operation and
        # is stuck in it: blocked, not missing the call. Its wait says on what (waits.py), as the live rules do.
        late = sorted(r for r, s in seqs.items() if s < top and not ranks[r].get("wait"))
        if not (waiting and late):
            continue
        lasts = {}
        for r in late:
            lasts.setdefault(seqs[r], []).append(r)
        last = "; ".join(f"{rank_list(rs)}: " + (f"seq {s}" if s >= 0 else "none") for s, rs in sorted(lasts.items()))
        findings.append({
            "kind": "behind", "ranks": late, "func": func, "seq": top, "waiting": waiting,
            "last_seq": {r: seqs[r] for r in late},
            "headline": f"{rank_list(late)} never issued {func} seq {top}, which {rank_list(waiting)} "
                        f"{_verb(waiting)} waiting in",
            "text": f"{rank_list(late)} never issued {func} seq {top}, which {rank_list(waiting)} "
                    f"{_verb(waiting)} waiting in (last {func} issued: {last})"})
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
        r0, o0, _ = items[0]
        what = "; ".join(f"rank {r}'s {op_name(o)} (rank {peer}'s last {PAIRED[o['func']]} "
                         f"{'from' if o['func'] == 'Send' else 'to'} {r}: #{theirs})" for r, o, theirs in items[:8])
        more = f" and {len(items) - 8} more" if len(items) > 8 else ""
        findings.append({
            "kind": "behind", "ranks": [peer], "waiting": waiting, "p2p": True,
            "func": PAIRED[o0["func"]], "seq": o0["seq"], "peer": r0,
            "headline": f"rank {peer} never posted the operation(s) matching "
                        + ", ".join(f"rank {r}'s {op_name(o)}" for r, o, _ in items[:4]) + more,
            "text": f"rank {peer} never posted the matching operation for: {what}{more}"})
    return findings


def _lost_peers(ranks):
    """Net errors of the ranks found that say a connection was closed or reset: [(rank, error)]."""
    out = []
    for r, d in sorted(ranks.items()):
        for e in d.get("net_errors") or []:
            if e.get("kind") in LOST:
                out.append((r, e))
    return out


def _peer_labels(errors):
    """'global rank 1, pid 77 on h2 (10.0.0.2:5000, 10.0.0.2:5001)' per peer process (address alone when the
    handshake told nothing); one process is met on several connections."""
    by_peer = {}
    for e in errors:
        who = []
        if e.get("peer_global_rank") is not None:
            who.append(f"global rank {e['peer_global_rank']}")
        if e.get("peer_pid") is not None:
            who.append(f"pid {e['peer_pid']}" + (f" on {e['peer_host']}" if e.get("peer_host") else ""))
        by_peer.setdefault(", ".join(who), []).append(e.get("peer") or "?")
    return [(f"{who} ({', '.join(sorted(set(addrs))[:3])})" if who else ", ".join(sorted(set(addrs))[:3]))
            for who, addrs in sorted(by_peer.items())]


def _dead_peers(lost, live_globals, live_procs):
    """The errors whose peer is a process that wrote no dump (a peer with a dump failed after its own peer)."""
    dead = []
    for r, e in lost:
        g, pid, host = e.get("peer_global_rank"), e.get("peer_pid"), e.get("peer_host")
        if g is not None and g in live_globals:
            continue
        if pid is not None and host and (host, pid) in live_procs:
            continue
        dead.append((r, e))
    return dead


def _missing(missing, waits, ranks, live_globals, live_procs):
    """The finding for the ranks without a dump (`missing`, RankRuns): blamed one by one up to
    MAX_MISSING_LISTED ("ranks"), all of them counted ("missing_count", "missing_ranges")."""
    blamed = missing_fields(missing, "ranks")
    # Every rank takes part in a collective; a point-to-point operation only waits on its peer.
    on_them = {r: [o for o in ops if o["kind"] == "coll" or o.get("peer") in missing] for r, ops in waits.items()}
    on_them = {r: ops for r, ops in on_them.items() if ops}
    by_op = {}
    for r, ops in sorted(on_them.items()):
        by_op.setdefault(op_name(ops[0]), []).append(r)
    what = "; ".join(f"{rank_list(rs)} {'waits' if len(rs) == 1 else 'wait'} in {op}" for op, rs in by_op.items())
    first = min((ops[0] for ops in on_them.values()), key=lambda o: o.get("arrival", 0), default=None)
    op_fields = {"func": first["func"], "seq": first["seq"]} if first else {}
    dead = _dead_peers(_lost_peers(ranks), live_globals, live_procs)
    if dead:
        reporters = sorted({r for r, _ in dead})
        peers = _peer_labels([e for _, e in dead])
        sample = dead[0][1]["text"]
        return dict(op_fields, **{
            "kind": "dead", **blamed, "waiting": sorted(on_them), "peers": [e for _, e in dead][:8],
            "headline": f"{rank_list(missing)} died (no dump; {rank_list(reporters)} lost the connection to "
                        f"{', '.join(peers[:4])})" + (f" while {what}" if what else ""),
            "text": f"{rank_list(missing)} wrote no dump and {rank_list(reporters)} lost their connections to "
                    f"{'it' if len(missing) == 1 else 'them'}: \"{sample}\"; killed or crashed, not hung"
                    + (f"; waiting on {'it' if len(missing) == 1 else 'them'}: {what}" if what else "")})
    answered = sorted(r for r, d in ranks.items() if d.get("reason") == "request")
    if answered:
        return dict(op_fields, **{
            "kind": "dead", **blamed, "waiting": sorted(on_them), "peers": [],
            "headline": f"{rank_list(missing)} wrote no dump although {rank_list(answered)} answered the dump "
                        f"signal" + (f" while {what}" if what else ""),
            "text": f"{rank_list(missing)} wrote no dump although {rank_list(answered)} dumped on the dump signal "
                    f"(SIGUSR2): not running, or its files not given; no network error names it (ncclscope did "
                    f"not carry its traffic, or it went before connecting)"
                    + (f"; waiting on {'it' if len(missing) == 1 else 'them'}: {what}" if what else "")})
    if not waits:
        return {"kind": "missing", **blamed, "waiting": [],
                "headline": f"{rank_list(missing)} wrote no dump (the others have nothing in flight)",
                "text": f"{rank_list(missing)} wrote no dump: dead (killed, crashed), dumps disabled, or its files "
                        f"not given; the ranks found have nothing waiting in flight"}
    return dict(op_fields, **{
        "kind": "missing", **blamed, "waiting": sorted(on_them),
        "headline": f"{rank_list(missing)} wrote no dump while " + (what or "the others wait on other ranks"),
        "text": f"{rank_list(missing)} wrote no dump and no survivor lost its connection to "
                f"{'it' if len(missing) == 1 else 'them'}: alive and hung before the operation, or dead without "
                f"ncclscope carrying its traffic (SIGUSR2 makes every live rank dump)"
                + (f"; waiting on {'it' if len(missing) == 1 else 'them'}: {what}" if on_them else "")})


def _group_states(oldest):
    """'ranks 0,1: kernel_started, kernel channels done 0/2; rank 3: enqueued'."""
    by_state = {}
    for r, o in sorted(oldest.items()):
        by_state.setdefault(state_text(o), []).append(r)
    return "; ".join(f"{rank_list(rs)}: {s}" for s, rs in by_state.items())


def _marks(d):
    return ((" [stall watch fired]" if d.get("stalled") else "")
            + (" [still in flight at finalize]" if d.get("finalized") or d.get("reason") == "finalize" else ""))


def _stuck(ranks, waits, oldest):
    ops = sorted({op_name(o) for o in oldest.values()})
    idle = sorted(set(ranks) - set(waits))
    who = "every rank" if not idle else rank_list(waits)
    errors = sorted({e["text"] for d in ranks.values() for e in d.get("net_errors") or []})
    o0 = min(oldest.values(), key=lambda o: o.get("arrival", 0))
    return {
        "kind": "stuck", "ranks": [], "waiting": sorted(waits), "ops": ops, "func": o0["func"], "seq": o0["seq"],
        "class": wait_field.stuck_class(ranks),
        "headline": f"{who} issued {', '.join(ops)} and {'are' if len(waits) > 1 else 'is'} stuck inside "
                    f"({_group_states(oldest)})",
        "text": f"{who} issued {', '.join(ops)} and waits inside it: {_group_states(oldest)}"
                + (f"; {rank_list(idle)} have nothing in flight" if idle else "")
                + (f"; network errors: {'; '.join(errors[:3])}" if errors else "; no network error recorded")
                + wait_field.stuck_detail(ranks)}


def _wait_start(ranks, waits, finding):
    """When the first of the finding's waiting ranks began its oldest wait, in realtime ns where its dump has a
    clock sample (monotonic otherwise); None when unknown. Orders a culprit's places: the wait began first where
    it stopped first."""
    starts = [waits[w][0]["start_ns"] + (realtime_offset_ns(ranks[w]) or 0)
              for w in finding.get("waiting", []) if w in waits and waits[w][0].get("start_ns")]
    return min(starts, default=None)


def stale_dumps(ranks, waits):
    """{rank: (func, its last seq issued, seq another rank completed)} of the ranks whose latest dump is older than
    what the others have since done with them: another rank waits in collective seq s of a function, so it
    completed s - 1, which that rank took part in, while the rank's dump says it issued less. A rank frozen after an
    earlier stall dump (its process stopped: it cannot answer the dump signal) leaves such a dump; it says nothing
    of the hang. Only against ranks that wait: dumps of a running job taken moments apart are not stale."""
    stale = {}
    for r, d in ranks.items():
        issued = last_coll_seq(d)
        for o, ops in waits.items():
            if o == r:
                continue
            for op in ops:
                if op["kind"] == "coll" and issued.get(op["func"], -1) < op["seq"] - 1:
                    stale[r] = (op["func"], issued.get(op["func"], -1), op["seq"] - 1)
                    break
            if r in stale:
                break
    return stale


def _stale_finding(stale, ranks):
    text = "; ".join(f"rank {r}'s latest dump ({ranks[r].get('reason') or 'no reason'}) says {func} seq {mine} was "
                     f"the last it issued, but the others completed seq {done} with it since"
                     for r, (func, mine, done) in sorted(stale.items()))
    return {"kind": "stale", "ranks": sorted(stale),
            "text": text + ": it stopped writing dumps (frozen, or gone), so it is read as a rank without a dump"}


def _all_went_on(ranks, waits):
    """True when nothing waits and every dump found is of a stall the rank went past (a recovered dump, or a stall
    dump recovered.py took out): the dumps of a job still running after a stall. The other ranks never stalled,
    so they had no reason to dump, and their silence says nothing."""
    return bool(ranks) and not waits and all(d.get("reason") == "recovered" or d.get("_recovered")
                                             for d in ranks.values())


def _undumped(missing):
    return {"kind": "undumped", **missing_fields(missing, "ranks"),
            "text": f"{rank_list(missing)} wrote no dump: a rank dumps on its own only when it stalls, and every "
                    f"stall found is over (SIGUSR2 makes every live rank dump)"}


def diagnose(ranks, nranks, live_globals=frozenset(), live_procs=frozenset()):
    """Findings for one communicator ({rank: summary}, its size); empty when nothing is missing or waiting.
    live_globals / live_procs: global ranks and (host, pid) of every process with a dump, job-wide."""
    waits = {r: ops for r, ops in ((r, waiting_ops(d)) for r, d in ranks.items()) if ops}
    stale = stale_dumps(ranks, waits)
    notes = [_stale_finding(stale, ranks)] if stale else []
    if stale:
        ranks = {r: d for r, d in ranks.items() if r not in stale}
        waits = {r: ops for r, ops in waits.items() if r not in stale}
        live_procs = frozenset(live_procs) - {(d.get("host"), d.get("pid")) for r, d in ranks.items() if r in stale}
    missing = RankRuns.missing(ranks, nranks)
    oldest = {r: ops[0] for r, ops in waits.items()}

    problems, skip = _mismatch(ranks, waits)
    problems += _coll_behind(ranks, waits, skip) + _p2p_behind(ranks, waits)
    if missing and _all_went_on(ranks, waits):
        notes.append(_undumped(missing))
    elif missing:
        f = _missing(missing, waits, ranks, live_globals, live_procs)
        wait_field.refine_missing(f, ranks, missing, live_globals)
        problems.append(f)
    elif waits and not problems:
        # Every rank issued the operation: the dumps' wait fields name the rank or link the chains end at.
        problems += wait_field.resolve(ranks) or [_stuck(ranks, waits, oldest)]
    for f in problems:
        f["_wait_start_ns"] = _wait_start(ranks, waits, f)
        f.setdefault("class", wait_field.CLASS_OF_KIND.get(f["kind"]))
        f["_waits"] = any(d.get("wait") for d in ranks.values())  # the culprit line then names the class
    findings = notes + list(problems)
    listed = sorted(waits) if waits else sorted(r for r, d in ranks.items() if d["in_flight"])
    for r in listed[:MAX_IN_FLIGHT_RANKS]:
        d, ops = ranks[r], in_flight(ranks[r])
        where = f" on {d['host']}" if d.get("host") else ""
        for o in ops[:MAX_IN_FLIGHT_SHOWN]:
            findings.append({"kind": "in_flight", "ranks": [r], "text": f"rank {r}{where}: {describe(o)}" + _marks(d)})
        if d.get("wait"):
            findings.append({"kind": "wait", "ranks": [r], "class": d["wait"]["class"],
                             "text": f"rank {r}{where}: {wait_field.describe(d['wait'])}"})
        if len(ops) > MAX_IN_FLIGHT_SHOWN:
            findings.append({"kind": "in_flight", "ranks": [r],
                             "text": f"rank {r}{where}: {len(ops) - MAX_IN_FLIGHT_SHOWN} more in flight"})
    if len(listed) > MAX_IN_FLIGHT_RANKS:
        findings.append({"kind": "in_flight", "ranks": [],
                         "text": f"{len(listed) - MAX_IN_FLIGHT_RANKS} more ranks with operations in flight"})
    return findings

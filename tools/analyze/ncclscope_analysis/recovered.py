"""Stall dumps of a job that went on: a stall is *recovered* when dumps show progress past the operation it waited
in, so it is reported with its age, not as a hang.

A stall dump stays on disk after the stall ends (one file per reason, replaced only by the next stall): a job
that stalled for a minute and then ran on leaves every rank's stall dump, and read alone they look like a hang
of every rank. Progress past the stalled operation is shown by
- the rank's own later dump of the communicator (request, finalize), where that operation is no longer in
  flight: it completed;
- another rank's dump of the communicator that completed a later collective of the same function: every rank
  takes part in a collective, so the stalled rank issued it too and went past its stall.
A stalled rank whose newest dump is such a recovered stall dump has its stall taken out of the hang diagnosis
(its in-flight operations, `wait` and stall mark are of the past); what it issued stays.
"""
from .hang import waiting_ops
from .progress import in_flight, last_coll_seq, op_name


def _completed_coll(d):
    """{func: last collective seq this rank completed}: issued, less what is still in flight."""
    done = last_coll_seq(d)
    for o in in_flight(d):
        if o["kind"] == "coll" and o["func"] in done:
            done[o["func"]] = min(done[o["func"]], o["seq"] - 1)
    return done


def _same_op(a, b):
    return (a.get("kind"), a.get("func"), a.get("seq"), a.get("peer")) == \
        (b.get("kind"), b.get("func"), b.get("seq"), b.get("peer"))


def _evidence(r, stall, op, ranks, done):
    """What shows that rank r went past `op`, the operation its stall dump waited in; None if nothing does."""
    d = ranks[r]
    if d is not stall and d.get("_path") != stall.get("_path") and \
            d.get("snapshot_monotonic_ns", 0) > stall.get("snapshot_monotonic_ns", 0) and \
            not any(_same_op(op, o) for o in in_flight(d)):
        return {"rank": r, "reason": d.get("reason"), "written_ns": d.get("_written_ns"),
                "text": f"its later {d.get('reason') or 'unnamed'} dump no longer has it in flight"}
    if op["kind"] != "coll":
        return None
    for seq, x in done.get(op["func"], ()):
        if x != r and seq > op["seq"]:
            return {"rank": x, "reason": ranks[x].get("reason"), "written_ns": ranks[x].get("_written_ns"),
                    "text": f"rank {x}'s {ranks[x].get('reason') or 'unnamed'} dump completed {op['func']} seq "
                            f"{seq} since, which rank {r} took part in"}
    return None


def _furthest(ranks):
    """{func: the two (last completed collective seq, rank) furthest on}: one rank's evidence is another's, so two
    suffice, and a 16,384-rank job's stalled ranks are checked in linear time."""
    top = {}
    for r, d in ranks.items():
        for func, seq in _completed_coll(d).items():
            top[func] = sorted(top.get(func, []) + [(seq, r)], key=lambda x: (-x[0], x[1]))[:2]
    return top


def _age(ns, now_ns, newest_ns):
    """(seconds since, seconds before the job's newest dump), None where the time is unknown."""
    if ns is None:
        return None, None
    return ((now_ns - ns) / 1e9 if now_ns is not None else None,
            (newest_ns - ns) / 1e9 if newest_ns is not None else None)


def age_text(age_s, before_s):
    if age_s is None:
        return "written at an unknown time"
    return f"written {secs(age_s)} ago" + (f", {secs(before_s)} before the job's newest dump"
                                             if before_s else ", the job's newest dump" if before_s == 0 else "")


def secs(s):
    """'4.2 s', '95 s', '12 min', '5 h', '9 d': a dump's age at a glance."""
    a = abs(s)
    if a < 10:
        return f"{s:.1f} s"
    if a < 120:
        return f"{s:.0f} s"
    if a < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.0f} h" if a < 172800 else f"{s / 86400:.0f} d"


def _which(d):
    """'stall dump', or 'request dump (stall watch fired)' for another dump taken while the rank was stalled."""
    reason = d.get("reason") or "unnamed"
    return "stall dump" if reason == "stall" else f"{reason} dump (stall watch fired)"


def apply(ranks, now_ns=None, newest_ns=None):
    """(ranks, findings): the ranks with the recovered stall of a rank whose newest dump is the stall dump taken
    out, and one `recovered` finding per rank whose stall the dumps show it went past."""
    done = _furthest(ranks)
    out, findings = dict(ranks), []
    for r, d in sorted(ranks.items()):
        stalls = list(d.get("_older") or ())
        if d.get("stalled") or d.get("reason") == "stall":
            stalls.append(d)
        for stall in stalls:
            ops = waiting_ops(stall)
            if not ops:
                continue
            op = ops[0]
            ev = _evidence(r, stall, op, ranks, done)
            if ev is None:
                continue
            age_s, before_s = _age(stall.get("_written_ns"), now_ns, newest_ns)
            findings.append({
                "kind": "recovered", "ranks": [r], "class": None, "func": op["func"], "seq": op["seq"],
                "stall_dump": stall.get("_path"), "age_s": age_s, "before_newest_s": before_s, "evidence": ev,
                "headline": f"rank {r} stalled in {op_name(op)} and went on",
                "text": f"rank {r}'s {_which(stall)} ({age_text(age_s, before_s)}) waited in {op_name(op)}; "
                        f"{ev['text']}: recovered, not a hang"})
            if stall is d:
                out[r] = dict(d, in_flight=[], stalled=False, wait=None, _recovered=True)
    return out, findings

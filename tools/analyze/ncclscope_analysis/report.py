"""Per-communicator analysis, the job's root causes, the verdict lines, text and JSON output (cli.py has the
command line).

Text output: one line per root cause (the process, what it did or failed to do, where, and the next step), or
one healthy line; then one verdict line per communicator with a problem; then per communicator the findings in
detail and its summary table.
"""
import sys

import time

from . import chains, hang, nics, recovered, stragglers
from .progress import rank_list, ranges
from .summary import summarize

PROBLEMS = ("dead", "missing", "behind", "mismatch", "stuck", "straggler", "link", "kernel", "not_launched",
            "unresponsive")
REPORT_SCHEMA = "ncclscope.analyze.v2"
KIND_WORD = {"behind": "hang", "missing": "hang or death (no dump)", "dead": "dead", "mismatch": "mismatch",
             "stuck": "stuck", "straggler": "straggler", "link": "link", "kernel": "kernel stuck",
             "not_launched": "hang (kernel not launched)", "unresponsive": "unresponsive (process)"}
MAX_HEALTHY_LINES = 8
# The live alert that names a culprit of each class (rules/ncclscope-hang.yml, rules/ncclscope-alerts.yml): the
# analyzer's `class` is that alert's `class` label, or for a straggler the alert's name in one word.
ALERT_OF_CLASS = {"not_joined": "NcclscopeHang", "process": "NcclscopeHang", "mismatch": "NcclscopeHang",
                  "kernel": "NcclscopeHang", "link": "NcclscopeHang", "straggler": "NcclscopeStraggler"}
HANG_STATUSES = ("dead", "mismatch", "hang", "missing")  # the job stopped (or a rank is gone): exit 1

NEXT_STEP = {
    "behind": "see where the process stopped before calling it: py-spy dump --pid {pid} (Python) or "
              "gdb -p {pid} -batch -ex 'thread apply all bt', on {host}",
    "missing": "check whether pid {pid} still runs on {host} (ps -p {pid}; the launcher's log for {grank}); if it "
               "does, py-spy dump --pid {pid}; SIGUSR2 to every rank makes each live one dump",
    "dead": "find why it died: the launcher's log and exit status of {grank}, and `journalctl -k` / dmesg on {host} "
            "(OOM killer, segfault, GPU Xid)",
    "mismatch": "the program calls collectives in a different order on this rank: compare its stack "
                "(py-spy dump --pid {pid} on {host}) with a rank that issued the expected one",
    "stuck": "every rank is inside the operation: check the network (ncclscope_nic_errors_total, ibstat or ethtool "
             "on the hosts, the NCCL log with NCCL_DEBUG=INFO) and the GPUs (nvidia-smi, dmesg Xid)",
    "straggler": "find why it is late: GPU clocks and throttling (nvidia-smi -q -d PERFORMANCE on {host}), CPU "
                 "contention or data loading in pid {pid}, its NIC counters",
    "kernel": "its GPU kernel does not finish: nvidia-smi and Xid errors (dmesg / journalctl -k) on {host}, the "
              "GPU's state (nvidia-smi -q); what pid {pid} launched (py-spy dump --native --pid {pid}); an "
              "intra-node peer (NVLink, PCIe) its kernel may wait on",
    "not_launched": "its kernel was never launched: see where the host thread is (py-spy dump --pid {pid} or "
                    "gdb -p {pid} -batch -ex 'thread apply all bt', on {host}) and what else its stream runs "
                    "(its other communicators' stuck operations)",
    "unresponsive": "check whether pid {pid} still runs on {host} (ps -p {pid}); if it does, py-spy dump --pid "
                    "{pid} and SIGUSR2 to it for a fresh dump; if not, the launcher's log and `journalctl -k` / "
                    "dmesg on {host}",
    "link": "check the link between {host} ({nic}) and {peer_host} ({peer_nic}): the NICs' port counters and "
            "errors (ethtool -S, or ibstat / perfquery on InfiniBand), the cable and the switch ports, "
            "ncclscope_nic_errors_total and the NCCL log (NCCL_DEBUG=INFO) on both hosts",
}


def _problems(entry):
    return [f for f in entry["findings"] if f["kind"] in PROBLEMS]


def analyze_comm(comm, ranks, live_globals=frozenset(), live_procs=frozenset(), now_ns=None, newest_ns=None):
    nranks = next(iter(ranks.values()))["nranks"]
    ranks, recovered_notes = recovered.apply(ranks, now_ns, newest_ns)
    findings = recovered_notes + hang.diagnose(ranks, nranks, live_globals, live_procs)
    straggler = p2p_straggler = None
    if not any(f["kind"] in PROBLEMS for f in findings):
        straggler = stragglers.diagnose(ranks, "coll") or stragglers.diagnose_barrier(ranks)
        if straggler and straggler["is_straggler"]:
            findings.append(stragglers.finding(straggler, ranks))
        else:
            p2p_straggler = stragglers.diagnose(ranks, "p2p")
            if p2p_straggler and p2p_straggler["is_straggler"]:
                findings.append(stragglers.finding(p2p_straggler, ranks))
    status = _status(_problems({"findings": findings}))
    completion = completion_seen(ranks)
    if status == "healthy" and completion == "none":
        status = CANNOT_TELL
    summary = dict(summarize(ranks), dumps=dump_ages(ranks, now_ns, newest_ns))
    return {"comm_hash": comm, "summary": summary, "findings": findings, "straggler": straggler,
            "p2p_straggler": p2p_straggler, "status": status, "completion_seen": completion, "_ranks": ranks}


def dump_ages(ranks, now_ns, newest_ns):
    """Per rank, its newest dump: reason, when written (realtime ns) and its age, in seconds since (now_ns) and
    before the job's newest dump (newest_ns); None where unknown."""
    out = []
    for r, d in sorted(ranks.items()):
        ns = d.get("_written_ns")
        out.append({"rank": r, "reason": d.get("reason"), "written_realtime_ns": ns,
                    "age_s": round((now_ns - ns) / 1e9, 3) if ns is not None and now_ns is not None else None,
                    "before_newest_s": round((newest_ns - ns) / 1e9, 3)
                    if ns is not None and newest_ns is not None else None})
    return out


def _ages_text(ages, limit=4):
    """'written 3.0 s to 2 min ago; oldest: rank 2 (stall) written 2 min ago, 118 s before the job's newest dump'."""
    known = [a for a in ages if a["age_s"] is not None]
    if not known:
        return "written at unknown times"
    lo, hi = min(a["age_s"] for a in known), max(a["age_s"] for a in known)
    oldest = sorted(known, key=lambda a: -a["age_s"])[:limit]
    if hi - lo < 1:
        behind = oldest[0]["before_newest_s"]
        return (f"written {recovered.secs(lo)} ago, within a second of each other"
                + (f", {recovered.secs(behind)} before the job's newest dump" if behind and behind >= 1 else ""))
    span = f"written {recovered.secs(lo)} to {recovered.secs(hi)} ago"
    return span + "; oldest: " + "; ".join(f"rank {a['rank']} ({a['reason'] or 'no reason'}) "
                                           + recovered.age_text(a["age_s"], a["before_newest_s"]) for a in oldest)


CANNOT_TELL = "cannot_tell"
_SEEN_ORDER = ("kernel", "network", "none")


def completion_seen(ranks):
    """How the ranks saw their operations finish, the least of them: "none" where a rank had no KernelCh events and
    no ncclscope connection in the communicator, so a hung operation looked done at enqueue. Dumps from before the
    field: "kernel"."""
    return max((d.get("completion_seen") or "kernel" for d in ranks.values()), key=_SEEN_ORDER.index)


def _status(problems):
    kinds = {f["kind"] for f in problems}
    for k in ("dead", "mismatch"):
        if k in kinds:
            return k
    if kinds & {"behind", "stuck", "link", "kernel", "not_launched", "unresponsive"} or \
            ("missing" in kinds and any(f.get("waiting") for f in problems)):
        return "hang"
    if "missing" in kinds:
        return "missing"
    return "straggler" if "straggler" in kinds else "healthy"


def _comm_label(entry):
    name = entry["summary"]["comm_name"]
    return f"comm {entry['comm_hash']}" + (f" ({name})" if name else "")


def _identity(entry, rank, finding=None):
    """{host, pid, global_rank} of a rank, from its dump or, for a dead rank, from the survivors' errors."""
    d = entry["_ranks"].get(rank)
    if d is not None:
        return {"host": d.get("host"), "pid": d.get("pid"), "global_rank": (d.get("identity") or {}).get("global_rank")}
    if finding is not None and finding["kind"] == "dead":
        for e in finding.get("peers", []):
            return {"host": e.get("peer_host"), "pid": e.get("peer_pid"), "global_rank": e.get("peer_global_rank")}
    if finding is not None and finding.get("_wait_ident"):  # the others' wait entries name the absent process
        return dict(finding["_wait_ident"])
    return {"host": None, "pid": None, "global_rank": None}


def _who(ident, no_dump=False):
    g = f"global rank {ident['global_rank']}" if ident.get("global_rank") is not None else None
    where = (f"pid {ident['pid']}" if ident.get("pid") is not None else "pid unknown") + \
        (f" on {ident['host']}" if ident.get("host") else "")
    return ", ".join(x for x in (g, where, "no dump" if no_dump else None) if x)


def _blamed_rank(finding, key):
    """The rank of the finding's communicator that root-cause process `key` is."""
    return next(r for r, b in zip(finding["ranks"], finding["_blamed"]) if b == key)


def _last_issue_ns(d):
    """Monotonic start of the last operation a rank issued on one communicator (its completed `recent` ones and
    those in flight); None when its dump holds none."""
    starts = list((d.get("recent") or {}).get("start_ns", [])) + [o["start_ns"] for o in d["in_flight"]
                                                                    if o.get("start_ns")]
    return max(starts, default=None)


def _since(finding):
    """When the first rank began waiting on this finding's blamed ranks (hang.diagnose)."""
    start = finding.get("_wait_start_ns")
    return float("inf") if start is None else start


def _stop_order(key, hits):
    """A culprit's places, where it stopped first at the head. From its own dumps when it wrote one in each: one
    process issues in program order, so the communicator it has been idle in longest (its last operation there
    the oldest, one monotonic clock) is the one its next operation was for. Otherwise where the first wait on it
    began first, which is a race when it issued neither operation."""
    last = []
    for e, f in hits:
        d = e["_ranks"].get(_blamed_rank(f, key))
        last.append(None if d is None else _last_issue_ns(d))
    if None not in last:
        return [h for _, h in sorted(zip(last, hits), key=lambda x: (x[0], x[1][0]["comm_hash"]))]
    return sorted(hits, key=lambda h: _since(h[1]))


def _culprit(key, hits):
    """One root-cause process: identity, every place it is blamed, the verdict line and the next step."""
    hits = _stop_order(key, hits)
    e0, f0 = hits[0]
    rank0 = _blamed_rank(f0, key)
    ident = _identity(e0, rank0, f0)
    if key[0] == "global" and ident["global_rank"] is None:
        ident["global_rank"] = key[1]
    no_dump = rank0 not in e0["_ranks"]
    where = []
    for e, f in hits:
        for r, b in zip(f["ranks"], f["_blamed"]):
            if b == key:
                where.append({"comm_hash": e["comm_hash"], "comm_name": e["summary"]["comm_name"], "rank": r,
                              "kind": f["kind"], "func": f.get("func"), "seq": f.get("seq"),
                              "waiting": len(f.get("waiting", [])), "headline": f["headline"]})
    grank = f"global rank {ident['global_rank']}" if ident["global_rank"] is not None else "that rank"
    fmt = {"pid": ident["pid"] if ident["pid"] is not None else f"<pid of {grank}>",
           "host": ident["host"] or "its host", "grank": grank}
    places = "; ".join(f"in comm {w['comm_hash']}" + (f" ({w['comm_name']})" if w["comm_name"] else "")
                       + f" as rank {w['rank']}" + (f", {w['func']} seq {w['seq']}" if w["func"] else "")
                       for w in where[:4]) + (f"; and {len(where) - 4} more" if len(where) > 4 else "")
    who = _who(ident, no_dump)
    extra = {}
    if f0["kind"] == "link":
        a, b = f0["link"]["endpoints"]
        if b["rank"] == rank0:
            a, b = b, a
        fmt.update(nic=a["nic"] or "its NIC", peer_host=b["host"] or "the peer's host", peer_nic=b["nic"] or "its NIC")
        peer = {"host": b["host"], "pid": b["pid"], "global_rank": b["global_rank"]}
        who = f"{who}, NIC {a['nic'] or '?'} <-> {_who(peer)}, NIC {b['nic'] or '?'}"
        extra = {"nic": a["nic"], "peer": dict(peer, rank=b["rank"], nic=b["nic"])}
    step = NEXT_STEP[f0["kind"]].format(**fmt)
    cls = f" [class {f0['class']}]" if f0.get("class") else ""
    line = f"{KIND_WORD[f0['kind']]}{cls}: {who}: {f0['headline']} [{places}]. Next: {step}"
    return dict(ident, kind=f0["kind"], alert=ALERT_OF_CLASS.get(f0.get("class")), no_dump=no_dump, where=where,
                next_step=step, line=line,
                _finding=f0, **extra, **{"class": f0.get("class")})


def _victims(entries, culprit_keys):
    """{comm_hash: ranks that wait (directly or down a chain) without being a root cause themselves}."""
    out = {}
    for e in entries:
        rs = set()
        for f in _problems(e):
            rs.update(f.get("waiting", []))
            rs.update(r for r, b in zip(f["ranks"], f.get("_blamed", [])) if b not in culprit_keys)
        rs -= {r for r in e["culprits"]}
        if rs:
            out[e["comm_hash"]] = sorted(rs)
    return out


def _newest_written(comms):
    return max((x["_written_ns"] for ranks in comms.values() for d in ranks.values()
                for x in (d,) + tuple(d.get("_older") or ()) if x.get("_written_ns") is not None), default=None)


def analyze(comms, now_ns=None):
    """The report of one job's dumps ({comm_hash: {rank: summary}}); now_ns (realtime) dates the dumps' ages."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    newest_ns = _newest_written(comms)
    live_globals = {(d.get("identity") or {}).get("global_rank") for ranks in comms.values()
                    for d in ranks.values()} - {None}
    live_procs = {(d.get("host"), d["pid"]) for ranks in comms.values() for d in ranks.values() if "pid" in d}
    entries = [analyze_comm(c, ranks, live_globals, live_procs, now_ns, newest_ns)
               for c, ranks in sorted(comms.items())]
    roots = chains.resolve(entries, _problems)
    labels = {}
    culprits, links = [], set()
    for key, hits in roots.items():
        c = _culprit(key, hits)
        labels[key] = f"{_who(c, c['no_dump'])} in {c['where'][0]['comm_hash']}"
        if c["kind"] == "link":  # one culprit for the link, though both its ends are root processes
            ends = sorted([_who(c), _who(c["peer"])])
            labels[key] = f"the link {ends[0]} <-> {ends[1]} in {c['where'][0]['comm_hash']}"
            if id(c["_finding"]) in links:
                continue
            links.add(id(c["_finding"]))
        culprits.append(c)
    for e in entries:
        for f in _problems(e):
            f.setdefault("class", None)
            f["blamed"] = [dict(_identity(e, r, f), rank=r) for r in f["ranks"]]
        e["culprits"] = sorted({r for f in _problems(e) if f.get("root")
                                for r, b in zip(f["ranks"], f.get("_blamed", [])) if b in roots})
        for f in _problems(e):
            if not f.get("root") and f.get("_roots"):
                chain = "; ".join(sorted(labels.get(k, str(k)) for k in f["_roots"]))
                f["text"] += "; itself waiting elsewhere: the chain ends at " + chain
                f["headline"] += " (itself waiting: the chain ends at " + chain + ")"
        e["verdict"] = comm_verdict(e)
    victims = _victims(entries, set(roots))
    newest_age = round((now_ns - newest_ns) / 1e9, 3) if newest_ns is not None else None
    return {"entries": entries, "culprits": culprits, "victims": victims, "degraded_nics": nics.degraded(comms),
            "flapping_nics": nics.flapping(comms), "newest_dump_age_s": newest_age}


OLD_DUMPS_S = 60  # a hang read from dumps all older than this may be over: the report says how to tell


def old_dumps_note(result):
    """The note under a hang verdict whose newest dump is over OLD_DUMPS_S old, else None: leftover stall dumps
    of a job that went on read as a hang until a dump shows the progress (recovered.py)."""
    age = result.get("newest_dump_age_s")
    if problem_kind(result) != "hang" or age is None or age < OLD_DUMPS_S:
        return None
    return (f"the job's newest dump was written {recovered.secs(age)} ago: if the job still runs, this stall may be "
            f"over; SIGUSR2 to every rank makes each live one dump its present state, and a stall it went past is "
            f"then reported as recovered")


def comm_verdict(entry):
    s = entry["summary"]
    problems = _problems(entry)
    if entry["status"] == CANNOT_TELL:
        return (f"{_comm_label(entry)}: cannot tell, {len(s['ranks_found'])}/{s['nranks']} ranks: no KernelCh events "
                f"and no ncclscope connection, so every operation looked done once enqueued and a hang here would "
                f"look healthy (NCCLSCOPE_EVENT_MASK=0x46 sees it)")
    if not problems:
        busy = [f for f in entry["findings"] if f["kind"] == "in_flight"]
        back = _recovered(entry)
        return (f"{_comm_label(entry)}: healthy, {len(s['ranks_found'])}/{s['nranks']} ranks, {s['ops_per_rank']} "
                f"operations per rank, " + ("young operations in flight" if busy else "nothing in flight")
                + (f"; recovered from a stall on {rank_list(sorted({r for f in back for r in f['ranks']}))}"
                   if back else ""))
    roots = [f for f in problems if f.get("root")] or problems
    return f"{_comm_label(entry)}: {entry['status'].upper()}: " + "; ".join(f["headline"] for f in roots)


def _unlisted(result):
    """[(entry, finding, how many)] of the findings whose ranks without a dump are too many to blame one by one
    (progress.MAX_MISSING_LISTED): their culprits are the first few, these lines count the rest."""
    return [(e, f, f["missing_count"] - len(f["ranks"])) for e in result["entries"] for f in _problems(e)
            if f.get("missing_count", 0) > len(f["ranks"])]


def _unlisted_text(entry, finding, more):
    return (f"{more} more ranks without a dump in {_comm_label(entry)}, not listed one by one (all "
            f"{rank_list(finding['_missing'])})")


def _recovered(entry):
    return [f for f in entry["findings"] if f["kind"] == "recovered"]


def job_verdict(result):
    entries = result["entries"]
    bad = [e for e in entries if e["status"] not in ("healthy", CANNOT_TELL)]
    back = sum(1 for e in entries if _recovered(e))
    if not bad:
        nranks = sum(len(e["_ranks"]) for e in entries)
        if back:
            quiet = sum(1 for e in entries for f in e["findings"] if f["kind"] == "undumped")
            return (f"healthy: {len(entries)} communicator(s), {nranks} rank dumps; {back} communicator(s) stalled "
                    f"and recovered (their later dumps show progress past the stall), no rank stuck or late"
                    + (f"; in {quiet} of them ranks that never stalled wrote no dump" if quiet else
                       ", none missing"))
        blind = [e for e in entries if e["status"] == CANNOT_TELL]
        if blind:
            return (f"cannot tell: {len(blind)} of {len(entries)} communicator(s) could not show a hang (no KernelCh "
                    f"events and no ncclscope connection); {nranks} rank dumps, no rank missing, stuck or late")
        return f"healthy: {len(entries)} communicator(s), {nranks} rank dumps, no rank missing, stuck or late"
    stuck = [e for e in bad if any(f["kind"] == "stuck" for f in _problems(e))]
    parts = [f"link between rank {c['where'][0]['rank']} and rank {c['peer']['rank']} of comm "
             f"{c['where'][0]['comm_hash']} ({_who(c)}, NIC {c['nic'] or '?'} <-> {_who(c['peer'])}, NIC "
             f"{c['peer']['nic'] or '?'})" if c["kind"] == "link" else
             f"{KIND_WORD[c['kind']]} at rank {c['where'][0]['rank']} of comm {c['where'][0]['comm_hash']} "
             f"({_who(c, c['no_dump'])})" for c in result["culprits"]]
    parts += [f"{e['status']} in {_comm_label(e)} with no single rank to blame" for e in stuck]
    parts += [_unlisted_text(*u) for u in _unlisted(result)]
    return "PROBLEM: " + "; ".join(parts)


def _fmt_span(v):
    return str(v) if isinstance(v, int) else f"{v[0]}..{v[1]}"


def _seq_text(last_seq):
    by = {}
    for r, q in last_seq.items():
        by.setdefault(q, []).append(r)
    return "; ".join(f"{ranges(rs)}:{q}" for q, rs in sorted(by.items()))


def print_text(result, out=None):
    out = out or sys.stdout
    entries = result["entries"]
    print(job_verdict(result), file=out)
    note = old_dumps_note(result)
    if note:
        print(f"  note     {note}", file=out)
    for c in result["culprits"]:
        print(f"  culprit  {c['line']}", file=out)
    for u in _unlisted(result):
        print(f"  culprits {_unlisted_text(*u)}", file=out)
    for n in result.get("degraded_nics", []):
        print(f"  degraded {nics.describe(n)}", file=out)
    for n in result.get("flapping_nics", []):
        print(f"  flapping {nics.describe_flap(n)}", file=out)
    healthy = [e for e in entries if e["status"] == "healthy"]
    for e in entries:
        if e["status"] != "healthy" or len(healthy) <= MAX_HEALTHY_LINES:
            print(e["verdict"], file=out)
    if len(healthy) > MAX_HEALTHY_LINES:
        print(f"{len(healthy)} other communicators healthy", file=out)
    for e in entries:
        if e["status"] == "healthy" and len(healthy) > MAX_HEALTHY_LINES:
            continue
        s = e["summary"]
        hosts = s["hosts"]
        reasons = sorted({x for x in s["dump_reasons"] if x})
        print(f"\n== {_comm_label(e)}: {len(s['ranks_found'])}/{s['nranks']} ranks"
              + (f", missing {ranges(s['_missing'])}" if s["missing_count"] else "")
              + (f" on {', '.join(hosts[:4])}" + (f" and {len(hosts) - 4} more hosts" if len(hosts) > 4 else "")
                 if hosts else "")
              + (f"; dumps at {', '.join(reasons)}" if reasons else "")
              + (f"; stall watch fired on {rank_list(s['stalled'])}" if s["stalled"] else ""), file=out)
        print(f"  dumps     {_ages_text(s['dumps'])}", file=out)
        for f in e["findings"]:
            cls = f"[class {f['class']}] " if f["kind"] in PROBLEMS and f.get("class") else ""
            print(f"  {f['kind']:9s} {cls}{f['text']}", file=out)
        for st in (e["straggler"], e["p2p_straggler"]):
            if st and not st["is_straggler"]:
                lead = st["median_lead_over_others_ns"] / 1e6
                what = "collectives" if st["kind"] == "coll" else "point-to-point transfers"
                print(f"  arrivals  no straggler in {what}: last to arrive most often rank {st['rank']} "
                      f"({st['last_count']}/{st['ops']}), median {abs(lead):.2f} ms "
                      f"{'after' if lead >= 0 else 'before'} the next-latest rank "
                      f"({stragglers.METHOD_TEXT[st['method']]})", file=out)
        print(f"  {'function':16s} {'ops/rank':>9s} {'bytes/rank':>14s} {'busbw GB/s':>11s}  last seq per rank", file=out)
        for f in s["functions"]:
            bw = f"{f['busbw_gbps']:.2f}" if f["busbw_gbps"] else "-"
            print(f"  {f['kind'] + ' ' + f['func']:16s} {_fmt_span(f['ops_per_rank']):>9s} "
                  f"{_fmt_span(f['bytes_per_rank']):>14s} {bw:>11s}  {_seq_text(f['last_seq'])}", file=out)
        print(f"  dropped events: {s['dropped'] if s['dropped'] else 'none'}"
              + (f"; flight recorder overwritten on {rank_list(s['flight_recorder_overwritten'])}"
                 if s["flight_recorder_overwritten"] else ""), file=out)


def _public(v):
    """A JSON-ready copy without the internal '_' keys (ranks, blamed keys)."""
    if isinstance(v, dict):
        return {k: _public(x) for k, x in v.items() if not (isinstance(k, str) and k.startswith("_"))}
    if isinstance(v, (list, tuple)):
        return [_public(x) for x in v]
    return v


def problem_kind(result):
    """"hang" where any communicator stopped (hang, dead or missing rank, mismatch), else "straggler" where one
    is only slow, else None: the exit status tells them apart."""
    statuses = {e["status"] for e in result["entries"]}
    if statuses & set(HANG_STATUSES):
        return "hang"
    return "straggler" if "straggler" in statuses else None


def job_status(result):
    """"problem" where any communicator has one, else "cannot_tell" where any could not show a hang, else
    "healthy"."""
    statuses = {e["status"] for e in result["entries"]}
    return "healthy" if statuses <= {"healthy"} else CANNOT_TELL if statuses <= {"healthy", CANNOT_TELL} else "problem"


def to_json(result):
    return {"schema": REPORT_SCHEMA, "status": job_status(result), "problem": problem_kind(result),
            "verdict": job_verdict(result), "newest_dump_age_s": result.get("newest_dump_age_s"),
            "note": old_dumps_note(result),
            "culprits": _public(result["culprits"]), "victims": result["victims"],
            "degraded_nics": result.get("degraded_nics", []), "flapping_nics": result.get("flapping_nics", []),
            "communicators": _public(result["entries"])}

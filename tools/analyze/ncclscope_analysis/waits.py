"""What each rank's stuck operation waits on, from the dumps' `wait` field (docs/dump-format.md), and the root of
a hang where every rank issued the operation.

A dump's `wait` is null, or (absent from older dumps) describes the communicator's oldest in-flight operation
once it is past its stall threshold: class "host" (issued, its kernel not started on this rank), "kernel"
(launched, not finished, no network request of the communicator pending) or "peer" (launched, network requests
pending towards the peers listed, by global rank, host and NIC) or "launched" (launched, not finished, and the
net plugin does not carry the communicator, so where it waits is not known: no edge, not a root).

The "peer" entries are edges rank -> rank within a communicator (global ranks mapped through each dump's
identity.global_rank). Where every rank issued the operation and waits inside it, a waiting rank's root is what
its edges lead to, followed to the end of the chain (C waits on B, B waits on A):
- a rank whose own class is "kernel": its GPU kernel does not finish (kind "kernel", class kernel);
- a rank whose own class is "host": issued, never launched (kind "not_launched", class not_joined);
- a rank with nothing in flight in its dump (kind "unresponsive", class process: frozen or gone after its dump,
  or its dump is older than the others');
- otherwise, two ranks listing each other (A waits on B, B on A) among those reached: the link between them on
  the NICs their entries name (kind "link", class link).
- in a ring of waits where no two ranks list each other (each receives from the one before it), a connection of
  the ring that already failed: the link it runs over (kind "link"; a cross-host one first).
A chain that ends nowhere of these (such a ring with no failed connection, a peer not past its own threshold)
names nobody: the "stuck" verdict stays, with each rank's wait in its detail.

Where ranks of the communicator wrote no dump, the entries that name a global rank without any dump say which
process the others wait on and, with `failed`, that its connection failed (refine_missing()).

Classes of the verdicts (the live alert's): not_joined (behind, not_launched), process (missing, dead,
unresponsive), mismatch, kernel, link.
"""
from .progress import rank_list

CLASS_OF_KIND = {"behind": "not_joined", "not_launched": "not_joined", "missing": "process", "dead": "process",
                 "unresponsive": "process", "mismatch": "mismatch", "kernel": "kernel", "link": "link"}
MAX_PEERS_SHOWN = 3
MAX_HOPS_SHOWN = 4
MAX_ENDS = 64  # roots (ranks, links) followed per chain


def global_rank(d):
    return (d.get("identity") or {}).get("global_rank")


def seconds(ns):
    return f"{ns / 1e9:.1f} s" if ns >= 1e8 else f"{ns / 1e6:.1f} ms"


def op_text(w):
    """'AllReduce seq 41' / 'Send #3' for a wait's operation."""
    return f"{w['func']} seq {w['seq']}" if w.get("kind") != "p2p" else f"{w['func']} #{w['seq']}"


def peer_text(e):
    """'send to global rank 1 on node7 via eth0, 2 requests, 4.9 s, connection failed'."""
    who = f"global rank {e['peer_global_rank']}" if e.get("peer_global_rank") is not None else "an unknown rank"
    return (f"{e['direction']} {'to' if e['direction'] == 'send' else 'from'} {who}"
            + (f" on {e['peer_host']}" if e.get("peer_host") else "") + (f" via {e['nic']}" if e.get("nic") else "")
            + (f", {e['requests']} request{'s' if e['requests'] != 1 else ''}" if e.get("requests") is not None else "")
            + (f", {seconds(e['waiting_ns'])}" if e.get("waiting_ns") is not None else "")
            + (", connection failed" if e.get("failed") else ""))


def describe(w):
    """One rank's wait for its detail line."""
    head = (f"waits ({w['class']}) in {op_text(w)}, in flight {seconds(w['age_ns'])} past its "
            f"{seconds(w['threshold_ns'])} threshold")
    if w["class"] == "host":
        return head + ": issued, its kernel has not started"
    if w["class"] == "kernel":
        return head + ": its kernel has not finished and no network request is pending"
    if w["class"] == "launched":
        return head + ": launched, not finished; ncclscope's net plugin does not carry this communicator (now)"
    peers = w["peers"]
    more = f"; and {len(peers) - MAX_PEERS_SHOWN} more" if len(peers) > MAX_PEERS_SHOWN else ""
    return head + ": " + ("; ".join(peer_text(e) for e in peers[:MAX_PEERS_SHOWN]) + more if peers
                          else "network requests pending, no peer named")


def _who(d, r):
    """'rank 2 (global rank 5 on node7)'."""
    g = global_rank(d) if d is not None else None
    parts = ([f"global rank {g}"] if g is not None else []) + ([f"on {d['host']}"] if d and d.get("host") else [])
    return f"rank {r}" + (f" ({' '.join(parts)})" if parts else "")


class _Edges:
    """The waits of one communicator as rank -> [(peer rank, entry)], largest waiting_ns first."""

    def __init__(self, ranks):
        self.ranks = ranks
        self.wait = {r: d["wait"] for r, d in ranks.items() if d.get("wait")}
        g2r = {}
        for r, d in sorted(ranks.items()):
            g = global_rank(d)
            if g is not None:
                g2r.setdefault(g, r)
        self.out = {}
        for r, w in self.wait.items():
            if w["class"] != "peer":
                continue
            hops = [(self._rank_of(e, g2r), e) for e in sorted(w["peers"], key=lambda e: -(e.get("waiting_ns") or 0))]
            self.out[r] = [(p, e) for p, e in hops if p is not None and p != r]
        self.next = {r: [p for p, _ in hops] for r, hops in self.out.items()}

    def _rank_of(self, e, g2r):
        """The communicator rank a peer entry names: by its global rank (the net half's handshake), else by its rank
        in the communicator (a send/recv's peer, or a ProxyOp's with NCCL's own transports)."""
        if e.get("peer_global_rank") is not None:
            return g2r.get(e["peer_global_rank"])
        return e.get("peer_rank") if e.get("peer_rank") in self.ranks else None

    def terminal(self, r):
        """The kind of root rank r is when another rank waits on it, or None (it waits on others, or on
        nothing the dumps show)."""
        w = self.wait.get(r)
        if w is None:
            return "unresponsive" if not self.ranks[r]["in_flight"] else None
        return {"kernel": "kernel", "host": "not_launched"}.get(w["class"])

    def mutual(self, a, b):
        return b in self.next.get(a, ()) and a in self.next.get(b, ())

    def entry(self, a, b):
        return next((e for p, e in self.out.get(a, ()) if p == b), None)

    def resolve(self):
        """The ends every rank's chains reach, for all ranks in linear time (16,384 ranks wait at once): the
        graph's strongly connected components, sinks first (Tarjan, iterative), each with the terminal ranks
        and the mutual pairs (which lie inside one component) it reaches, at most MAX_ENDS of each."""
        nodes = sorted(set(self.next) | {q for qs in self.next.values() for q in qs})
        index, low, comp, stack, on = {}, {}, {}, [], set()
        self.terms, self.links = [], []  # per component
        counter = 0
        for root in nodes:
            if root in index:
                continue
            work = [(root, 0)]
            while work:
                v, i = work.pop()
                if i == 0:
                    index[v] = low[v] = counter
                    counter += 1
                    stack.append(v)
                    on.add(v)
                succ = self.next.get(v, ())
                if i < len(succ):
                    work.append((v, i + 1))
                    w = succ[i]
                    if w not in index:
                        work.append((w, 0))
                    elif w in on:
                        low[v] = min(low[v], index[w])
                    continue
                for w in succ:
                    if w in on and comp.get(w) is None:
                        low[v] = min(low[v], low[w])
                if low[v] == index[v]:
                    members = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        members.append(w)
                        if w == v:
                            break
                    c = len(self.terms)
                    for w in members:
                        comp[w] = c
                    self._close(c, members, comp)
        self.comp = comp

    def _close(self, c, members, comp):
        """The ends component c reaches; its successors are finished (Tarjan emits sinks first)."""
        inside = set(members)
        terms = {("rank", w) for w in members if len(members) == 1 and self.terminal(w)}
        links = {("link", a, b) for a in members for b in self.next.get(a, ()) if a < b and b in inside
                 and self.mutual(a, b)}
        for a in members:
            for b in self.next.get(a, ()):
                if comp.get(b) is not None and comp[b] != c:
                    if len(terms) < MAX_ENDS:
                        terms |= self.terms[comp[b]]
                    if len(links) < MAX_ENDS:
                        links |= self.links[comp[b]]
        if not terms and not links and len(members) > 1:
            links = self._failed_link(members)
        self.terms.append(terms)
        self.links.append(links)

    def _failed_link(self, members):
        """A ring of waits where no two ranks list each other (each receives from the one before it, the usual
        shape of a ring collective): no mutual pair marks the link, but a connection inside the ring that already
        failed does. A cross-host one first (a NIC going down also fails its host's connections through it), then
        the longest wait; as ("link", waiter, peer)."""
        inside = set(members)
        failed = [(a, b, e) for a in members for b, e in self.out.get(a, ()) if b in inside and e.get("failed")]
        if not failed:
            return set()
        host = lambda r: self.ranks[r].get("host")  # noqa: E731
        a, b, _ = max(failed, key=lambda f: (host(f[0]) != host(f[1]), f[2].get("waiting_ns") or 0, -f[0]))
        return {("link", a, b)}

    def ends(self, r):
        """What rank r's chains end at: the terminal ranks they reach, else the links, else []."""
        c = self.comp.get(r)
        if c is None:
            return set()
        terms = self.terms[c]
        if ("rank", r) in terms:
            terms = terms - {("rank", r)}
        return terms or self.links[c]


def _ends(edges):
    """{waiting rank: [ends]}, an end being ("rank", r) or ("link", a, b); [] when the chain ends nowhere."""
    edges.resolve()
    return {r: sorted(edges.ends(r)) for r in sorted(edges.out)}


def _hops(edges, waiting, end):
    """'rank 3 waits on rank 2, rank 2 waits on rank 1': the first waiting ranks' first step towards the end."""
    end_ranks = end[1:]
    steps = []
    for r in waiting[:MAX_HOPS_SHOWN]:
        nxt = edges.next.get(r, [])
        toward = [p for p in nxt if p in end_ranks] or [p for p in nxt if end in edges.ends(p)]
        if toward:
            steps.append(f"rank {r} waits on rank {toward[0]}")
    more = f", and {len(waiting) - MAX_HOPS_SHOWN} more" if len(waiting) > MAX_HOPS_SHOWN else ""
    return ", ".join(steps) + more


def _op_fields(w):
    return {"func": w["func"], "seq": w["seq"], "arrival": w.get("arrival")}


def _endpoint(edges, a, b):
    d, e = edges.ranks[a], edges.entry(a, b) or {}
    return {"rank": a, "global_rank": global_rank(d), "host": d.get("host"), "pid": d.get("pid"),
            "nic": e.get("nic"), "direction": e.get("direction"), "requests": e.get("requests"),
            "waiting_ns": e.get("waiting_ns"), "failed": bool(e.get("failed"))}


def _link(edges, a, b, waiting):
    ea, eb = _endpoint(edges, a, b), _endpoint(edges, b, a)
    w = edges.wait[a]
    op = op_text(w)
    side = lambda x: f"{_who(edges.ranks[x['rank']], x['rank'])}, NIC {x['nic'] or '?'}"  # noqa: E731
    hops = _hops(edges, waiting, ("link", a, b))
    behind = f"; {rank_list(waiting)} wait on them down the chain ({hops})" if waiting else ""
    failed = [x for x in (ea, eb) if x["failed"]]
    mutual = edges.mutual(a, b)
    detail = "; ".join(f"rank {x['rank']}: " + peer_text(edges.entry(x["rank"], y) or {"direction": "?"})
                       for x, y in (((ea, b), (eb, a)) if mutual else ((ea, b),)))
    return dict(_op_fields(w), **{
        "kind": "link", "ranks": [a, b], "waiting": waiting,
        "link": {"endpoints": [ea, eb]},
        "headline": f"the link between {side(ea)} and {side(eb)}: both issued {op} and "
                    + ("each waits on the other's network requests" if mutual else
                       f"rank {a}'s connection with rank {b} failed in a ring of waits") + behind,
        "text": f"{op}: " + (f"rank {a} and rank {b} wait on each other over the network" if mutual else
                             f"rank {a} waits on rank {b} over a connection that failed, in a ring of waits")
                + f" ({detail}); neither is behind, dead or stuck in its kernel"
                + (", and the connection already failed" if failed and mutual else "") + behind})


def _rank_root(edges, t, kind, waiting):
    d = edges.ranks[t]
    w = edges.wait.get(t)
    on_it = [(r, e) for r in waiting for p, e in edges.out.get(r, ()) if p == t]
    failed = any(e.get("failed") for _, e in on_it)
    direct = sorted({r for r, _ in on_it})
    chained = sorted(set(waiting) - set(direct))
    via = (f"{rank_list(direct)} {'waits' if len(direct) == 1 else 'wait'} on it over the network"
           + (f", {rank_list(chained)} down the chain ({_hops(edges, chained, ('rank', t))})" if chained else ""))
    who = _who(d, t)
    if kind == "kernel":
        head = f"{who} is stuck in its own kernel of {op_text(w)} (launched, not finished, no network request pending)"
        more = f"in flight {seconds(w['age_ns'])} past its {seconds(w['threshold_ns'])} threshold"
    elif kind == "not_launched":
        head = f"{who} issued {op_text(w)} but its kernel has not started (not launched)"
        more = (f"in flight {seconds(w['age_ns'])}; its stream may be busy with an earlier kernel (its other "
                f"communicators) or its host thread stopped before the launch")
    else:
        w = edges.wait[direct[0]]  # t has no wait of its own: the operation is the waiting ranks'
        head = (f"{who} has nothing in flight in its dump while the others wait on its network requests in "
                f"{op_text(w)}" + (" (the connection to it failed)" if failed else ""))
        more = ("frozen or gone after it dumped, or its dump is older than the others' (SIGUSR2 makes every live "
                "rank dump)")
    return dict(_op_fields(w), **{
        "kind": kind, "ranks": [t], "waiting": waiting,
        "headline": f"{head}, while {via}",
        "text": f"{head}; {more}; {via}: " + "; ".join(f"rank {r}: {peer_text(e)}" for r, e in on_it[:MAX_PEERS_SHOWN])
                + (f"; and {len(on_it) - MAX_PEERS_SHOWN} more" if len(on_it) > MAX_PEERS_SHOWN else "")})


def resolve(ranks):
    """Problem findings for a communicator whose ranks all issued their waiting operation, from their `wait`
    fields; [] when no dump has one or no chain ends at a rank or a link."""
    edges = _Edges(ranks)
    if not edges.out:
        return []
    by_end = {}
    for r, ends in _ends(edges).items():
        for end in ends:
            by_end.setdefault(end, set()).add(r)
    findings = []
    for end, rs in sorted(by_end.items()):
        if end[0] == "link":
            _, a, b = end
            findings.append(_link(edges, a, b, sorted(rs - {a, b})))
        else:
            t = end[1]
            findings.append(_rank_root(edges, t, edges.terminal(t), sorted(rs - {t})))
    return findings


def stuck_class(ranks):
    """The class of a stuck verdict that names nobody: "kernel" when every rank with a wait waits in its own
    kernel (no network request pending anywhere: an intra-node transfer or a GPU), otherwise None."""
    classes = {d["wait"]["class"] for d in ranks.values() if d.get("wait")}
    return "kernel" if classes == {"kernel"} else None


def stuck_detail(ranks):
    """'; waits: ranks 0,1: peer; rank 2: kernel' for the stuck verdict's text; '' without waits."""
    by = {}
    for r, d in sorted(ranks.items()):
        if d.get("wait"):
            by.setdefault(d["wait"]["class"], []).append(r)
    if not by:
        return ""
    text = "; ".join(f"{rank_list(rs)}: {c}" for c, rs in sorted(by.items()))
    if set(by) == {"kernel"}:
        return (f"; wait classes: {text} (no network request pending on any rank: an intra-node transfer "
                f"(NVLink, PCIe, shared memory) or a GPU is stuck, no single rank can be told)")
    return f"; wait classes: {text} (no chain of waits ends at one rank or at two ranks waiting on each other)"


def refine_missing(finding, ranks, missing, live_globals):
    """Adds to a missing/dead finding which absent process the others' network requests wait on: entries naming
    a global rank without any dump. A failed connection to it makes a "missing" rank "dead". Sets '_wait_ident'
    (global rank, host) when one rank is missing and the entries name one absent global rank."""
    absent = {}
    for r, d in sorted(ranks.items()):
        w = d.get("wait")
        for e in (w or {}).get("peers", []) if w and w["class"] == "peer" else []:
            g = e["peer_global_rank"]
            if g is not None and g not in live_globals:
                absent.setdefault(g, []).append((r, e))
    if not absent:
        return
    parts, failed = [], False
    for g, items in sorted(absent.items()):
        hosts = sorted({e["peer_host"] for _, e in items if e.get("peer_host")})
        nics = sorted({e["nic"] for _, e in items if e.get("nic")})
        bad = any(e.get("failed") for _, e in items)
        failed |= bad
        parts.append(f"global rank {g}" + (f" on {', '.join(hosts)}" if hosts else "")
                     + f" ({rank_list(sorted({r for r, _ in items}))}"
                     + (f" via {', '.join(nics)}" if nics else "") + (", connection failed" if bad else "") + ")")
    waiters = sorted({r for items in absent.values() for r, _ in items})
    what = f"{rank_list(waiters)} {'waits' if len(waiters) == 1 else 'wait'} on {'; '.join(parts[:4])} over the network"
    if failed and finding["kind"] == "missing":
        reporters = sorted({r for items in absent.values() for r, e in items if e.get("failed")})
        them = "it" if len(missing) == 1 else "them"
        finding["kind"] = "dead"
        finding["headline"] = (f"{rank_list(missing)} died (no dump; the connection of {rank_list(reporters)} to "
                               f"{them} failed); {what}")
        finding["text"] = (f"{rank_list(missing)} wrote no dump and the connection of {rank_list(reporters)} to {them} "
                           f"failed (their wait entries): killed or crashed, not hung; {what}")
    else:
        finding["headline"] += f"; {what}"
        finding["text"] += f"; {what}"
    if len(missing) == 1 and len(absent) == 1:
        g, items = next(iter(absent.items()))
        hosts = sorted({e["peer_host"] for _, e in items if e.get("peer_host")})
        finding["_wait_ident"] = {"global_rank": g, "host": hosts[0] if len(hosts) == 1 else None, "pid": None}

#!/usr/bin/env python3
"""docs/metrics.md against the code. For each detail level (NCCLSCOPE_METRICS_LEVEL basic, detailed, full) a 2-rank
ncclscope-sim job runs every operation type (profiler v7 with user tags, symmetric collectives and NCCL IB QP
events, so that as many families as the emulation can make show up); each rank's endpoint (NCCLSCOPE_PROM_PORT=0,
found through its NCCLSCOPE_SD_DIR target) is scraped, and:
  - every family served at a level is in one of the page's family tables, at that level or a lower one, with the
    type the endpoint gives it (a family the page puts at a richer level, or not at all, fails);
  - every histogram's `le` bounds are those of the page's "Histogram buckets" row for that family and level;
  - every family the page lists at or below a level that the job did not serve there (RDMA ports, v7 kernel
    phases, a stall) is named in src/: a string literal, or a prefix literal and a suffix literal of one file;
  - every family name literal in src/exporters/prometheus/ is on the page.
So a family renamed in the code fails the test whether or not the emulated job can produce it.
Usage: metrics_doc_test.py SIM_BINARY PLUGIN_DIR SOURCE_DIR"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import check, summary  # noqa: E402

LEVELS = ["basic", "detailed", "full"]
TYPES = {"counter", "gauge", "histogram"}
RANKS = 2
# Label names and other literals of src/exporters/prometheus/ that look like a family but are not one.
NOT_FAMILIES = {"ncclscope_job"}
family_labels = {}  # family: the label names its table row names (identity labels are on the file_sd target)


def fatal(what):
    print(f"FAIL {what}")
    sys.exit(1)


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(markdown):
    """(section heading, header cells, rows of cells) for every table of the page."""
    heading, out, lines = "", [], markdown.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("#"):
            heading = lines[i].lstrip("#").strip()
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-| :]+\|$", lines[i + 1].strip()):
            header, rows, i = cells(lines[i]), [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            out.append((heading, header, rows))
            continue
        i += 1
    return out


def level_of(text, where):
    found = [lv for lv in LEVELS if re.search(rf"\b{lv}\b", text)]
    if len(found) != 1:
        fatal(f"{where}: cannot tell the level from {text!r} (one of {LEVELS})")
    return found[0]


def parse_doc(path):
    """{family: (type, level)} from the family tables; {(family, level): [bounds in s]} from the bucket table."""
    families, buckets = {}, {}
    for heading, header, rows in tables(open(path, encoding="utf-8").read()):
        head = [h.lower() for h in header]
        if head[0] == "family" and "type" in head:
            for row in rows:
                where = f"docs/metrics.md, table under '{heading}', row {row[0]!r}"
                names = re.findall(r"`([^`]*)`", row[0])
                bad = [n for n in names if not re.fullmatch(r"ncclscope_[a-z0-9_]*[a-z0-9]", n)]
                if not names or bad:
                    fatal(f"{where}: the family cell must name whole families in backticks (no shorthand): {bad}")
                types = [t.strip() for t in row[head.index("type")].split(",")]
                if len(types) == 1:
                    types *= len(names)
                if len(types) != len(names) or not set(types) <= TYPES:
                    fatal(f"{where}: types {types} do not match the names {names}")
                level = level_of(row[head.index("level")] if "level" in head else heading, where)
                label_col = [j for j, h in enumerate(head) if h.startswith("labels")]
                labels = set(re.findall(r"`([a-z_]+)`", row[label_col[0]])) if label_col else set()
                for name, typ in zip(names, types):
                    if name in families:
                        fatal(f"{where}: {name} is listed twice")
                    families[name] = (typ, level)
                    family_labels[name] = labels
        elif head[0] == "histogram" and "bucket upper bounds" in head:
            for row in rows:
                where = f"docs/metrics.md, bucket row {row[0]!r}"
                name = re.findall(r"`([^`]*)`", row[0])
                spec = re.fullmatch(r"2\^k ns, k = (\d+)\.\.(\d+)(?: step (\d+))?",
                                    row[head.index("bucket upper bounds")])
                if len(name) != 1 or not spec:
                    fatal(f"{where}: expected one family and '2^k ns, k = A..B[ step S]'")
                lo, hi, step = int(spec[1]), int(spec[2]), int(spec[3] or 1)
                buckets[(name[0], level_of(row[head.index("level")], where))] = \
                    [2.0 ** k / 1e9 for k in range(lo, hi + 1, step)]
    if not families or not buckets:
        fatal("docs/metrics.md: no family tables or no 'Histogram buckets' table found")
    return families, buckets


def source_literals(src):
    """{file: set of string literals} over src/ (C++ sources and headers)."""
    out = {}
    for f in glob.glob(os.path.join(src, "**", "*.[ch]*"), recursive=True):
        out[f] = set(re.findall(r'"((?:[^"\\\n]|\\.)*)"', open(f, encoding="utf-8", errors="replace").read()))
    return out


def in_source(name, literals):
    for lits in literals.values():
        if name in lits or any(name.startswith(p) and name[len(p):] in lits for p in lits if p and p != name):
            return True
    return False


def parse_exposition(text, labels):
    """{family: type}, {histogram: set of bound tuples} from Prometheus text format; adds each family's label names
    (but `le`) to `labels`."""
    types, bounds = {}, {}
    for m in re.finditer(r"^# TYPE (\S+) (\S+)$", text, re.M):
        types[m[1]] = m[2]
    for m in re.finditer(r'^([a-z_:][a-z0-9_:]*)\{(.*)\} \S+$', text, re.M):
        name = m[1]
        if name not in types:
            name = re.sub(r"_(bucket|sum|count)$", "", name)
        labels.setdefault(name, set()).update(set(re.findall(r'([a-z_][a-z0-9_]*)="', m[2])) - {"le"})
    per_series = {}
    for m in re.finditer(r'^(\S+)_bucket\{(.*)\} \S+$', text, re.M):
        labels = re.sub(r',?le="[^"]*"', "", m[2])
        le = re.search(r'le="([^"]*)"', m[2])[1]
        if le != "+Inf":
            per_series.setdefault((m[1], labels), []).append(float(le))
    for (fam, _), les in per_series.items():
        bounds.setdefault(fam, set()).add(tuple(les))
    return types, bounds


def scrape_level(sim, plugin_dir, tmp, level):
    """The union of both ranks' families and histogram bounds, scraped while the job at `level` runs and hangs."""
    out = os.path.join(tmp, level)
    os.makedirs(os.path.join(out, "sd"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NCCLSCOPE_")}
    # The event mask: collectives, point-to-point, proxy ops, KernelCh, NCCL IB's QP events (--ib-events) and v7
    # kernel phases. The 2 s stall timeout lets the hang show within the scrape loop.
    env.update({"LD_LIBRARY_PATH": plugin_dir, "NCCLSCOPE_TRANSPORT": "tcp", "NCCLSCOPE_SOCKET_IFNAME": "=lo",
                "NCCLSCOPE_PROM_PORT": "0", "NCCLSCOPE_PROM_BIND": "127.0.0.1", "NCCLSCOPE_METRICS_LEVEL": level,
                "NCCLSCOPE_SD_DIR": os.path.join(out, "sd"), "NCCLSCOPE_DUMP_ON_FINALIZE": "0",
                "NCCLSCOPE_EVENT_MASK": "0x80ce", "NCCLSCOPE_STALL_TIMEOUT_S": "2"})
    log_path = os.path.join(out, "sim.log")
    # Every operation type (5 x 3 iterations, op-major), then rank 1 stops issuing before op 13, after one send and
    # receive: rank 0 stalls in the next (its wait series), rank 1 idles (its idle series); both stay up to be scraped.
    args = [sim, "--ranks", str(RANKS), "--ops", "all", "--sizes", "1K:1K", "--iters", "3", "--warmup", "0",
            "--abi", "2.31", "--tags", "2", "--symmetric", "--ib-events", "1:2",
            "--hang", "1@13", "--expect-hang", "--timeout", "90"]
    types, bounds, labels, funcs = {}, {}, {}, set()
    wanted = {"ncclscope_comm_wait_seconds", "ncclscope_comm_idle_last_seq"}
    with open(log_path, "wb") as log:
        # Its own session: one kill ends the launcher and its ranks.
        p = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            targets, deadline = [], time.time() + 60
            while time.time() < deadline and p.poll() is None and len(targets) < RANKS:
                time.sleep(0.5)
                targets = []
                for f in glob.glob(os.path.join(out, "sd", "*.json")):
                    try:
                        targets += [t for group in json.load(open(f)) for t in group["targets"]]
                    except (ValueError, KeyError):
                        targets = []  # being written
                        break
            tail = open(log_path, "rb").read()[-2000:].decode(errors="replace")
            if not check(len(targets) == RANKS, f"{level}: {RANKS} file_sd targets (got {targets}; job running: "
                                                f"{p.poll() is None}); log tail:\n{tail}"):
                return None
            # Scrape until every operation type ran and the hang shows (or 45 s), keeping every family seen.
            deadline = time.time() + 45
            while True:
                for target in targets:
                    with urllib.request.urlopen(f"http://{target}/metrics", timeout=10) as r:
                        body = r.read().decode()
                    funcs |= set(re.findall(r'^ncclscope_operation_duration_seconds_count\{[^}]*func="(\w+)"', body,
                                            re.M))
                    t, b = parse_exposition(body, labels)
                    types.update(t)
                    for fam, s in b.items():
                        bounds.setdefault(fam, set()).update(s)
                if (len(funcs) >= 6 and wanted <= set(types)) or time.time() > deadline:
                    break
                time.sleep(1)
            check(len(funcs) >= 6, f"{level}: every operation type ran ({sorted(funcs)})")
            check(wanted <= set(types), f"{level}: the hang shows as {sorted(wanted)}")
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=30)
    return types, bounds, labels


def main():
    if len(sys.argv) != 4:
        fatal("usage: metrics_doc_test.py SIM_BINARY PLUGIN_DIR SOURCE_DIR")
    sim, plugin_dir, source = sys.argv[1:]
    if not os.access(sim, os.X_OK):
        fatal(f"{sim}: no such program (build ncclscope-sim first)")
    if not os.path.isfile(os.path.join(plugin_dir, "libnccl-net-ncclscope.so")):
        fatal(f"{plugin_dir}: no libnccl-net-ncclscope.so there (build ncclscope_plugin first)")
    families, buckets = parse_doc(os.path.join(source, "docs", "metrics.md"))
    literals = source_literals(os.path.join(source, "src"))
    print(f"docs/metrics.md lists {len(families)} families and {len(buckets)} histogram bucket rows")

    for (fam, level) in buckets:
        check(families.get(fam, ("",))[0] == "histogram", f"bucket row {fam} ({level}) is a histogram in the tables")
    prom_literals = set()
    for f, lits in literals.items():
        if os.sep + os.path.join("exporters", "prometheus") + os.sep in f:
            prom_literals |= {x for x in lits if re.fullmatch(r"ncclscope_[a-z0-9_]*[a-z0-9]", x)}
    missing = sorted(prom_literals - NOT_FAMILIES - set(families))
    check(not missing, f"every family literal of src/exporters/prometheus/ is on the page (missing: {missing})")

    held_to_source, served = set(), set()
    with tempfile.TemporaryDirectory(prefix="ncclscope-metrics-doc-") as tmp:
        for i, level in enumerate(LEVELS):
            started = time.time()
            scraped = scrape_level(sim, plugin_dir, tmp, level)
            if scraped is None:
                continue
            types, bounds, labels = scraped
            served |= set(types)
            print(f"--- {level}: {len(types)} families served ({time.time() - started:.1f} s)")
            for fam, typ in sorted(types.items()):
                doc = families.get(fam)
                if not check(doc is not None, f"{level}: {fam} ({typ}) served is on the page"):
                    continue
                check(doc[0] == typ, f"{level}: {fam} is a {typ}, the page says {doc[0]}")
                undocumented = sorted(labels.get(fam, set()) - family_labels[fam])
                check(not undocumented, f"{level}: {fam}'s labels are on the page (not: {undocumented})")
                check(LEVELS.index(doc[1]) <= i, f"{level}: {fam} served at {level}, the page says from {doc[1]}")
            for fam, seen in sorted(bounds.items()):
                rows = [lv for (f, lv) in buckets if f == fam and LEVELS.index(lv) <= i]
                if not check(rows, f"{level}: {fam} has a 'Histogram buckets' row at or below {level}"):
                    continue
                want = buckets[(fam, max(rows, key=LEVELS.index))]
                ok = all(len(s) == len(want) and all(abs(a - b) <= 1e-9 * b for a, b in zip(s, want)) for s in seen)
                check(ok, f"{level}: {fam} buckets {sorted(seen)[0]} are the page's {want}")
            for fam, (typ, lv) in sorted(families.items()):
                if LEVELS.index(lv) <= i and fam not in types:
                    held_to_source.add(fam)
    # Listed at or below a level the job did not serve it at: the name must at least be the code's.
    for fam in sorted(held_to_source):
        check(in_source(fam, literals), f"{fam} (not served at every level the page lists it) is named in src/")
    print(f"{len(served)} families checked against the endpoint, {len(held_to_source)} also against src/: "
          f"{', '.join(sorted(held_to_source))}")
    sys.exit(summary(passed="PASS: docs/metrics.md matches what the code serves"))


if __name__ == "__main__":
    main()

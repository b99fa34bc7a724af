"""Finding, reading and checking dump files; grouping them by communicator.

Two formats are read (docs/dump-format.md):
- v2, `ncclscope-comm-*.json.gz`: two gzip members, a one-line summary then the flight recorder. Only the first
  member is parsed for a verdict; the recorder is parsed on demand (flight_recorder()), for a trace. Both are
  checked for every verdict all the same (read_summary()): each member whole, its CRC and length trailer
  intact, the recorder present and nothing after it. A dump cut short or damaged after its summary is a dump
  of a rank that died or a disk that failed mid-write: a verdict that took it for whole could call the job
  healthy, so it is bad input like any other.
- v1, `ncclscope-comm-*.json`: one uncompressed document with the recorder inline; normalised on load to the
  v2 summary's shape (normalize()), so the analysis sees one shape.

Summaries are parsed in worker processes when there are many files (load_all(..., jobs)); each worker returns
a compacted summary (compact()), so memory grows with ranks by a few KB each.

Anything wrong with an input file raises BadInput with a message that starts with the file's path, so the
command line can exit 2 and name it: one bad dump fails the whole run, since a verdict drawn without it could
blame the wrong rank. Only regular files are read: a FIFO or device named like a dump in a searched directory
is skipped with a warning (named on the command line, it is bad input), and never opened in a way that blocks.
"""
import contextlib
import fnmatch
import json
import os
import stat
import sys
import zlib
from array import array

from .schema import SchemaError, check, check_flight_recorder

DUMP_GLOBS = ("ncclscope-comm-*.json", "ncclscope-comm-*.json.gz")
DUMP_GLOB = DUMP_GLOBS[0]
MAX_DUMP_BYTES = 256 << 20   # a v1 dump of a 2048-entry flight recorder is about 2 MB
MAX_MEMBER_BYTES = 256 << 20  # one inflated gzip member
OUT_PIECE_BYTES = 64 << 10    # inflated text per zlib call
RECENT = 64                   # completed operations a v1 dump contributes to `recent`, as v2 writers default to
PARALLEL_FROM = 64            # files; below this, parsing in this process is faster than starting workers
GZIP_MAGIC = b"\x1f\x8b"
SUMMARY_MEMBER = "the summary (gzip member 1)"
RECORDER_MEMBER = "the flight recorder (gzip member 2)"


class BadInput(Exception):
    pass


def _warn(msg):
    print(f"ncclscope-analyze: warning: {msg}", file=sys.stderr)


def _cannot_read(path, e):
    """'PATH: cannot read (Input/output error)': the one wording of a read the OS refused (EIO, EACCES, ...)."""
    return f"{path}: cannot read ({e.strerror or e})"


@contextlib.contextmanager
def _reading(path):
    """An OSError while reading `path` (EIO from a failing disk or a file system gone away, a file swapped for a
    directory) is bad input naming the file, exit 2, like every other dump that cannot be read: it is the
    file, not the analyzer, that failed."""
    try:
        yield
    except OSError as e:
        raise BadInput(_cannot_read(path, e)) from None


def _is_dump_name(name):
    return any(fnmatch.fnmatch(name, g) for g in DUMP_GLOBS)


def _walk(top, warn):
    """Every file named like a dump under top (symbolic links to directories are not followed). The top
    directory must be readable; below it, an unreadable directory is skipped with a warning, and the
    writers' private work folders (.ncclscope-work-<uid>, mode 0700, temporary files only) are not entered."""
    def fail(e):
        if os.path.abspath(e.filename or "") == os.path.abspath(top):
            raise BadInput(_cannot_read(e.filename, e))
        warn(f"{_cannot_read(e.filename, e)}, skipped")
    found = []
    for d, dirs, names in os.walk(top, onerror=fail):
        dirs[:] = [x for x in dirs if not x.startswith(".ncclscope-work-")]
        found += [os.path.join(d, n) for n in names if _is_dump_name(n)]
    return sorted(found)


def _is_regular(path):
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError as e:
        raise BadInput(_cannot_read(path, e))


def _named_file(path):
    """A file named on the command line: a regular file, else BadInput saying why (absent, a path component that
    is a file, a FIFO, ...)."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file or directory") from None
    except OSError as e:
        raise BadInput(_cannot_read(path, e)) from None
    if not _is_regular(path):
        raise BadInput(f"{path}: not a regular file")
    return path


def dump_files(paths, warn=_warn):
    """Every dump under the given directories (recursively) plus the files named; BadInput if none."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            for f in _walk(p, warn):
                try:
                    regular = stat.S_ISREG(os.stat(f).st_mode)
                except OSError as e:
                    warn(f"{_cannot_read(f, e)}, skipped")
                    continue
                if regular:
                    files.append(f)
                else:
                    warn(f"{f}: not a regular file, skipped")
        else:
            files.append(_named_file(p))
    if not files:
        raise BadInput(f"no {' or '.join(DUMP_GLOBS)} dump under {', '.join(paths)}")
    return files


def _open(path):
    """A regular file opened O_NONBLOCK, so that a file swapped for a FIFO since the stat cannot block."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise BadInput(_cannot_read(path, e))
    f = os.fdopen(fd, "rb")
    st = os.fstat(f.fileno())
    if not stat.S_ISREG(st.st_mode):
        f.close()
        raise BadInput(f"{path}: not a regular file")
    if st.st_size > MAX_DUMP_BYTES:
        f.close()
        raise BadInput(f"{path}: {st.st_size} bytes, larger than any dump ({MAX_DUMP_BYTES})")
    return f


def _read(path):
    """The bytes of a regular file."""
    try:
        with _open(path) as f:
            return f.read(MAX_DUMP_BYTES + 1)
    except OSError as e:
        raise BadInput(_cannot_read(path, e))


def _inflate_member(path, f, member, pending=b"", keep=True):
    """Inflates one gzip member (`member` names it in errors) from `pending` then the file; returns (text,
    bytes after the member). zlib reaches `eof` only past the member's trailer with its CRC-32 and length
    checked, so a member cut short or damaged anywhere is BadInput. keep=False checks the member without
    holding its text (returns b"")."""
    z = zlib.decompressobj(31)
    out, size, chunk, full = [], 0, pending, False
    try:
        while not z.eof:
            if not chunk and not full:
                chunk = f.read(1 << 16)
                if not chunk:
                    break
            # At most 64 KB of text a call, so that pieces stay below malloc's mmap threshold: inflated in
            # pieces of up to 1 MB, a recorder member cost more in page faults than in inflating.
            limit = min(OUT_PIECE_BYTES, MAX_MEMBER_BYTES + 1 - size)
            piece = z.decompress(chunk, limit)
            chunk = z.unconsumed_tail
            full = len(piece) == limit  # zlib may hold more output even with no input left
            if keep:
                out.append(piece)
            size += len(piece)
            if size > MAX_MEMBER_BYTES:
                raise BadInput(f"{path}: {member} inflates to more than {MAX_MEMBER_BYTES} bytes")
    except zlib.error as e:
        raise BadInput(f"{path}: {member} is not readable gzip ({e})")
    except OSError as e:
        raise BadInput(_cannot_read(path, e))
    if not z.eof:
        raise BadInput(f"{path}: {member} ends early (truncated file?)")
    return b"".join(out), z.unused_data


def _recorder_member(path, f, after_summary, keep=True):
    """Member 2 of a v2 dump, read from `after_summary` (what followed member 1) then the file: present, whole
    and the last thing in the file (the writer writes exactly two members; more is not a dump of ours)."""
    first = after_summary or f.read(1 << 16)
    if not first:
        raise BadInput(f"{path}: no flight recorder (gzip member 2) after the summary (truncated file?)")
    data, after = _inflate_member(path, f, RECORDER_MEMBER, first, keep)
    extra = len(after) + max(0, os.fstat(f.fileno()).st_size - f.tell())  # read past the member + still unread
    if extra:
        raise BadInput(f"{path}: {extra} bytes after {RECORDER_MEMBER} (a dump has two gzip members, nothing more)")
    return data


def _json(path, data):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not JSON (not UTF-8: byte 0x{data[e.start]:02x} at offset {e.start})")
    try:
        return json.loads(text)
    except RecursionError:
        raise BadInput(f"{path}: not JSON that can be read (nested too deeply)")
    except ValueError as e:  # JSONDecodeError; also an integer of more than 4300 digits
        raise BadInput(f"{path}: not JSON ({str(e)[:200]})")


def parse(path, data):
    """A v1 dump's bytes (or a v2 summary member's) as a checked dict (BadInput naming file and field)."""
    d = _json(path, data)
    try:
        check(d)
    except SchemaError as e:
        raise BadInput(f"{path}: {e}")
    return d


def _p2p_from_records(records):
    last = {}
    for r in records:
        if r.get("kind") == "p2p" and r.get("func") in ("Send", "Recv") and "peer" in r:
            key = (r["peer"], r["func"])
            last[key] = max(last.get(key, 0), r["seq"])
    return [{"peer": p, "func": f, "last_seq": s} for (p, f), s in sorted(last.items())]


def _recent_from_records(records):
    cols = {k: [] for k in ("arrival", "kind", "func", "seq", "peer", "bytes", "start_ns", "kernel_start_host_ns",
                            "duration_ns", "timing")}
    for r in records[-RECENT:]:
        cols["arrival"].append(r.get("arrival", 0))
        cols["kind"].append(r["kind"])
        cols["func"].append(r["func"])
        cols["seq"].append(r["seq"])
        cols["peer"].append(r.get("peer", r.get("root", -1)))
        cols["bytes"].append(r.get("bytes", 0))
        cols["start_ns"].append(r.get("start_ns", 0))
        cols["kernel_start_host_ns"].append(r.get("kernel_start_host_ns", 0))
        cols["duration_ns"].append(r.get("duration_ns", 0))
        cols["timing"].append(r.get("timing_source", "cpu"))
    return cols


def normalize(d):
    """A checked v1 dump in the v2 summary's shape. p2p progress comes from the recorder there, so it is exact
    only while the recorder has not overwritten entries (`_p2p_exact`)."""
    if d.get("part") == "summary":
        d.setdefault("_p2p_exact", True)
        return d
    fr = d["flight_recorder"]
    records = fr["completed"] + fr["in_flight"]
    s = {k: v for k, v in d.items() if k != "flight_recorder"}
    s.setdefault("identity", {})
    s.setdefault("net_errors", [])
    s.update(part="summary", in_flight=fr["in_flight"],
             p2p=_p2p_from_records(records), recent=_recent_from_records(fr["completed"]),
             flight_recorder={"depth": fr.get("depth", 0), "overwritten": fr.get("overwritten", 0),
                              "completed": len(fr["completed"])},
             _p2p_exact=not fr.get("overwritten", 0))
    return s


_NUMERIC = ("arrival", "seq", "peer", "bytes", "start_ns", "kernel_start_host_ns", "duration_ns")


def compact(s):
    """Drops what the analysis never reads and packs the `recent` columns into arrays: a few KB per rank."""
    rec = s.get("recent") or {}
    packed = {}
    for k in _NUMERIC:
        try:
            packed[k] = array("q", rec.get(k, []))
        except OverflowError:  # a value past int64 (the schema allows uint64): keep the plain list
            packed[k] = list(rec.get(k, []))
    for k in ("kind", "func", "timing"):
        packed[k] = [sys.intern(v) for v in rec.get(k, [])]
    s["recent"] = packed
    bus = {}
    for a in s.pop("aggregates", None) or []:
        f = bus.setdefault((a["kind"], a["func"]), [0.0, 0])
        if a.get("latency_count") and a.get("count"):
            # bus_bytes counts every operation of the cell; only the timed ones have a duration.
            f[0] += a["bus_bytes"] * a["latency_count"] / a["count"]
            f[1] += a["latency_sum_ns"]
    s["_bus"] = bus
    for k in ("events", "tags", "tags_other"):
        s.pop(k, None)
    return s


def read_summary(path):
    """One dump's summary, normalised and compacted, with its path under '_path'."""
    with _reading(path), _open(path) as f:
        head = f.read(2)
        if head == GZIP_MAGIC:
            f.seek(0)
            data, rest = _inflate_member(path, f, SUMMARY_MEMBER)
            s = parse(path, data)
            if s.get("part") != "summary":
                raise BadInput(f"{path}: part: expected 'summary' in the first gzip member, got {s.get('part')!r}")
            _recorder_member(path, f, rest, keep=False)  # checked, not kept: a verdict needs it whole, not parsed
        else:
            f.seek(0)
            s = parse(path, f.read(MAX_DUMP_BYTES + 1))
            if s.get("part") is not None:
                raise BadInput(f"{path}: a v2 summary outside gzip (the writer compresses every v2 dump)")
        mtime_ns = os.fstat(f.fileno()).st_mtime_ns
    s = compact(normalize(s))
    s["_path"] = path
    s["_written_ns"] = written_ns(s, mtime_ns)
    return s


def written_ns(s, mtime_ns=None):
    """When a dump was written, realtime ns: its clock sample's realtime read (taken as the snapshot was), else
    the file's modification time (a v1 dump or one without a sample; the writer renames it into place at once)."""
    clock = s.get("clock")
    if isinstance(clock, dict) and isinstance(clock.get("realtime_ns"), int) and clock["realtime_ns"] > 0:
        return clock["realtime_ns"]
    return mtime_ns


def flight_recorder(s):
    """The completed records of a summary's dump (oldest first): member 2 of a v2 file, the inline list of v1."""
    path = s["_path"]
    if s.get("schema") == "ncclscope.comm.v1":
        return parse(path, _read(path))["flight_recorder"]["completed"]
    with _reading(path), _open(path) as f:
        _, rest = _inflate_member(path, f, SUMMARY_MEMBER, keep=False)
        data = _recorder_member(path, f, rest)
    fr = _json(path, data)
    try:
        check_flight_recorder(fr)
    except SchemaError as e:
        raise BadInput(f"{path}: flight recorder member: {e}")
    return fr["completed"]


def read_dump(path):
    """A whole dump, v1 or v2, as one v1-shaped dict (the recorder's completed and in-flight records inline at
    flight_recorder): for scripts and tests that look at every record. Only the recorder is checked; not for
    the analysis."""
    with _reading(path), _open(path) as f:
        head = f.read(2)
        f.seek(0)
        if head != GZIP_MAGIC:
            return json.loads(f.read())
        summary, _ = _inflate_member(path, f, SUMMARY_MEMBER)
    d = json.loads(summary)
    completed = flight_recorder({"_path": path, "schema": d.get("schema")})
    d["flight_recorder"] = dict(d.get("flight_recorder") or {}, completed=completed, in_flight=d["in_flight"])
    return d


def _read_or_error(path):
    try:
        return read_summary(path), None
    except BadInput as e:
        return None, str(e)
    except (MemoryError, RecursionError) as e:
        return None, f"{path}: cannot read ({e})"


def _summaries(files, jobs):
    """Summaries in file order; the first bad file raises BadInput."""
    if jobs <= 1 or len(files) < PARALLEL_FROM:
        return [read_summary(f) for f in files]
    import multiprocessing
    out = []
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs) as pool:
        for s, err in pool.imap(_read_or_error, files, chunksize=max(1, min(256, len(files) // (8 * jobs)))):
            if err is not None:
                pool.terminate()
                raise BadInput(err)
            out.append(s)
    return out


def _waits_on(w, rec):
    """Whether the in-flight record `rec` is the operation the `wait` field `w` describes."""
    return (rec.get("func") == w["func"] and rec.get("seq") == w["seq"]
            and w.get("arrival", rec.get("arrival")) == rec.get("arrival"))


def _newest(old, new):
    """Of two dumps of one rank, the newer snapshot (a tie: the later file), keeping the older one's `wait` when
    the newer has none while the operation it describes is still in flight there: a request dump (SIGUSR2) sent
    after a stall may say less about where the rank waits than the stall dump did, never that it stopped
    waiting. A wait on an operation that has completed since is dropped with the rest of the older dump."""
    if new.get("snapshot_monotonic_ns", 0) < old.get("snapshot_monotonic_ns", 0):
        old, new = new, old
    w = old.get("wait")
    if w and not new.get("wait") and any(_waits_on(w, rec) for rec in new.get("in_flight") or ()):
        new = dict(new, wait=w, _wait_path=old["_path"])
    return new


def _stall_dump(d):
    return bool(d.get("stalled") or d.get("reason") == "stall")


def by_communicator(summaries):
    """{comm_hash: {rank: summary}}. Several dumps of one rank (stall, then signal, then finalize, or the same
    file given twice): the latest snapshot wins, with an older stall's `wait` kept as _newest() says; the older
    stall dumps it replaced are kept under '_older' (a stall they show may have recovered since: recovered.py).
    Ranks of one communicator must agree on its size."""
    comms = {}
    for d in summaries:
        ranks = comms.setdefault(d["comm_hash"], {})
        other = next(iter(ranks.values()), None)
        if other is not None and other["nranks"] != d["nranks"]:
            raise BadInput(f"{d['_path']}: communicator {d['comm_hash']} has {d['nranks']} ranks here but "
                           f"{other['nranks']} in {other['_path']}")
        old = ranks.get(d["rank"])
        if old is None:
            ranks[d["rank"]] = d
            continue
        new = _newest(old, d)
        gone = d if new.get("_path") == old["_path"] else old
        older = [x for x in old.get("_older", ()) + d.get("_older", ()) + (gone,)
                 if _stall_dump(x) and x["_path"] != new["_path"]]
        ranks[d["rank"]] = dict(new, _older=tuple({x["_path"]: dict(x, _older=()) for x in older}.values()))
    return comms


NO_JOB = ""  # the job id of dumps that carry none


def jobs_of(summaries):
    """{job id: dumps} of the dumps read, in the order first seen ('' for dumps without a job id)."""
    counts = {}
    for d in summaries:
        key = d.get("job_id") or NO_JOB
        counts[key] = counts.get(key, 0) + 1
    return counts


def _job_list(counts):
    return ", ".join(f"{j or '(no job id)'} ({n} dump{'s' if n != 1 else ''})" for j, n in sorted(counts.items()))


def select_job(summaries, job=None, all_jobs=False):
    """The dumps of one job: `job` when given (BadInput when no dump has it), every dump with all_jobs, else the
    dumps' only job. Dumps of two jobs in one directory (a reused NCCLSCOPE_DUMP_DIR) are refused unless one is
    picked or mixing is asked for: their ranks and communicators are not one job's, and a verdict over both
    blames one job for the other's state."""
    counts = jobs_of(summaries)
    if job is not None:
        picked = [d for d in summaries if (d.get("job_id") or NO_JOB) == job]
        if not picked:
            raise BadInput(f"no dump of job {job!r}; the dumps hold: {_job_list(counts)}")
        return picked
    if len(counts) > 1 and not all_jobs:
        raise BadInput(f"the dumps hold {len(counts)} jobs: {_job_list(counts)}; pick one with --job ID "
                       f"(--job '' for the dumps without a job id) or mix them with --all-jobs")
    return summaries


def default_jobs():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def load_all(paths, warn=_warn, jobs=None, job=None, all_jobs=False):
    files = dump_files(paths, warn)
    return by_communicator(select_job(_summaries(files, default_jobs() if jobs is None else jobs), job, all_jobs))

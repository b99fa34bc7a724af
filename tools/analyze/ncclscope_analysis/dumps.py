"""Finding, loading and checking dump files; grouping them by communicator.

Anything wrong with an input file raises BadInput with a message that starts with the file's path, so the
command line can exit 2 and name it: one bad dump fails the whole run, since a verdict drawn without it could
blame the wrong rank. Only regular files are read: a FIFO or device named like a dump in a searched directory
is skipped with a warning (named on the command line, it is bad input), and never opened in a way that blocks.
"""
import fnmatch
import json
import os
import stat
import sys

from .schema import SchemaError, check

DUMP_GLOB = "ncclscope-comm-*.json"
MAX_DUMP_BYTES = 256 << 20  # a dump of a 2048-entry flight recorder is about 2 MB


class BadInput(Exception):
    pass


def _warn(msg):
    print(f"ncclscope-analyze: warning: {msg}", file=sys.stderr)


def _walk(top, warn):
    """Every file named like a dump under top (symbolic links to directories are not followed). The top
    directory must be readable; below it, an unreadable directory is skipped with a warning, and the
    writers' private work folders (.ncclscope-work-<uid>, mode 0700, temporary files only) are not entered."""
    def fail(e):
        if os.path.abspath(e.filename or "") == os.path.abspath(top):
            raise BadInput(f"{e.filename}: cannot read ({e.strerror or e})")
        warn(f"{e.filename}: cannot read ({e.strerror or e}), skipped")
    found = []
    for d, dirs, names in os.walk(top, onerror=fail):
        dirs[:] = [x for x in dirs if not x.startswith(".ncclscope-work-")]
        found += [os.path.join(d, n) for n in fnmatch.filter(names, DUMP_GLOB)]
    return sorted(found)


def _is_regular(path):
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror or e})")


def dump_files(paths, warn=_warn):
    """Every dump under the given directories (recursively) plus the files named; BadInput if none."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            for f in _walk(p, warn):
                try:
                    regular = stat.S_ISREG(os.stat(f).st_mode)
                except OSError as e:
                    warn(f"{f}: cannot read ({e.strerror or e}), skipped")
                    continue
                if regular:
                    files.append(f)
                else:
                    warn(f"{f}: not a regular file, skipped")
        elif os.path.lexists(p):
            if not _is_regular(p):
                raise BadInput(f"{p}: not a regular file")
            files.append(p)
        else:
            raise BadInput(f"{p}: no such file or directory")
    if not files:
        raise BadInput(f"no {DUMP_GLOB} dump under {', '.join(paths)}")
    return files


def _read(path):
    """The bytes of a regular file; O_NONBLOCK so that a file swapped for a FIFO since the stat cannot block."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise BadInput(f"{path}: not a regular file")
            if st.st_size > MAX_DUMP_BYTES:
                raise BadInput(f"{path}: {st.st_size} bytes, larger than any dump ({MAX_DUMP_BYTES})")
            return f.read(MAX_DUMP_BYTES + 1)
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror or e})")


def parse(path, data):
    """A dump's bytes as a checked dict (BadInput naming the file and the field otherwise)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not JSON (not UTF-8: byte 0x{data[e.start]:02x} at offset {e.start})")
    try:
        d = json.loads(text)
    except RecursionError:
        raise BadInput(f"{path}: not JSON that can be read (nested too deeply)")
    except ValueError as e:  # JSONDecodeError; also an integer of more than 4300 digits
        raise BadInput(f"{path}: not JSON ({str(e)[:200]})")
    try:
        check(d)
    except SchemaError as e:
        raise BadInput(f"{path}: {e}")
    return d


def load(path):
    """One dump as a dict, with its path under '_path'."""
    d = parse(path, _read(path))
    d["_path"] = path
    return d


def by_communicator(dumps):
    """{comm_hash: {rank: dump}}. Several dumps of one rank (stall, then signal, then finalize, or the same
    file given twice): the latest snapshot wins. Ranks of one communicator must agree on its size."""
    comms = {}
    for d in dumps:
        ranks = comms.setdefault(d["comm_hash"], {})
        other = next(iter(ranks.values()), None)
        if other is not None and other["nranks"] != d["nranks"]:
            raise BadInput(f"{d['_path']}: communicator {d['comm_hash']} has {d['nranks']} ranks here but "
                           f"{other['nranks']} in {other['_path']}")
        old = ranks.get(d["rank"])
        if old is None or d.get("snapshot_monotonic_ns", 0) >= old.get("snapshot_monotonic_ns", 0):
            ranks[d["rank"]] = d
    return comms


def load_all(paths, warn=_warn):
    return by_communicator([load(p) for p in dump_files(paths, warn)])

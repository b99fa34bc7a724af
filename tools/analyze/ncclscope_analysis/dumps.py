"""Finding, loading and checking dump files; grouping them by communicator.

Anything wrong with an input file raises BadInput with a message that starts with the file's path, so the
command line can exit 2 and name it.
"""
import glob
import json
import os

SCHEMA = "ncclscope.comm.v1"
DUMP_GLOB = "ncclscope-comm-*.json"


class BadInput(Exception):
    pass


def dump_files(paths):
    """Every dump under the given directories (recursively) plus the files named; BadInput if none."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(glob.glob(os.path.join(p, "**", DUMP_GLOB), recursive=True))
        elif os.path.exists(p):
            files.append(p)
        else:
            raise BadInput(f"{p}: no such file or directory")
    if not files:
        raise BadInput(f"no {DUMP_GLOB} dump under {', '.join(paths)}")
    return files


# (path inside the dump, type) of every field the analysis reads without a default.
_REQUIRED = [
    ("comm_hash", str), ("rank", int), ("nranks", int), ("ops", list), ("flight_recorder", dict),
    ("flight_recorder.completed", list), ("flight_recorder.in_flight", list),
]
_OP_FIELDS = [("kind", str), ("func", str), ("count", int), ("bytes", int), ("last_seq", int)]
_RECORD_FIELDS = [("kind", str), ("func", str), ("seq", int)]


def _get(d, dotted):
    for part in dotted.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


def _check_fields(path, obj, fields, where):
    for key, typ in fields:
        v = _get(obj, key)
        if v is None:
            raise BadInput(f"{path}: not an ncclscope dump: no '{key}'{where}")
        if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
            raise BadInput(f"{path}: not an ncclscope dump: '{key}'{where} is {type(v).__name__}, "
                           f"expected {typ.__name__}")


def check(path, d):
    """Raises BadInput unless d has the shape of an ncclscope.comm.v1 dump."""
    if not isinstance(d, dict):
        raise BadInput(f"{path}: not an ncclscope dump (a JSON {type(d).__name__}, expected an object)")
    if d.get("schema") != SCHEMA:
        raise BadInput(f"{path}: not an ncclscope dump (schema {d.get('schema')!r}, expected {SCHEMA!r})")
    _check_fields(path, d, _REQUIRED, "")
    if not 0 <= d["rank"] < d["nranks"]:
        raise BadInput(f"{path}: rank {d['rank']} outside 0..{d['nranks'] - 1}")
    for i, op in enumerate(d["ops"]):
        _check_fields(path, op, _OP_FIELDS, f" in ops[{i}]")
    for part in ("completed", "in_flight"):
        for i, rec in enumerate(d["flight_recorder"][part]):
            _check_fields(path, rec, _RECORD_FIELDS, f" in flight_recorder.{part}[{i}]")


def load(path):
    """One dump as a dict, with its path under '_path'."""
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror or e})")
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
        raise BadInput(f"{path}: not JSON ({e})")
    check(path, d)
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


def load_all(paths):
    return by_communicator([load(p) for p in dump_files(paths)])

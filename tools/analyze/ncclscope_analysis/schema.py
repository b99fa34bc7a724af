"""The shape of an ncclscope.comm.v1 dump (src/exporters/dump/comm_dump.cc writes it), checked on load.

check() verifies the type of every field the writer writes, wherever it is present, and that the fields the
analysis needs are there, so the rest of the package can index dumps without checking again. A field the
writer does not know is ignored (a later writer may add some). A problem is reported as the path of the
field and what was wrong: "flight_recorder.completed[12].seq: expected integer, got string".
"""

SCHEMA = "ncclscope.comm.v1"
MAX_RANKS = 1 << 20  # far above any real communicator; bounds the per-rank tables the analysis builds


class SchemaError(Exception):
    pass


def _is_int(v):
    return type(v) is int and -(1 << 63) <= v < (1 << 64)  # what the writer's int64/uint64 fields can hold


def _is_str(v):
    if type(v) is not str:
        return False
    try:
        v.encode("utf-8")  # JSON "\ud800" decodes to an unpaired surrogate, which no output can print
        return True
    except UnicodeEncodeError:
        return False


INT = ("integer", _is_int)
STR = ("string", _is_str)
BOOL = ("boolean", lambda v: type(v) is bool)
NUM = ("number", lambda v: type(v) in (int, float))
STR_OR_NULL = ("string or null", lambda v: v is None or _is_str(v))


def obj(fields, required=()):
    return ("object", fields, required)


def array(item):
    return ("array", item)


def int_map():
    """An object of any keys with integer values (counters by name)."""
    return ("map", INT)


_I = INT
RECORD = obj({  # one flight-recorder operation, completed or in flight
    "kind": STR, "func": STR, "seq": _I, "arrival": _I, "count": _I, "bytes": _I, "type_size": _I, "algo": STR,
    "proto": STR, "channels": _I, "state": STR, "start_ns": _I, "enqueued_ns": _I, "kernel_channels_done": _I,
    "proxy_ops_started": _I, "proxy_ops_done": _I, "net_steps_total": _I, "net_steps_done": _I, "root": _I,
    "peer": _I, "gpu_start_ns": _I, "gpu_end_ns": _I, "kernel_start_host_ns": _I, "age_ns": _I, "end_ns": _I,
    "timing_source": STR, "duration_ns": _I, "algbw_gbps": NUM,
}, required=("kind", "func", "seq"))
OP = obj({"kind": STR, "func": STR, "count": _I, "bytes": _I, "last_seq": _I},
         required=("kind", "func", "count", "bytes", "last_seq"))
AGGREGATE = obj({
    "kind": STR, "func": STR, "algo": STR, "proto": STR, "size_class": _I, "count": _I, "bytes": _I,
    "bus_bytes": _I, "latency_count": _I, "latency_sum_ns": _I, "latency_log2_buckets": int_map(),
    "cpu_count": _I, "cpu_sum_ns": _I,
}, required=("kind", "func", "count", "bus_bytes", "latency_count", "latency_sum_ns"))
FLIGHT_RECORDER = obj({"depth": _I, "overwritten": _I, "completed": array(RECORD), "in_flight": array(RECORD)},
                      required=("completed", "in_flight"))
DUMP = obj({
    "schema": STR, "comm_hash": STR, "comm_name": STR_OR_NULL, "rank": _I, "nranks": _I, "nnodes": _I, "pid": _I,
    "abi": STR, "finalized": BOOL, "stalled": BOOL, "created_realtime_ns": _I, "snapshot_monotonic_ns": _I,
    "arrivals": _I, "memory_bytes": _I, "in_flight_count": _I, "oldest_in_flight_age_ns": _I,
    "gpu_to_host_offset_ns": _I, "ops": array(OP), "aggregates": array(AGGREGATE),
    "flight_recorder": FLIGHT_RECORDER, "dropped": int_map(), "events": int_map(), "host": STR, "job_id": STR,
    "reason": STR,
}, required=("schema", "comm_hash", "rank", "nranks", "ops", "flight_recorder"))


def json_type(v):
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer" if _is_int(v) else "integer outside the 64-bit range"
    if isinstance(v, str):
        return "string" if _is_str(v) else "string with an unpaired surrogate"
    return {float: "number", list: "array", dict: "object", type(None): "null"}.get(type(v), type(v).__name__)


def _join(where, key):
    key = key if len(key) <= 40 else key[:40] + "..."
    return f"{where}.{key}" if where else key


def validate(v, spec, where=""):
    """Raises SchemaError naming the first field of v that does not match spec."""
    kind = spec[0]
    if kind in ("object", "map"):
        if type(v) is not dict:
            raise SchemaError(f"{where or 'top level'}: expected object, got {json_type(v)}")
        if kind == "map":
            for key, item in v.items():
                if not _is_str(key):
                    raise SchemaError(f"{_join(where, key)}: key is a string with an unpaired surrogate")
                validate(item, spec[1], _join(where, key))
            return
        for key in spec[2]:
            if key not in v:
                raise SchemaError(f"{_join(where, key)}: missing")
        for key, field in spec[1].items():
            if key in v:
                validate(v[key], field, _join(where, key))
    elif kind == "array":
        if type(v) is not list:
            raise SchemaError(f"{where}: expected array, got {json_type(v)}")
        for i, item in enumerate(v):
            validate(item, spec[1], f"{where}[{i}]")
    elif not spec[1](v):
        raise SchemaError(f"{where}: expected {kind}, got {json_type(v)}")


def check(d):
    """Raises SchemaError unless d is a well-formed ncclscope.comm.v1 dump."""
    if type(d) is not dict:
        raise SchemaError(f"not an ncclscope dump (a JSON {json_type(d)}, expected an object)")
    if d.get("schema") != SCHEMA:
        got = d.get("schema")
        what = repr(got[:40]) if _is_str(got) else "missing" if "schema" not in d else f"a JSON {json_type(got)}"
        raise SchemaError(f"not an ncclscope dump (schema {what}, expected {SCHEMA!r})")
    validate(d, DUMP)
    if not 1 <= d["nranks"] <= MAX_RANKS:
        raise SchemaError(f"nranks: {d['nranks']} outside 1..{MAX_RANKS}")
    if not 0 <= d["rank"] < d["nranks"]:
        raise SchemaError(f"rank: {d['rank']} outside 0..{d['nranks'] - 1}")
    for i, rec in enumerate(d["flight_recorder"]["completed"]):
        if "timing_source" in rec and "duration_ns" not in rec:  # a timed operation has its duration
            raise SchemaError(f"flight_recorder.completed[{i}].duration_ns: missing (timing_source is set)")

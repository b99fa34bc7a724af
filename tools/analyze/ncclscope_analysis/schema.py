"""The shape of an ncclscope dump (src/exporters/dump/comm_dump.cc writes it; docs/dump-format.md), checked on
load: a v1 document, a v2 summary member or a v2 flight-recorder member.

check() verifies the type of every field the writer writes, wherever it is present, and that the fields the
analysis needs are there, so the rest of the package can index dumps without checking again. A field the
writer does not know is ignored (a later writer may add some). A problem is reported as the path of the
field and what was wrong: "flight_recorder.completed[12].seq: expected integer, got string".
"""

SCHEMA = "ncclscope.comm.v1"
SCHEMA_V2 = "ncclscope.comm.v2"
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
INT_OR_NULL = ("integer or null", lambda v: v is None or _is_int(v))


def obj(fields, required=()):
    return ("object", fields, required)


def array(item):
    return ("array", item)


def enum(*values):
    """A string field with a fixed set of values; the error quotes the value found."""
    label = ", ".join(map(repr, values[:-1])) + f" or {values[-1]!r}" if len(values) > 1 else repr(values[0])
    return ("enum", values, label)


def or_null(spec):
    """An object (or other nested spec) that may also be null."""
    return ("or_null", spec)


def int_map():
    """An object of any keys with integer values (counters by name)."""
    return ("map", INT)


_I = INT
# What the communicator's oldest in-flight operation waits on, once it is past its stall threshold (null
# otherwise; absent from older dumps): its class, the operation, and for class "peer" the peers its network
# requests wait on (docs/dump-format.md). The library also writes class "launched" (launched, not finished, and
# the net plugin does not carry this communicator, so where it waits is not known: core/snapshot.h), e.g. in the
# finalize dump of a communicator aborted after a peer failed, whose connections are closed by then.
WAIT_PEER = obj({"peer_global_rank": INT_OR_NULL, "peer_host": STR_OR_NULL, "peer_rank": INT_OR_NULL, "nic": STR,
                 "direction": enum("send", "recv"), "requests": _I, "waiting_ns": _I, "failed": BOOL},
                required=("peer_global_rank", "direction"))
WAIT = or_null(obj({"class": enum("host", "peer", "kernel", "launched"), "kind": enum("coll", "p2p"), "func": STR,
                    "seq": _I, "arrival": _I, "age_ns": _I, "threshold_ns": _I, "network_only": BOOL,
                    "peers": array(WAIT_PEER)},
                   required=("class", "kind", "func", "seq", "age_ns", "threshold_ns", "peers")))
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
_COMMON = {
    "schema": STR, "comm_hash": STR, "comm_name": STR_OR_NULL, "rank": _I, "nranks": _I, "nnodes": _I, "pid": _I,
    "abi": STR, "finalized": BOOL, "stalled": BOOL, "completion_seen": enum("kernel", "network", "none"),
    "created_realtime_ns": _I, "snapshot_monotonic_ns": _I,
    "arrivals": _I, "memory_bytes": _I, "in_flight_count": _I, "oldest_in_flight_age_ns": _I,
    "gpu_to_host_offset_ns": _I, "ops": array(OP), "aggregates": array(AGGREGATE), "dropped": int_map(),
    "events": int_map(), "host": STR, "job_id": STR, "reason": STR, "wait": WAIT,
}


DUMP = obj(dict(_COMMON, flight_recorder=FLIGHT_RECORDER),
           required=("schema", "comm_hash", "rank", "nranks", "ops", "flight_recorder"))


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


def _all_scalars(items, spec):
    """Fast path for a column of integers or strings (a v2 summary is mostly those): True when every item
    matches; False sends the caller to the item-by-item check that names the first bad one."""
    if not items:
        return True
    if spec is INT:
        return set(map(type, items)) == {int} and min(items) >= -(1 << 63) and max(items) < 1 << 64
    if spec is STR:
        if set(map(type, items)) != {str}:
            return False
        try:
            "".join(items).encode("utf-8")
            return True
        except UnicodeEncodeError:
            return False
    return False


def validate(v, spec, where=""):
    """Raises SchemaError naming the first field of v that does not match spec. Paths are built only for
    nested values and errors: a scalar field is checked in its parent's loop."""
    kind = spec[0]
    if kind == "or_null":
        if v is None:
            return
        if type(v) is not dict and spec[1][0] == "object":
            raise SchemaError(f"{where or 'top level'}: expected object or null, got {json_type(v)}")
        validate(v, spec[1], where)
    elif kind == "enum":
        if not (_is_str(v) and v in spec[1]):
            got = repr(v[:40]) if _is_str(v) else json_type(v)
            raise SchemaError(f"{where}: expected {spec[2]}, got {got}")
    elif kind in ("object", "map"):
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
            if key not in v:
                continue
            if len(field) == 2 and callable(field[1]):
                if not field[1](v[key]):
                    raise SchemaError(f"{_join(where, key)}: expected {field[0]}, got {json_type(v[key])}")
            else:
                validate(v[key], field, _join(where, key))
    elif kind == "array":
        if type(v) is not list:
            raise SchemaError(f"{where}: expected array, got {json_type(v)}")
        if _all_scalars(v, spec[1]):
            return
        for i, item in enumerate(v):
            validate(item, spec[1], f"{where}[{i}]")
    elif not spec[1](v):
        raise SchemaError(f"{where}: expected {kind}, got {json_type(v)}")


def column(item):
    return ("array", item)


RECENT = obj({"arrival": column(_I), "kind": column(STR), "func": column(STR), "seq": column(_I),
              "peer": column(_I), "bytes": column(_I), "start_ns": column(_I), "kernel_start_host_ns": column(_I),
              "duration_ns": column(_I), "timing": column(STR)},
             required=("arrival", "kind", "func", "seq", "peer", "start_ns", "duration_ns", "timing"))
NET_ERROR = obj({"comm_hash": STR_OR_NULL, "nic": STR, "kind": STR, "text": STR, "peer": STR_OR_NULL,
                 "peer_global_rank": INT_OR_NULL, "peer_pid": INT_OR_NULL, "peer_host": STR_OR_NULL,
                 "monotonic_ns": _I}, required=("kind", "text"))
HOST_NICS = obj({"seconds": NUM,
                 "rdma": array(obj({"nic": STR, "port": _I, "retransmit": _I, "congestion": _I, "error": _I,
                                    "link_downs": _I},
                                   required=("nic", "port", "retransmit", "error"))),
                 "tcp": array(obj({"nic": STR, "retransmits": _I}, required=("nic", "retransmits"))),
                 "netdevs": array(obj({"nic": STR, "carrier_changes": _I}, required=("nic", "carrier_changes"))),
                 "rank_nics": obj({"mapping": STR,
                                   "nics": array(obj({"nic": STR, "port": _I}, required=("nic",)))},
                                  required=("mapping", "nics"))},
                required=("seconds",))
SUMMARY = obj(dict(_COMMON, **{
    "part": STR,
    "identity": obj({"global_rank": INT_OR_NULL, "local_rank": INT_OR_NULL, "world_size": INT_OR_NULL,
                     "gpu_uuid": STR_OR_NULL, "gpu_instance_id": INT_OR_NULL, "mig_uuid": STR_OR_NULL,
                     "nccl_version": STR_OR_NULL}),
    "clock": obj({"mono_before_ns": _I, "realtime_ns": _I, "mono_after_ns": _I, "esterror_ns": _I,
                  "maxerror_ns": _I, "synced": BOOL}, required=("mono_before_ns", "realtime_ns", "mono_after_ns")),
    "p2p": array(obj({"peer": _I, "func": STR, "last_seq": _I}, required=("peer", "func", "last_seq"))),
    "recent": RECENT, "in_flight": array(RECORD), "net_errors": array(NET_ERROR), "host_nics": HOST_NICS,
    "flight_recorder": obj({"depth": _I, "overwritten": _I, "completed": _I}),
}), required=("schema", "part", "comm_hash", "rank", "nranks", "ops", "in_flight", "recent", "p2p"))
FR_MEMBER = obj({"schema": STR, "part": STR, "completed": array(RECORD)}, required=("completed",))


def _check_schema(d, want):
    if type(d) is not dict:
        raise SchemaError(f"not an ncclscope dump (a JSON {json_type(d)}, expected an object)")
    if d.get("schema") not in want:
        got = d.get("schema")
        what = repr(got[:40]) if _is_str(got) else "missing" if "schema" not in d else f"a JSON {json_type(got)}"
        raise SchemaError(f"not an ncclscope dump (schema {what}, expected {' or '.join(map(repr, want))})")


def check(d):
    """Raises SchemaError unless d is a well-formed v1 dump or v2 summary member."""
    _check_schema(d, (SCHEMA, SCHEMA_V2))
    v2 = d["schema"] == SCHEMA_V2
    if v2 and d.get("part") != "summary":
        raise SchemaError(f"part: expected 'summary', got {d.get('part')!r:.40}")
    validate(d, SUMMARY if v2 else DUMP)
    if not 1 <= d["nranks"] <= MAX_RANKS:
        raise SchemaError(f"nranks: {d['nranks']} outside 1..{MAX_RANKS}")
    if not 0 <= d["rank"] < d["nranks"]:
        raise SchemaError(f"rank: {d['rank']} outside 0..{d['nranks'] - 1}")
    if v2:
        # The job's size bounds a table of global ranks (chains.absent_global_ranks) as nranks bounds the
        # per-rank ones: a WORLD_SIZE of 2**31 would take the analyzer's memory, not name a missing rank.
        world = (d.get("identity") or {}).get("world_size")
        if world is not None and not 1 <= world <= MAX_RANKS:
            raise SchemaError(f"identity.world_size: {world} outside 1..{MAX_RANKS}")
        lengths = {k: len(v) for k, v in d["recent"].items()}
        if len(set(lengths.values())) > 1:
            raise SchemaError(f"recent: columns of different lengths {lengths}")
        return
    for i, rec in enumerate(d["flight_recorder"]["completed"]):
        if "timing_source" in rec and "duration_ns" not in rec:  # a timed operation has its duration
            raise SchemaError(f"flight_recorder.completed[{i}].duration_ns: missing (timing_source is set)")


def check_flight_recorder(d):
    """Raises SchemaError unless d is a well-formed v2 flight-recorder member."""
    _check_schema(d, (SCHEMA_V2,))
    validate(d, FR_MEMBER)

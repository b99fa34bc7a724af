#!/usr/bin/env python3
"""Each inner net plugin exports exactly its one table (nm -D --defined-only), loads on its own (dlopen
RTLD_LOCAL, so its dependencies resolve) and dlsym finds the table under the expected name. A library that
exported a second table (a profiler table, another net version) would let a loader pick the wrong one.
Usage: exports_test.py LIB_DIR"""
import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from checks import check, summary  # noqa: E402

LIB_DIR = sys.argv[1]
MARKERS = {"_init", "_fini", "_edata", "_end", "__bss_start"}  # the linker's, in every shared object

# library -> (the one exported symbol, the table's name field)
EXPECTED = {f"libnccl-net-inner-{t}-v{v}.so": (f"ncclNetPlugin_v{v}", "ncclscope")
            for t in ("tcp", "ib") for v in (8, 10, 12)}
EXPECTED["libnccl-net-inner-failinit.so"] = ("ncclNetPlugin_v12", "inner-failinit")
EXPECTED["libnccl-net-inner-notable.so"] = ("ncclNetPlugin_v7", "inner-notable")


for lib, (symbol, name) in EXPECTED.items():
    path = os.path.join(LIB_DIR, lib)
    if not os.path.exists(path):
        check(False, f"{lib} was built")
        continue
    nm = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True)
    exported = {}
    for line in nm.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] not in MARKERS:
            exported[parts[2]] = parts[1]
    check(nm.returncode == 0 and set(exported) == {symbol}, f"{lib} exports exactly {symbol} (got {sorted(exported)})")
    check(exported.get(symbol) in ("R", "D", "B"), f"{lib}: {symbol} is a data object (type {exported.get(symbol)})")
    if lib.startswith("libnccl-net-inner-tcp") or lib.startswith("libnccl-net-inner-ib"):
        flags = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
        check("NODELETE" in flags, f"{lib} is linked -z nodelete, as the plugin NCCL loads")
    try:
        h = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as e:
        check(False, f"{lib} loads with dlopen ({e})")
        continue
    try:
        table_name = ctypes.c_char_p.in_dll(h, symbol).value  # the table's first field
    except ValueError:
        table_name = None
    check(table_name == name.encode(), f"{lib}: dlsym({symbol}) finds the table named {name} (got {table_name})")
    for other in ("ncclNetPlugin_v9", "ncclNetPlugin_v11", "ncclProfiler_v4", "ncclProfiler_v6",
                  "ncclscope_fixed_transport"):
        if other != symbol:
            check(not hasattr(h, other), f"{lib}: dlsym({other}) finds nothing")

sys.exit(summary())

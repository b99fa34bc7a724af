#!/usr/bin/env bash
# A by-hand proof with a third-party net plugin: AWS's aws-ofi-nccl, alone and wrapped by ncclscope.
#
#   tests/manual/ofi/ofi_proof.sh OFI_LIB BUILD_DIR
#
# OFI_LIB   libnccl-net-ofi.so built as docs/aws-ofi-nccl.md says (against Debian's libfabric, CUDA headers).
# BUILD_DIR an ncclscope build with bin/ncclscope-sim, lib/libnccl-net-ncclscope.so and, for the
#           conformance part, bin/net_conformance_test.
#
# It runs on a host without a GPU: aws-ofi-nccl dlopens libcudart.so at init and fails without one, so
# this script builds the stand-in next to it (standin_cudart.c: answers "CUDA 13.0, no device") and puts
# it first on LD_LIBRARY_PATH. Data moves over libfabric's tcp;ofi_rxm provider on loopback
# (FI_PROVIDER=tcp FI_TCP_IFACE=lo OFI_NCCL_EXCLUDE_TCP_IF=docker0; each can be overridden).
#
# What it prints:
#   1. What aws-ofi-nccl says about itself through each table v8..v12 (net_probe.cc): NULL entries,
#      device properties, the listen handle, one 1 MiB message, whether it calls the profiler callback;
#      and the same through ncclscope wrapping it (NCCLSCOPE_NET_CHAIN=OFI_LIB).
#   2. ncclscope-sim, 2 ranks, every op, 8 B..16 MiB, net v8/v10/v11/v12: median bus bandwidth of
#      PROOF_REPS runs (default 3), aws-ofi-nccl alone and wrapped, interleaved.
#   3. Accounting, wrapped: ncclscope's NIC and communicator byte counters (the final metrics textfile)
#      against the bytes the job moved, per net version (two communicators at v12); traffic on two of
#      aws-ofi-nccl's same-named devices; a peer killed mid-job, alone and wrapped.
#   4. tests/net/conformance_test.cc rebuilt (in a scratch folder, from BUILD_DIR's own compile commands)
#      to dlopen OFI_LIB (its Tcp/* cases), and again as ncclscope wrapping it (its Chain/* cases, whose
#      inner plugins are OFI_LIB under the test inners' names). A case that passes alone and fails wrapped
#      is a failure of this proof; aws-ofi-nccl's own failures are listed, not counted.
# The wrapped half runs when the built library knows NCCLSCOPE_NET_CHAIN; otherwise it says SKIP.
# PROOF_REPS=N sets the runs per cell of part 2; PROOF_KEEP=1 keeps the scratch folder with every output.
# A manual proof, not part of CI. Exit status: 0 when every check it ran passed (or SKIP), 1 otherwise.
set -u

OFI_LIB=${1:-}
BUILD=${2:-}
if [[ -z "$OFI_LIB" || ! -f "$OFI_LIB" ]]; then
  echo "SKIP: aws-ofi-nccl library '${OFI_LIB:-<none given>}' not found (build it as docs/aws-ofi-nccl.md says;" \
       "usage: $0 OFI_LIB BUILD_DIR)"
  exit 0
fi
if [[ -z "$BUILD" || ! -x "$BUILD/bin/ncclscope-sim" ]]; then
  echo "SKIP: no ncclscope build at '${BUILD:-<none given>}' (needs bin/ncclscope-sim; usage: $0 OFI_LIB BUILD_DIR)"
  exit 0
fi
OFI_LIB=$(realpath "$OFI_LIB")
BUILD=$(realpath "$BUILD")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
SIM=$BUILD/bin/ncclscope-sim
WRAP=$BUILD/lib/libnccl-net-ncclscope.so
REPS=${PROOF_REPS:-3}
WORK=$(mktemp -d /tmp/ofi-proof.XXXXXX)
[[ -n "${PROOF_KEEP:-}" ]] || trap 'rm -rf "$WORK"' EXIT
FAILED=0
fail() { echo "FAIL: $*"; FAILED=1; }
pass() { echo "ok: $*"; }

# ---- environment -------------------------------------------------------------------------------
mkdir -p "$WORK/cudart"
cc -shared -fPIC -O2 -o "$WORK/cudart/libcudart.so" "$HERE/standin_cudart.c" || { echo "stand-in cudart: build failed"; exit 1; }
c++ -std=c++20 -O2 -I"$REPO/include" -o "$WORK/net_probe" "$HERE/net_probe.cc" -ldl || { echo "net_probe: build failed"; exit 1; }
export LD_LIBRARY_PATH="$WORK/cudart${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FI_PROVIDER=${FI_PROVIDER:-tcp} FI_TCP_IFACE=${FI_TCP_IFACE:-lo} OFI_NCCL_EXCLUDE_TCP_IF=${OFI_NCCL_EXCLUDE_TCP_IF:-docker0}
export NCCLSCOPE_PROM_PORT=${NCCLSCOPE_PROM_PORT:--1}
# libfabric pulls in libinfinipath, whose crash handler writes a <program>.80s-<pid>,<host>.btr file into the
# working directory of every process that dies of a signal (the conformance cases where aws-ofi-nccl crashes).
export IPATH_NO_BACKTRACE=1
cd "$WORK" || exit 1

WRAPPED=0
if [[ -f "$WRAP" ]] && grep -aq NCCLSCOPE_NET_CHAIN "$WRAP"; then
  WRAPPED=1
else
  echo "wrapped half: SKIP ($WRAP does not know NCCLSCOPE_NET_CHAIN: build a tree with the wrapper transport)"
fi
# The wrapped runs: ncclscope is the net plugin NCCL loads, aws-ofi-nccl its inner.
# NCCLSCOPE_TRANSPORT unset: `auto` takes the chain because NCCLSCOPE_NET_CHAIN is set.
wrapped_env() { env -u NCCLSCOPE_TRANSPORT NCCLSCOPE_NET_CHAIN="$OFI_LIB" "$@"; }

echo "# aws-ofi-nccl proof: $(date -u +%FT%TZ) on $(hostname), $(nproc) CPUs"
echo "# OFI_LIB=$OFI_LIB"
echo "# BUILD_DIR=$BUILD (wrapped half: $([[ $WRAPPED == 1 ]] && echo yes || echo no))"
echo "# FI_PROVIDER=$FI_PROVIDER FI_TCP_IFACE=$FI_TCP_IFACE OFI_NCCL_EXCLUDE_TCP_IF=$OFI_NCCL_EXCLUDE_TCP_IF"
echo "# stand-in libcudart: $WORK/cudart/libcudart.so"

# ---- 1. what the plugin says about itself ------------------------------------------------------
echo
echo "## 1. Tables and properties (net_probe: init, devices, getProperties, listen, one 1 MiB message)"
for v in 8 9 10 11 12; do
  echo "### aws-ofi-nccl alone, v$v"
  if timeout 120 "$WORK/net_probe" "$OFI_LIB" "$v" > "$WORK/probe-alone-$v.txt" 2> "$WORK/probe-alone-$v.err"; then
    pass "alone v$v: message intact"
  else
    fail "alone v$v: net_probe exit $? ($(tail -2 "$WORK/probe-alone-$v.err" | tr '\n' ' '))"
  fi
  grep -v '^dev[1-9]' "$WORK/probe-alone-$v.txt"
  echo "(devices 1..: $(grep -c '^dev[1-9]' "$WORK/probe-alone-$v.txt") more; all devices' lines but guid: $(grep '^dev' "$WORK/probe-alone-$v.txt" | sed -e 's/^dev[0-9]*: //' -e 's/guid=[^ ]* //' | sort -u | wc -l) distinct)"
  if [[ $WRAPPED == 1 ]]; then
    echo "### ncclscope wrapping aws-ofi-nccl, v$v"
    if wrapped_env timeout 120 "$WORK/net_probe" "$WRAP" "$v" > "$WORK/probe-wrap-$v.txt" 2> "$WORK/probe-wrap-$v.err"; then
      pass "wrapped v$v: message intact"
    else
      fail "wrapped v$v: net_probe exit $? ($(tail -2 "$WORK/probe-wrap-$v.err" | tr '\n' ' '))"
    fi
    grep -v '^dev[1-9]' "$WORK/probe-wrap-$v.txt"
    echo "--- property lines that differ (alone < > wrapped):"
    diff <(grep -E '^(dev|null_entries|name)' "$WORK/probe-alone-$v.txt") \
         <(grep -E '^(dev|null_entries|name)' "$WORK/probe-wrap-$v.txt") || true
  fi
done

# ---- 2. the emulated job -----------------------------------------------------------------------
echo
echo "## 2. ncclscope-sim, 2 ranks, --ops all --sizes 8:16M --factor 8 --iters 20 --warmup 5, median of $REPS"
SIM_ARGS=(--ranks 2 --ops all --sizes 8:16M --factor 8 --iters 20 --warmup 5 --profiler-plugin none --json)
# Repetitions outermost, alone and wrapped back to back: drift in the machine's load falls on all alike.
for ((i = 1; i <= REPS; ++i)); do
  for v in 8 10 11 12; do
    out="$WORK/sim-alone-v$v-$i.json"
    if ! timeout 300 "$SIM" "${SIM_ARGS[@]}" --net-plugin "$OFI_LIB" --net-max-version "$v" > "$out" 2> "$out.err"; then
      fail "sim alone v$v run $i: exit $? ($(grep -v 'NCCL WARN NET/OFI OFI fi_getinfo' "$out.err" | tail -3 | tr '\n' ' '))"
    fi
    if [[ $WRAPPED == 1 ]]; then
      out="$WORK/sim-wrap-v$v-$i.json"
      if ! wrapped_env timeout 300 "$SIM" "${SIM_ARGS[@]}" --net-plugin "$WRAP" --net-max-version "$v" > "$out" 2> "$out.err"; then
        fail "sim wrapped v$v run $i: exit $? ($(grep -v 'NCCL WARN NET/OFI OFI fi_getinfo' "$out.err" | tail -3 | tr '\n' ' '))"
      fi
    fi
  done
done
python3 - "$WORK" "$REPS" <<'EOF' || FAILED=1
import glob, json, os, statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
runs = {}  # (mode, v) -> list of result docs
bad = False
for path in sorted(glob.glob(os.path.join(work, "sim-*-v*-*.json"))):
    mode, v = os.path.basename(path).split("-")[1:3]
    try:
        doc = json.load(open(path))
    except ValueError:
        print(f"FAIL: {os.path.basename(path)}: no JSON result"); bad = True; continue
    if not doc.get("ok") or any(r["wrong"] for r in doc["results"]):
        print(f"FAIL: {os.path.basename(path)}: ok={doc.get('ok')} or wrong bytes"); bad = True
    runs.setdefault((mode, int(v[1:])), []).append(doc)
versions = sorted({v for _, v in runs})
modes = [m for m in ("alone", "wrap") if any(k[0] == m for k in runs)]
def med(mode, v, key):
    vals = [key(d) for d in runs.get((mode, v), [])]
    vals = [x for x in vals if x is not None]
    return statistics.median(vals) if vals else None
def busbw(func, size):
    def k(d):
        for r in d["results"]:
            if r["func"] == func and r["bytes"] == size: return r["busbw_gbs"]
    return k
print("net  table name: " + "; ".join(f"{m} v{v}: {runs[(m, v)][0]['net']}" for m, v in sorted(runs)))
funcs = []
sizes = []
for d in next(iter(runs.values())):
    for r in d["results"]:
        if r["func"] not in funcs: funcs.append(r["func"])
        if r["bytes"] not in sizes: sizes.append(r["bytes"])
    break
show = [s for s in sizes if s >= 32768]
hdr = f"{'ver':>3} {'op':>13} " + " ".join(f"{(str(s//1024)+'K' if s < 1<<20 else str(s>>20)+'M'):>15}" for s in show)
print("busbw GB/s, " + " / ".join(modes) + " (median of %d)" % reps)
print(hdr)
for v in versions:
    for f in funcs:
        cells = []
        for s in show:
            vals = [med(m, v, busbw(f, s)) for m in modes]
            cells.append(" / ".join("-" if x is None else f"{x:.3f}" for x in vals))
        print(f"{v:>3} {f:>13} " + " ".join(f"{c:>15}" for c in cells))
print("avg busbw GB/s (all ops and sizes): median (min..max) of the runs")
for v in versions:
    vals = [med(m, v, lambda d: d["avg_busbw_gbs"]) for m in modes]
    spread = {m: [d["avg_busbw_gbs"] for d in runs.get((m, v), [])] for m in modes}
    line = " ".join(f"{m}={x:.3f} ({min(spread[m]):.3f}..{max(spread[m]):.3f})"
                    for m, x in zip(modes, vals) if x is not None)
    if len(modes) == 2 and None not in vals:
        # On a shared machine the best run is the one least disturbed: both ratios are shown.
        line += (f" wrapped/alone: median {vals[1] / vals[0]:.3f},"
                 f" best {max(spread[modes[1]]) / max(spread[modes[0]]):.3f}")
    print(f"  v{v}: {line}")
sys.exit(1 if bad else 0)
EOF

# ---- 3. accounting through the wrapper ---------------------------------------------------------
echo
if [[ $WRAPPED == 1 ]]; then
  echo "## 3. Accounting, wrapped: --ops allreduce,sendrecv --sizes 1M:4M --factor 4 --iters 5 --warmup 2"
  # Each rank sends, per operation of S bytes on 2 ranks: AllReduce 2*(n-1)/n*S = S, SendRecv S; over
  # 7 launches (5 + 2 warm-up) of 1 MiB and 4 MiB each: 7 * (1 + 1 + 4 + 4) MiB.
  EXPECT=$((7 * (1 + 1 + 4 + 4) * 1048576))
  for v in 8 10 11 12; do
    d="$WORK/acct-v$v"
    mkdir -p "$d/prom"
    comms=1
    [[ $v == 12 ]] && comms=2  # and two communicators at once, each counted on its own
    if ! wrapped_env NCCLSCOPE_DUMP_DIR="$d" NCCLSCOPE_PROM_TEXTFILE_DIR="$d/prom" NCCLSCOPE_METRICS_LEVEL=full \
         NCCL_DEBUG=INFO timeout 300 "$SIM" --ranks 2 --comms $comms --ops allreduce,sendrecv --sizes 1M:4M \
         --factor 4 --iters 5 --warmup 2 --net-plugin "$WRAP" --profiler-plugin "$WRAP" --net-max-version "$v" \
         > "$d/out.txt" 2> "$d/err.txt"; then
      fail "accounting v$v: sim exit $? ($(grep -v ' INFO ' "$d/err.txt" | tail -3 | tr '\n' ' '))"
      continue
    fi
    echo "   v$v, --comms $comms; rank 0's log, ncclscope's lines:"
    grep -E '^[^ ]+ \[0\] NCCL INFO (ncclscope: (wrapping|net plugin)|comm .*NET/)' "$d/err.txt" |
      sed -e 's/^[^ ]* \[0\] NCCL INFO /     /' | sort -u
    python3 - "$d/prom" "$EXPECT" "$v" "$comms" <<'EOF'
import glob, re, sys
folder, expect, v, ncomms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
series = []
for path in sorted(glob.glob(folder + "/*.prom")):
    for line in open(path):
        m = re.match(r'^(ncclscope_[a-z_]+)\{([^}]*)\} (\S+)$', line.strip())
        if m:
            series.append((m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(2))), float(m.group(3))))
bad = False
def check(ok, what):
    global bad
    print(("ok: " if ok else "FAIL: ") + f"v{v} " + what)
    bad |= not ok
def rows(fam, rank):
    return [(l, x) for n, l, x in series if n == fam and l.get("global_rank") == rank]
ranks = sorted({l["global_rank"] for _, l, _ in series if "global_rank" in l})
check(len(ranks) == 2, f"two ranks wrote a textfile ({ranks})")
info = sorted({(l.get("nic"), l.get("transport")) for n, l, _ in series if n == "ncclscope_nic_info"})
check(info == [("lo", "chain:Libfabric")], f"ncclscope_nic_info (nic, transport) = {info}")
for r in ranks:
    for fam in ("sent_bytes_total", "received_bytes_total"):
        nic = rows("ncclscope_nic_" + fam, r)
        check(sum(x for _, x in nic) == expect * ncomms and len(nic) == 1,
              f"rank {r} ncclscope_nic_{fam} = {[(l['nic'], int(x)) for l, x in nic]}, "
              f"expected [('lo', {expect * ncomms})]")
        comm = rows("ncclscope_comm_net_" + fam, r)
        if v >= 11:  # per-communicator rows need NCCL's comm id, which net init carries from v11
            check(sorted(x for _, x in comm) == [expect] * ncomms,
                  f"rank {r} ncclscope_comm_net_{fam} = {[(l['nic'], l['comm'], int(x)) for l, x in comm]}, "
                  f"expected {ncomms} x {expect}")
        else:
            print(f"   v{v} rank {r} ncclscope_comm_net_{fam}: {len(comm)} row(s) (no comm id below v11)")
    msgs = {f: int(sum(x for _, x in rows("ncclscope_nic_" + f, r)))
            for f in ("sent_messages_total", "received_messages_total")}
    print(f"   rank {r} NIC messages: {msgs}")
    errs = sum(x for _, x in rows("ncclscope_nic_errors_total", r))
    check(errs == 0, f"rank {r} ncclscope_nic_errors_total = {errs:.0f}")
    comm = {}
    for l, x in rows("ncclscope_comm_bytes_total", r):
        comm[(l.get("kind"), l.get("func"))] = comm.get((l.get("kind"), l.get("func")), 0) + int(x)
    check(comm.get(("coll", "AllReduce")) == expect // 2 * ncomms and comm.get(("p2p", "Send")) == expect // 2 * ncomms,
          f"rank {r} ncclscope_comm_bytes_total (profiler, nccl-tests byte base, all comms) = {comm}")
sys.exit(1 if bad else 0)
EOF
    [[ $? == 0 ]] || FAILED=1
  done
  # aws-ofi-nccl's devices all carry the interface's name: traffic on devices 0 and 3 lands in one NIC row.
  d="$WORK/acct-devs"
  mkdir -p "$d"
  if wrapped_env NET_PROBE_DEVS=0,3 NCCLSCOPE_PROM_TEXTFILE_DIR="$d" timeout 120 "$WORK/net_probe" "$WRAP" 12 \
       > "$d/probe.txt" 2>&1; then
    echo "   one 1 MiB message on device 0 and one on device 3 (net_probe, v12), ncclscope's NIC rows:"
    grep -h '^ncclscope_nic_\(sent_bytes\|received_bytes\|info\)' "$d"/*.prom | sed -e 's/^/     /' -e 's/,host=.*}/}/'
  else
    fail "net_probe on devices 0 and 3, wrapped: $(tail -3 "$d/probe.txt" | tr '\n' ' ')"
  fi
  # A peer killed mid-job (rank 1 at its 4th AllReduce), alone and wrapped: who reports what.
  for mode in alone wrap; do
    d="$WORK/kill-$mode"
    mkdir -p "$d"
    lib=$OFI_LIB runner=env
    [[ $mode == wrap ]] && lib=$WRAP runner=wrapped_env
    $runner NCCLSCOPE_PROM_TEXTFILE_DIR="$d" NCCLSCOPE_DUMP_DIR="$d" NCCLSCOPE_STALL_TIMEOUT_S=5 timeout 120 "$SIM" \
      --ranks 2 --ops allreduce --sizes 64K:64K --iters 10 --kill 1@3 --timeout 60 --net-plugin "$lib" \
      --profiler-plugin "$([[ $mode == wrap ]] && echo "$WRAP" || echo none)" --net-max-version 12 > "$d/out.txt" 2> "$d/err.txt"
    rc=$?
    echo "   peer killed, $mode: sim exit $rc; $(grep -E 'ranks stuck|rank 0: (exited|AllReduce failed)' "$d/err.txt" | sed 's/^ncclscope-sim: *//' | tr '\n' ';')"
    if [[ $mode == wrap ]]; then
      n=0
      for f in "$d"/*/ncclscope-comm-*; do
        [[ -f "$f" ]] && zcat -f "$f" | head -c 4000 | grep -q '"reason":"stall"' && n=$((n + 1))
      done
      echo "     ncclscope_nic_errors_total: $(grep -h '^ncclscope_nic_errors_total' "$d"/*.prom 2>/dev/null |
        awk '{s += $2} END {print s + 0}'); stall dumps (NCCLSCOPE_STALL_TIMEOUT_S=5): $n"
    fi
  done
else
  echo "## 3. Accounting, wrapped: SKIP (no wrapper in this build)"
fi

# ---- 4. the conformance suite, pointed at another library ----------------------------------------
echo
echo "## 4. tests/net/conformance_test.cc against another library (rebuilt in $WORK/conf-*)"
# The suite dlopens the path compiled in as NCCLSCOPE_PLUGIN_PATH (tests/CMakeLists.txt). Recompile its two
# sources that see that path, with BUILD_DIR's own command lines, and relink.
build_conformance() {  # $1 = scratch dir, $2 = library path
  local out=$1 lib=$2 cmds conf pn link
  mkdir -p "$out"
  cmds=$(ninja -C "$BUILD" -t commands bin/net_conformance_test 2>/dev/null) || return 1
  conf=$(grep -- 'conformance_test.cc.o -c' <<<"$cmds")
  pn=$(grep -- 'plugin_net.cc.o -c' <<<"$cmds")
  link=$(grep -- '-o bin/net_conformance_test ' <<<"$cmds")
  [[ -n "$conf" && -n "$pn" && -n "$link" ]] || return 1
  local path_re='-DNCCLSCOPE_PLUGIN_PATH=\\"[^\\]*\\"'
  local path_new="-DNCCLSCOPE_PLUGIN_PATH=\\\\\"$lib\\\\\""
  conf=$(sed -E -e "s|$path_re|$path_new|" -e "s| -MD -MT [^ ]+ -MF [^ ]+ | |" \
                -e "s| -o [^ ]+conformance_test.cc.o | -o $out/conformance_test.o |" <<<"$conf")
  pn=$(sed -E -e "s|$path_re|$path_new|" -e "s| -MD -MT [^ ]+ -MF [^ ]+ | |" \
              -e "s| -o [^ ]+plugin_net.cc.o | -o $out/plugin_net.o |" <<<"$pn")
  (cd "$BUILD" && eval "$conf" && eval "$pn") || return 1
  # The support archive with our plugin_net.o in place of the built one.
  cp "$BUILD/lib/libncclscope_test_support.a" "$out/libsupport.a" &&
    ar d "$out/libsupport.a" plugin_net.cc.o && ar q "$out/libsupport.a" "$out/plugin_net.o" && ranlib "$out/libsupport.a" ||
    return 1
  link=$(sed -E -e 's/ && cd .*$//' -e 's/^: && //' \
                -e "s| [^ ]+conformance_test.cc.o | $out/conformance_test.o |" \
                -e "s| lib/libncclscope_test_support.a | $out/libsupport.a |" \
                -e "s| -o bin/net_conformance_test | -o $out/net_conformance_test |" <<<"$link")
  (cd "$BUILD" && eval "$link")
}
declare -A CONF_ALONE=()
run_conformance() {  # $1 = label, $2 = binary, rest = env prefix
  local label=$1 bin=$2
  shift 2
  # Tcp/* instances only (the Verbs ones skip without an RDMA device); each test in its own process.
  local list t r log verdict
  list=$("$bin" --gtest_list_tests --gtest_filter="${CONF_FILTER:-Tcp/*}" | awk '/^[^ ]/ {s=$1} /^  / {print s $1}')
  for t in $list; do
    log="$WORK/conf-$label-${t//\//_}.log"
    r=$("$@" timeout 200 "$bin" --gtest_filter="$t" > "$log" 2>&1; echo $?)
    if [[ $r == 0 ]] && grep -q '\[  SKIPPED \]' "$log"; then
      verdict=skipped
      echo "  $label $t: skipped ($(grep -m1 -A1 'Skipped' "$log" | tail -1 | cut -c1-110))"
    elif [[ $r == 0 ]]; then
      verdict=passed
      echo "  $label $t: passed"
    else
      verdict=failed
      # A child's CHECK line, or its status (128 + signal: 139 is SIGSEGV) as the test reports it.
      echo "  $label $t: FAILED (exit $r): $( (grep -E 'CHECK failed' "$log" | sort -u | head -2 |
          sed -E 's/^\[pid [0-9]+\] [^ ]*conformance_test.cc/conformance_test.cc/'
        grep -A1 -E '^  r\.(recv|send)_status$' "$log" | grep -oE 'Which is: [0-9-]+' | sed 's/Which is: /child status /' |
          grep -v 'status 1$' | sort | uniq -c | sed 's/^ *//') | cut -c1-220 | tr '\n' ' ')"
    fi
    if [[ $label == alone ]]; then
      CONF_ALONE[$t]=$verdict
    else
      # The same test at the version served, aws-ofi-nccl alone (Chain/X/chain_v12_inner_tcp_v8 -> Tcp/X/tcp_v12).
      local same
      same=$(sed -E -e 's|^Chain/|Tcp/|' -e 's|/chain_v([0-9]+)_.*$|/tcp_v\1|' <<<"$t")
      if [[ $verdict == failed && ${CONF_ALONE[$same]:-} == passed ]]; then
        fail "conformance $t fails wrapped; $same passes with aws-ofi-nccl alone"
      elif [[ $verdict == passed && ${CONF_ALONE[$same]:-} == failed ]]; then
        echo "    (passes wrapped, fails alone as $same: the wrapper accepts what aws-ofi-nccl rejects)"
      fi
    fi
  done
}
if [[ ! -x "$BUILD/bin/net_conformance_test" ]]; then
  echo "conformance: SKIP (no $BUILD/bin/net_conformance_test: ninja -C $BUILD net_conformance_test)"
elif ! build_conformance "$WORK/conf-alone" "$OFI_LIB" > "$WORK/conf-build-alone.log" 2>&1; then
  echo "conformance: SKIP (could not rebuild it for $OFI_LIB: $(tail -3 "$WORK/conf-build-alone.log" | tr '\n' ' '))"
else
  echo "### aws-ofi-nccl alone (its failures are where it differs from ncclscope's contract, not errors of this script)"
  run_conformance alone "$WORK/conf-alone/net_conformance_test" env
  if [[ $WRAPPED == 1 ]]; then
    # The suite's Chain/* cases wrap libnccl-net-inner-tcp-v{8,10,12}.so found beside the plugin: a scratch
    # folder where those names are aws-ofi-nccl and the plugin is ncclscope's.
    lib="$WORK/conf-wrap-lib"
    mkdir -p "$lib"
    ln -sf "$WRAP" "$lib/libnccl-net-ncclscope.so"
    for n in 8 10 12; do ln -sf "$OFI_LIB" "$lib/libnccl-net-inner-tcp-v$n.so"; done
    if build_conformance "$WORK/conf-wrap" "$lib/libnccl-net-ncclscope.so" > "$WORK/conf-build-wrap.log" 2>&1; then
      echo "### ncclscope wrapping aws-ofi-nccl (the suite's Chain/* cases: served v12, v11, v8, v10)"
      CONF_FILTER='Chain/*' run_conformance wrap "$WORK/conf-wrap/net_conformance_test" env -u NCCLSCOPE_TRANSPORT
    else
      echo "conformance wrapped: SKIP (rebuild failed: $(tail -3 "$WORK/conf-build-wrap.log" | tr '\n' ' '))"
    fi
  fi
fi

echo
[[ -n "${PROOF_KEEP:-}" ]] && echo "# outputs kept in $WORK"
if [[ $FAILED == 0 ]]; then echo "RESULT: every check passed"; else echo "RESULT: some checks FAILED (above)"; fi
exit $FAILED

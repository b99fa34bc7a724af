#!/usr/bin/env bash
# The real node_exporter (Debian's prometheus-node-exporter) serves the textfiles of a 4-rank ncclscope-sim job
# on one host: every sample line of the 4 files is served (same name, labels and value), node_exporter logs no
# "collected before with the same name and label values" (the identity labels and pid keep the ranks apart),
# and node_textfile_scrape_error is 0. A control copy of one textfile under a second name must make node_exporter
# report the collision: the check can fail.
set -uo pipefail
sim=${1:?usage: node_exporter_textfile.sh SIM LIB_DIR}
libdir=${2:?usage: node_exporter_textfile.sh SIM LIB_DIR}
ne=$(command -v prometheus-node-exporter || command -v node_exporter || true)
if [ -z "$ne" ]; then
  echo "SKIP: node_exporter is not installed (scripts/install-deps.sh installs prometheus-node-exporter)"; exit 77
fi
work=$(mktemp -d /tmp/ncclscope-nodeexp-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/textfiles"
fail=0

LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" NCCLSCOPE_PROM_PORT=-1 NCCLSCOPE_JOB_ID=ne-e2e \
  NCCLSCOPE_PROM_TEXTFILE_DIR="$work/textfiles" NCCLSCOPE_PROM_TEXTFILE_INTERVAL_S=1 \
  timeout 120 "$sim" --ranks 4 --ops allreduce --sizes 256K:256K --iters 20 >"$work/sim.log" 2>&1 ||
  { echo "FAIL: the sim failed"; tail -5 "$work/sim.log"; exit 1; }
files=("$work"/textfiles/ncclscope-*.prom)
[ "${#files[@]}" = 4 ] && echo "ok: 4 textfiles, kept after the job's end" || { echo "FAIL: ${#files[@]} textfiles"; ls -la "$work/textfiles"; exit 1; }

# Another test running in parallel can take any port we pick: start on a port the kernel just handed out, and
# again on a fresh one if the listener lost the race.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=""
for attempt in 1 2 3 4 5; do
  candidate=$(free_port)
  "$ne" --web.listen-address="127.0.0.1:$candidate" --collector.disable-defaults --collector.textfile \
    --collector.textfile.directory="$work/textfiles" >"$work/ne.log" 2>&1 &
  nep=$!
  for _ in $(seq 1 100); do
    if curl -sf "http://127.0.0.1:$candidate/metrics" >/dev/null 2>&1; then port=$candidate; break; fi
    kill -0 "$nep" 2>/dev/null || break
    sleep 0.1
  done
  if [ -n "$port" ]; then pids+=("$nep"); break; fi
  kill "$nep" 2>/dev/null || true; wait "$nep" 2>/dev/null || true
  echo "node_exporter did not come up on port $candidate (attempt $attempt): $(tail -1 "$work/ne.log")"
done
[ -n "$port" ] || { echo "FAIL: node_exporter would not start"; tail -20 "$work/ne.log"; exit 1; }
echo "node_exporter $("$ne" --version 2>&1 | head -1 | awk '{print $3}') on 127.0.0.1:$port"

curl -s "http://127.0.0.1:$port/metrics" >"$work/served.txt"
# Every sample of the files is served, compared as (name, label set, value): node_exporter sorts the labels
# and may respell numbers.
python3 - "$work/served.txt" "${files[@]}" <<'PY' || fail=1
import math, re, sys
SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$')
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
def samples(path):
    out = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        m = SAMPLE.match(line)
        if not m:
            sys.exit(f"FAIL: unparsable line in {path}: {line}")
        # le and quantile are numbers that node_exporter respells (8.192000000000001e-06 -> 8.192e-06).
        labels = frozenset((k, repr(float(v)) if k in ('le', 'quantile') else v) for k, v in LABEL.findall(m[2] or ''))
        out.append((m[1], labels, float(m[3])))
    return out
served = {}
for name, labels, value in samples(sys.argv[1]):
    served[(name, labels)] = value
total = 0; missing = 0; ranks = set()
for path in sys.argv[2:]:
    for name, labels, value in samples(path):
        total += 1
        labels_d = dict(labels)
        if 'job' in labels_d or 'instance' in labels_d:
            print(f"FAIL: {path}: a job/instance label: {name} {sorted(labels)}"); missing += 1
        ranks.add(labels_d.get('global_rank'))
        got = served.get((name, labels))
        if got is None or not (got == value or (math.isnan(got) and math.isnan(value)) or math.isclose(got, value, rel_tol=1e-12)):
            missing += 1
            if missing <= 5: print(f"FAIL: not served as in {path}: {name} {sorted(labels)} {value} (served: {got})")
ncclscope_served = sum(1 for (n, _) in served if n.startswith('ncclscope_'))
print(f"textfile sample lines: {total}; served ncclscope samples: {ncclscope_served}; missing or different: {missing}; "
      f"global ranks: {sorted(r for r in ranks if r is not None)}")
ok = missing == 0 and total > 0 and ncclscope_served == total and ranks == {'0', '1', '2', '3'}
print("ok: every line of the 4 textfiles is served" if ok else "FAIL: the served samples differ from the files")
sys.exit(0 if ok else 1)
PY
err=$(awk '/^node_textfile_scrape_error / {print $2}' "$work/served.txt")
[ "$err" = 0 ] && echo "ok: node_textfile_scrape_error 0" || { echo "FAIL: node_textfile_scrape_error '${err}'"; fail=1; }
if grep -q "collected before with the same name and label values" "$work/ne.log" "$work/served.txt"; then
  echo "FAIL: node_exporter reports colliding series"; grep -m3 "collected before" "$work/ne.log" "$work/served.txt"; fail=1
else
  echo "ok: no colliding series in node_exporter's log or response"
fi

# Control: the same series twice (a copy of one rank's file) must be reported, or the check above proves nothing.
cp "${files[0]}" "$work/textfiles/ncclscope-copy.prom"
curl -s "http://127.0.0.1:$port/metrics" >"$work/served2.txt"
sleep 0.2
if grep -q "collected before with the same name and label values" "$work/ne.log" "$work/served2.txt"; then
  echo "ok: control: a duplicated textfile is reported as colliding"
else
  echo "FAIL: control: node_exporter did not report the duplicated textfile"; fail=1
fi
[ $fail = 0 ] && echo "PASS: node_exporter serves the 4 ranks' textfiles" || tail -5 "$work/ne.log" | cut -c1-400
exit $fail

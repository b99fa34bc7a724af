#!/usr/bin/env bash
# The shipped rules (rules/*.yml) and dashboard (dashboards/*.json) against a real Prometheus (Debian's) that
# discovers ncclscope-sim ranks through file_sd and evaluates the rules every second. Four jobs run at once,
# each with its own NCCLSCOPE_JOB_ID:
#   rl-straggle   3 ranks, rank 2 late by 20 ms per collective, the clocks of ranks 0, 1 and 2 shifted by
#                 -90 s, +1 h and -1 h (--clock-offset), metrics at the detailed level (func/algo/proto):
#                 the straggler rule's entry for the communicator names rank 2;
#   rl-hang-coll  2 ranks, rank 1 stops issuing allreduces at seq 40: NcclscopeCommStalled fires (rank 0
#                 waits) and NcclscopeCommRankNotJoining names rank 1;
#   rl-hang-p2p   the same with send/recv pairs, the two ranks' clocks 2 h apart: the stall alert fires for
#                 point-to-point too;
#   rl-other      a second healthy job: the dashboard's job variable tells all jobs apart.
# Then every dashboard query runs and all but the node_exporter ones must return data.
set -euo pipefail
sim=$1 libdir=$2 root=$3
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  echo "SKIP: the prometheus server is not installed (scripts/install-deps.sh installs it)"; exit 77
fi
source "$(dirname "$0")/prom_lib.sh"
# The hang rules (ncclscope-hang.yml) are tested live by hang_live.py; without them the per-rank stall alerts
# here name the stalled ranks and the rank not joining, as a deployment that loads only these two files sees.
prom_file_sd_setup rules "$root/rules/ncclscope-[ar]*.yml" || exit 1
url="http://127.0.0.1:$port"
groups=$(curl -sf "$url/api/v1/rules" | python3 -c 'import json,sys; print(sum(len(g["rules"]) for g in json.load(sys.stdin)["data"]["groups"]))')
echo "Prometheus on $url with $groups rules from $root/rules"
[ "$groups" -gt 0 ] || { echo "FAIL: no rules loaded"; tail -5 "$work/prometheus.log"; exit 1; }

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCLSCOPE_SD_DIR="$work/sd" NCCLSCOPE_PROM_PORT=0 NCCLSCOPE_PROM_BIND=127.0.0.1 NCCLSCOPE_SOCKET_IFNAME=lo
job() {  # job NAME ENV… -- SIM-ARGS…
  local name=$1; shift
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  env NCCLSCOPE_JOB_ID="$name" "${env[@]}" "$sim" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
}
job rl-straggle NCCLSCOPE_METRICS_LEVEL=detailed -- --ranks 3 --ops allreduce --sizes 64K:64K --iters 1000000 \
  --straggle 2:20 --clock-offset 0:-90000,1:3600000 --clock-offset 2:-3600000 --timeout 600
job rl-hang-coll NCCLSCOPE_STALL_TIMEOUT_S=2 -- --ranks 2 --ops allreduce --sizes 8:8 --iters 1000000 \
  --hang 1@40 --expect-hang --timeout 600
job rl-hang-p2p NCCLSCOPE_STALL_TIMEOUT_S=2 -- --ranks 2 --ops sendrecv --sizes 8:8 --iters 1000000 \
  --hang 1@40 --expect-hang --timeout 600 --clock-offset 0:-3600000,1:3600000
job rl-other -- --ranks 2 --ops allreduce,sendrecv --sizes 4K:4K --iters 1000000 --straggle 0:5 --timeout 600

query() { curl -sf --get "$url/api/v1/query" --data-urlencode "query=$1"; }
# rows QUERY LABEL…: one line per series, the labels asked for then the value.
rows() {
  local q=$1; shift
  query "$q" | python3 -c 'import json,sys
labels=sys.argv[1:]
for r in json.load(sys.stdin)["data"]["result"]:
    print(" ".join([r["metric"].get(l, "-") for l in labels] + [r["value"][1]]))' "$@"
}

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# Each stage waits until its own deadline (counted from here), so that one stage failing leaves the others
# their time: NcclscopeCommStalled fires about 35 s in (2 s stall timeout, then `for: 30s`); the straggler and
# NcclscopeCommRankNotJoining read the recording group, which runs once a minute (its first evaluation up to a
# minute after the load, then `for: 30s`).
start=$SECONDS
deadline=$((start + 60))
# (1) every rank of every job is scraped (3 + 2 + 2 + 2 targets).
up=""
while [ $SECONDS -lt $deadline ]; do
  up=$(rows 'count(up{job="ncclscope"} == 1)' | awk '{print $1}')
  [ "$up" = "9" ] && break
  sleep 1
done
[ "$up" = "9" ] || { fail "Prometheus sees ${up:-no} healthy targets, want 9"; ls "$work/sd"; }
echo "[$((SECONDS - start)) s] targets up: ${up:-none}"

# (2) the straggler rule names rank 2 of rl-straggle although the ranks' clocks disagree by up to 2 h.
straggler=""
deadline=$((start + 140))
while [ $SECONDS -lt $deadline ]; do
  straggler=$(rows 'ncclscope:comm_straggler:rate{ncclscope_job="rl-straggle"}' comm rank global_rank host)
  # Rank 2, late by more than 10 ms (the first seconds' rates, from two scrapes, can be noisy on a busy host).
  [ "$(echo "$straggler" | awk 'NF {print $2}' | sort -u)" = "2" ] &&
    [ "$(echo "$straggler" | awk 'NF && $5 > 0.010' | wc -l)" -ge 1 ] && break
  sleep 1
done
echo "[$((SECONDS - start)) s] straggler (comm rank global_rank host lateness_s): ${straggler:-none}"
rows 'ncclscope:comm_rank_seconds_per_op:rate{ncclscope_job="rl-straggle"}' rank global_rank | sed 's/^/  seconds per op (rank global_rank s): /'
[ -n "$straggler" ] && [ "$(echo "$straggler" | awk 'NF {print $2}' | sort -u)" = "2" ] ||
  fail "the straggler rule does not name rank 2 of rl-straggle"
python3 -c "import sys; sys.exit(0 if all(float(l.split()[-1]) > 0.010 for l in '''$straggler'''.splitlines() if l) else 1)" ||
  fail "the straggler's lateness is not above 10 ms (--straggle 2:20)"
# The clocks really disagreed: the plugin's realtime start times differ by the offsets (1 h + 90 s, 2 h).
offsets=$(rows 'ncclscope_process_start_time_seconds{ncclscope_job="rl-straggle"} - on () group_left min(ncclscope_process_start_time_seconds{ncclscope_job="rl-straggle", global_rank="0"})' global_rank | sort)
echo "  process start time minus rank 0's (global_rank s): $(echo $offsets)"
python3 - "$offsets" <<'PY' || fail "the --clock-offset shifts are not visible in the ranks' start times"
import sys
got = {l.split()[0]: float(l.split()[1]) for l in sys.argv[1].splitlines() if l}
want = {"0": 0, "1": 3690, "2": -3510}
sys.exit(0 if got.keys() == want.keys() and all(abs(got[k] - want[k]) < 30 for k in want) else 1)
PY

# (3) the stall alert fires for the collective and the point-to-point hang; the rank not joining is named.
deadline=$((start + 170))
for j in rl-hang-coll rl-hang-p2p; do
  firing=""
  while [ $SECONDS -lt $deadline ]; do
    firing=$(rows "ALERTS{alertname=\"NcclscopeCommStalled\",alertstate=\"firing\",ncclscope_job=\"$j\"}" comm rank global_rank host)
    [ -n "$firing" ] && break
    sleep 1
  done
  echo "[$((SECONDS - start)) s] $j NcclscopeCommStalled firing (comm rank global_rank host): ${firing:-none}"
  [ -n "$firing" ] || { fail "NcclscopeCommStalled is not firing for $j"; tail -5 "$work/$j.log"; }
  notjoining=""
  while [ $SECONDS -lt $deadline ]; do
    notjoining=$(rows "ALERTS{alertname=\"NcclscopeCommRankNotJoining\",alertstate=\"firing\",ncclscope_job=\"$j\"}" comm rank global_rank kind)
    [ -n "$notjoining" ] && break
    sleep 1
  done
  echo "[$((SECONDS - start)) s] $j NcclscopeCommRankNotJoining firing (comm rank global_rank kind): ${notjoining:-none}"
  [ "$(echo "$notjoining" | awk 'NF {print $3}' | sort -u)" = "1" ] || fail "NcclscopeCommRankNotJoining does not name global rank 1 of $j"
  # The annotations as Alertmanager would get them name the communicator, rank, host and global rank.
  curl -sf "$url/api/v1/alerts" | python3 -c '
import json, sys
job = sys.argv[1]
alerts = [a for a in json.load(sys.stdin)["data"]["alerts"]
          if a["labels"].get("ncclscope_job") == job and a["state"] == "firing"]
ok = bool(alerts)
for a in alerts:
    l, text = a["labels"], a["annotations"]["summary"] + " " + a["annotations"]["description"]
    want = [l.get("comm", "?"), "rank " + l.get("rank", "?"), l.get("host", "?"), "global rank " + l.get("global_rank", "?"), "Next step"]
    missing = [w for w in want if w not in text]
    print("  %s: %s" % (l["alertname"], a["annotations"]["summary"]))
    ok &= not missing
    if missing: print("  annotations lack", missing)
sys.exit(0 if ok else 1)' "$j" || fail "the firing alerts of $j do not name comm, rank, host and global rank"
done

# (4) the dashboard's job variable tells the jobs apart, and every query works (all but the node_exporter
# panels 13 and 14 with data).
for d in "$root"/dashboards/*.json; do
  jobs=$(python3 "$root/tests/dashboards/check_dashboard.py" "$d" --prometheus "$url" --variable job | sort | tr '\n' ' ')
  echo "dashboard job variable: $jobs"
  for j in rl-straggle rl-hang-coll rl-hang-p2p rl-other; do
    case " $jobs " in *" $j "*) ;; *) fail "the job variable of $(basename "$d") lacks $j";; esac
  done
  n=$(rows 'count(ncclscope_comm_info{ncclscope_job="rl-other"})' | awk '{print $1}')
  [ "$n" = "2" ] || fail "ncclscope_comm_info{ncclscope_job=\"rl-other\"} has ${n:-no} series, want 2 (one per rank)"
  # Retried for up to 60 s (until_ok), as the stages above wait for theirs: an instant panel (oldest in flight, in
  # flight) needs an operation in flight when scraped and a rate panel two scrapes in its window, which a loaded host
  # may not have at one look.
  until_ok 60 python3 "$root/tests/dashboards/check_dashboard.py" "$d" --prometheus "$url" \
    --require 1,2,3,4,5,6,7,8,9,10,11,12,15,16 || fail "dashboard queries against the live jobs"
done
echo "[$((SECONDS - start)) s] done"
if [ "$failures" -ne 0 ]; then
  for f in "$work"/*.log; do echo "--- $(basename "$f")"; tail -5 "$f"; done
  echo "$failures check(s) failed"; exit 1
fi
echo "PASS: rules and dashboard against a live Prometheus"

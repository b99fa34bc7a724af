#!/usr/bin/env bash
# Two jobs of 4 ranks each on one node, both with the port settings of docs/slurm.md (the default
# NCCLSCOPE_PROM_PORT, 9850, plus LOCAL_RANK 0..3, set by the sim as torchrun does) and one shared file_sd folder:
# each of the ports 9850..9853 goes to one rank only, and the rank that finds its port taken must not go dark. A
# real Prometheus must scrape all 8 ranks (up == 1), and every rank not on 9850 + its local rank must be one that
# logged the fallback, naming the port it wanted and the port it took, which is its file_sd target's.
# (Before the fallback the second job's ranks logged "metrics endpoint disabled" and published no target: 4 of 8.)
set -euo pipefail
sim=$1 libdir=$2
if ! command -v prometheus >/dev/null; then
  echo "SKIP: the prometheus server is not installed (scripts/install-deps.sh installs it)"; exit 77
fi
base=9850  # the documented default; the jobs below leave NCCLSCOPE_PROM_PORT unset
source "$(dirname "$0")/prom_lib.sh"
prom_file_sd_setup twojobs || exit 1

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset NCCLSCOPE_PROM_PORT LOCAL_RANK OMPI_COMM_WORLD_LOCAL_RANK SLURM_LOCALID MPI_LOCALRANKID
# run_job JOB_ID: 4 ranks that run until killed. exec: `pids` then holds the launcher itself, whose ranks die
# with it; a killed subshell would leave the job running, holding the ports.
run_job() {
  NCCLSCOPE_JOB_ID=$1 NCCLSCOPE_SD_DIR="$work/sd" NCCLSCOPE_TRANSPORT=tcp NCCLSCOPE_SOCKET_IFNAME=lo \
    NCCLSCOPE_PROM_BIND=127.0.0.1 exec \
    "$sim" --ranks 4 --comms 1 --ops allreduce --sizes 64K:64K --iters 1000000 --straggle 0:20 \
    >"$work/$1.log" 2>&1
}
run_job first &
pids+=($!)
run_job second &
pids+=($!)

# check: every target up, 4 per job, 8 distinct ports; each off-scheme port is a logged fallback of that job.
check() {
  curl -sf "http://127.0.0.1:$port/api/v1/targets" | python3 -c '
import json, re, sys
work, base = sys.argv[1], int(sys.argv[2])
ts = json.load(sys.stdin)["data"]["activeTargets"]
seen = {}  # (job, local rank) -> (health, port)
for t in ts:
    l = t["labels"]
    seen[(l.get("ncclscope_job"), l.get("local_rank"))] = (t["health"], int(l["instance"].rsplit(":", 1)[1]))
want = {(j, str(r)) for j in ("first", "second") for r in range(4)}
up = sorted(k for k, v in seen.items() if v[0] == "up")
if set(up) != want or len(ts) != 8:
    sys.exit("%d targets, up: %s" % (len(ts), up))
ports = [p for _, p in seen.values()]
if len(set(ports)) != 8:
    sys.exit("ports not distinct: %s" % sorted(ports))
said = re.compile(r"metrics endpoint: port (\d+) \(NCCLSCOPE_PROM_PORT %d \+ local rank (\d)\) at 127\.0\.0\.1 in use "
                  r"by another process .*; serving on port (\d+) instead, announced in this rank.s file_sd target" % base)
moved = 0
for job in ("first", "second"):
    fallbacks = {(m[2], int(m[3])) for m in said.finditer(open(f"{work}/{job}.log", errors="replace").read())}
    for r in range(4):
        p = seen[(job, str(r))][1]
        if p == base + r:
            continue
        if (str(r), p) not in fallbacks:
            sys.exit(f"job {job} local rank {r} serves on {p}, not {base + r}, with no warning naming the fallback")
        moved += 1
# Each of the 4 ports goes to one process at most: at least one job moved every local rank.
if moved < 4:
    sys.exit(f"only {moved} fallbacks for 8 ranks on 4 ports")
print(f"8 targets up on 8 ports; {moved} ranks fell back, each named in its warning and its file_sd target")
' "$work" "$base"
}
if ! until_ok 90 check; then
  echo "FAIL: both jobs' 8 ranks are not all scraped"
  ls -l "$work/sd"; tail -5 "$work/prometheus.log"; grep -h "metrics endpoint" "$work/first.log" "$work/second.log" | head -10
  tail -n 3 "$work/first.log" "$work/second.log"; exit 1
fi
grep -h "in use by another process" "$work/first.log" "$work/second.log" | head -1
echo "PASS: two jobs on one node with the same base port: every rank scraped, the fallbacks announced"

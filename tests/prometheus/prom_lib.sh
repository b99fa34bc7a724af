# Shared by the real-Prometheus tests (sourced): a free loopback port, and Debian's Prometheus started on one.
# Another test running in parallel can take the port between our pick and Prometheus's bind, so Prometheus is
# started again on a fresh port (up to 5 tries) if its listener lost the race.

# Under `set -e` a failing command ends a test with no word of why; this names the line and command.
trap 'echo "FAIL: line $LINENO: \`$BASH_COMMAND\` exited $?" >&2' ERR

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_prometheus WORK: runs prometheus with WORK/prometheus.yml and storage in WORK/data, logging to
# WORK/prometheus.log; sets `port` and `prom_pid`, or prints why and returns 1.
start_prometheus() {
  local work=$1 candidate attempt
  port="" prom_pid=""
  mkdir -p "$work/data"
  for attempt in 1 2 3 4 5; do
    candidate=$(free_port)
    prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
      --web.listen-address="127.0.0.1:$candidate" >"$work/prometheus.log" 2>&1 &
    prom_pid=$!
    for _ in $(seq 1 100); do
      if curl -sf "http://127.0.0.1:$candidate/-/ready" >/dev/null 2>&1; then port=$candidate; return 0; fi
      kill -0 "$prom_pid" 2>/dev/null || break
      sleep 0.2
    done
    kill "$prom_pid" 2>/dev/null || true; wait "$prom_pid" 2>/dev/null || true
    echo "Prometheus did not come up on port $candidate (attempt $attempt): $(tail -1 "$work/prometheus.log")"
  done
  echo "FAIL: Prometheus would not start"; tail -20 "$work/prometheus.log"
  return 1
}

# prom_file_sd_setup NAME [RULES_GLOB]: the common start of a file_sd test: a work folder `work` (removed at exit
# with every pid in `pids`), `work/sd` for the ranks' target files, and Prometheus scraping them every second
# (evaluating RULES_GLOB's rules every second when given) on `port`.
prom_file_sd_setup() {
  work=$(mktemp -d "/tmp/ncclscope-$1-XXXXXX")
  pids=()
  trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"' EXIT
  mkdir -p "$work/sd"
  {
    echo "global: {scrape_interval: 1s, evaluation_interval: 1s}"
    [ -z "${2:-}" ] || echo "rule_files: ['$2']"
    echo "scrape_configs:"
    echo "  - job_name: ncclscope"
    echo "    file_sd_configs: [{files: ['$work/sd/*.json'], refresh_interval: 1s}]"
  } >"$work/prometheus.yml"
  start_prometheus "$work" || return 1
  pids+=("$prom_pid")
}

# until_ok SECONDS CMD…: runs CMD every 2 s until it succeeds or SECONDS have passed, printing its last output; the
# status is CMD's last. For checks of live data a loaded host may not have yet (a rate needs two scrapes in its
# window, an instant panel an operation in flight when it is scraped): they wait for their data with a generous
# deadline instead of assuming it is there by a fixed time.
until_ok() {
  local limit=$((SECONDS + $1)) out rc; shift
  while :; do
    rc=0; out=$("$@" 2>&1) || rc=$?
    if [ $rc -eq 0 ] || [ $SECONDS -ge $limit ]; then printf '%s\n' "$out"; return $rc; fi
    sleep 2
  done
}

# wait_for_traffic SECONDS: asks every second, for up to SECONDS, until the job's NIC send rate (job "ncclscope", a
# 10 s window) is above zero; sets `rate` (empty or 0 if it never was). Needs the caller's `value` (one query's
# value). It replaces a 4 s sleep and one look at a 3 s window: on a loaded host a rank serves its endpoint before
# its connections carry data, and 1 s scrapes come late, so that the window once held no two samples with traffic
# between them ("no net traffic in Prometheus").
wait_for_traffic() {
  local limit=$((SECONDS + $1))
  rate=""
  while [ $SECONDS -lt $limit ]; do
    rate=$(value 'sum(rate(ncclscope_nic_sent_bytes_total{job="ncclscope"}[10s]))' 2>/dev/null || true)
    python3 -c "import sys; sys.exit(0 if float('${rate:-0}') > 0 else 1)" && return 0
    sleep 1
  done
}

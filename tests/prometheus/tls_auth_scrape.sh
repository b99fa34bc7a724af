#!/usr/bin/env bash
# A real Prometheus (Debian's) scrapes an ncclscope-sim job whose endpoints serve HTTPS with basic auth
# (NCCLSCOPE_PROM_WEB_CONFIG, exporter-toolkit's schema), found through file_sd:
#  - job `ncclscope` (https, the test CA, the right password): both ranks up, ncclscope metrics queryable;
#  - job `wrong_password`: both targets down with a 401; job `plain_http`: down (a plain 400);
#  - curl: no credentials -> 401 with WWW-Authenticate, plain http -> not served;
#  - a certificate replaced on disk is served to new connections within about a second; a broken
#    replacement (a key that does not match) keeps the old one in service and warns;
#  - 70 clients stuck mid-handshake do not keep a scrape out;
#  - a flood of wrong passwords over TLS (16 clients, 12 s) while Prometheus scrapes: no scrape fails, and the
#    scrape durations Prometheus records during the flood are printed (p50 and max).
set -euo pipefail
sim=$1 libdir=$2
for tool in prometheus openssl curl; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/install-deps.sh installs it)"; exit 77; }
done
source "$(dirname "$0")/prom_lib.sh"
work=$(mktemp -d /tmp/ncclscope-tls-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/sd" "$work/data"
cd "$work"

# ---- a CA, a server certificate for 127.0.0.1, a bcrypt hash ----
new_cert() {  # $1: output prefix; signed by ca.crt, valid for 127.0.0.1 and localhost
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
    -keyout "$1.key" -out "$1.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile "$1.ext" \
    -out "$1.crt" 2>/dev/null
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=ncclscope test CA" \
  -keyout ca.key -out ca.crt 2>/dev/null
new_cert server
password=s3cret-$RANDOM
hash=$(python3 -W ignore -c 'import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))' \
         "$password" 2>/dev/null || true)
if [[ "$hash" != '$2'* ]] && command -v htpasswd >/dev/null; then
  hash=$(htpasswd -nbBC 10 prometheus "$password" | cut -d: -f2-)
fi
[[ "$hash" == '$2'* ]] || { echo "SKIP: no bcrypt tool (python3's crypt module or htpasswd)"; exit 77; }
cat >web.yml <<YML
# exporter-toolkit web config; relative paths are relative to this file
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  min_version: TLS12
basic_auth_users:
  prometheus: '$hash'
YML

# ---- Prometheus, three jobs on the same file_sd targets ----
cat >prometheus.yml <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: ncclscope  # the flood's scrapes must all succeed: 3 s, as a loaded CI host can stall one for 1 s
    scrape_interval: 3s
    scrape_timeout: 3s
    scheme: https
    tls_config: {ca_file: $work/ca.crt}
    basic_auth: {username: prometheus, password: '$password'}
    file_sd_configs: [{files: ['$work/sd/*.json'], refresh_interval: 1s}]
  - job_name: wrong_password  # each of its scrapes waits for a bcrypt hash: give it time on a loaded host
    scrape_interval: 3s
    scrape_timeout: 3s
    scheme: https
    tls_config: {ca_file: $work/ca.crt}
    basic_auth: {username: prometheus, password: 'not-it'}
    file_sd_configs: [{files: ['$work/sd/*.json'], refresh_interval: 1s}]
  - job_name: plain_http
    scheme: http
    file_sd_configs: [{files: ['$work/sd/*.json'], refresh_interval: 1s}]
YML
start_prometheus "$work" || exit 1
pids+=("$prom_pid")

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NCCLSCOPE_PROM_WEB_CONFIG="$work/web.yml" NCCLSCOPE_SD_DIR="$work/sd" NCCLSCOPE_PROM_PORT=0 \
  NCCLSCOPE_PROM_BIND=127.0.0.1 NCCLSCOPE_SOCKET_IFNAME=lo NCCL_DEBUG=WARN \
  "$sim" --ranks 2 --comms 1 --ops allreduce --sizes 1M:1M --iters 1000000 >sim.log 2>&1 &
pids+=($!)

query() { curl -sf --get "http://127.0.0.1:$port/api/v1/query" --data-urlencode "query=$1"; }
value() { query "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'; }
fail() { echo "FAIL: $*"; ls -l sd; tail -20 sim.log; tail -5 prometheus.log; exit 1; }

targets() { curl -sf "http://127.0.0.1:$port/api/v1/targets"; }
errors_of() {  # $1: job -> "health: lastError" per target
  targets | python3 -c 'import json,sys
for t in json.load(sys.stdin)["data"]["activeTargets"]:
    if t["labels"]["job"] == sys.argv[1]: print(t["health"] + ": " + t["lastError"])' "$1"
}

deadline=$((SECONDS + 60))
up=""
while [ $SECONDS -lt $deadline ]; do
  up=$(value 'count(up{job="ncclscope"} == 1)' 2>/dev/null || true)
  [ "$up" = "2" ] && break
  sleep 1
done
[ "$up" = "2" ] || fail "Prometheus does not see 2 healthy ncclscope targets over https + basic auth (saw '${up}'; targets: $(errors_of ncclscope | tr '\n' ';'))"
echo "Prometheus scrapes both ranks over https with basic auth"
wait_for_traffic 60
info=$(value 'count(ncclscope_build_info{job="ncclscope"})')
echo "sum(rate(ncclscope_nic_sent_bytes_total[10s])) = ${rate:-none} B/s; build_info series: ${info:-none}"
python3 -c "import sys; sys.exit(0 if float('${rate:-0}') > 0 else 1)" || fail "no net traffic in Prometheus"
[ "$info" = "2" ] || fail "expected 2 ncclscope_build_info series"

# The other two jobs: down, for the reason expected.
for _ in $(seq 1 30); do
  wrong=$(errors_of wrong_password); plain=$(errors_of plain_http)
  [ "$(echo "$wrong" | grep -c '^down: .*401')" = 2 ] && [ "$(echo "$plain" | grep -c '^down: .*400')" = 2 ] && break
  sleep 1
done
echo "wrong_password targets: $(echo "$wrong" | head -1)"
echo "plain_http targets: $(echo "$plain" | head -1)"
[ "$(echo "$wrong" | grep -c '^down: .*401')" = 2 ] || fail "wrong_password targets should be down with a 401: $wrong"
[ "$(echo "$plain" | grep -c '^down: .*400')" = 2 ] || fail "plain_http targets should be down: $plain"
[ "$(value 'count(up{job="wrong_password"} == 0)')" = 2 ] || fail "up{job=wrong_password} is not 0"

# curl against one target.
target=$(python3 -c 'import json,glob; print(json.load(open(sorted(glob.glob("sd/*.json"))[0]))[0]["targets"][0])')
echo "target $target"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert ca.crt "https://$target/metrics" -D headers.txt || true)
[ "$code" = 401 ] && grep -q 'WWW-Authenticate: Basic realm="ncclscope"' headers.txt || fail "no credentials: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$target/metrics" || true)
[ "$code" != 200 ] || fail "plain http to the TLS port was served"
echo "curl: no credentials -> 401 with WWW-Authenticate; plain http -> $code"

# Certificate reload: a new certificate (another serial) is served to new connections within ~1 s.
serial() { openssl s_client -connect "$target" -CAfile ca.crt </dev/null 2>/dev/null | openssl x509 -noout -serial; }
old=$(serial)
new_cert next
cp next.key server.key.tmp && cp next.crt server.crt.tmp && mv server.key.tmp server.key && mv server.crt.tmp server.crt
want=$(openssl x509 -in server.crt -noout -serial)
got=""
deadline=$((SECONDS + 30))  # ~1 s when quiet; generous for a loaded host
while [ $SECONDS -lt $deadline ]; do
  sleep 0.2
  got=$(serial)
  [ "$got" = "$want" ] && break
done
[ "$got" = "$want" ] || fail "the replaced certificate is not served ($old -> $got, want $want)"
echo "certificate reloaded: $old -> $got"
# A broken replacement (a key that does not match) keeps the served certificate and warns.
new_cert broken
cp broken.key server.key.tmp && mv server.key.tmp server.key
sleep 1.5
got=$(serial)
[ "$got" = "$want" ] || fail "a broken key replaced the served certificate ($got, want $want)"
for _ in $(seq 1 150); do grep -q "keeping the previous certificate" sim.log && break; sleep 0.2; done  # up to 30 s
grep -q "keeping the previous certificate" sim.log || fail "no warning about the broken key"
echo "broken key: still serving $got; warned: $(grep -m1 -o 'the changed TLS files do not load.*' sim.log | cut -c1-140)"
cp next.key server.key.tmp && mv server.key.tmp server.key  # repaired

# 70 clients stuck mid-handshake (a partial ClientHello each, more than the 64 connections the endpoint
# keeps) do not keep a later scrape out. The scrape starts once all 70 are in: one racing them would be
# the oldest connection when the 65th arrives, and eviction takes the oldest (a loaded host can start
# python more than a second late).
python3 - "$target" stuck.ready <<'PY' &
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
socks = []
for _ in range(70):
    s = socket.create_connection((host, int(port)))
    s.sendall(b"\x16\x03\x01\x02")  # a handshake record header, and then nothing
    socks.append(s)
open(sys.argv[2], "w").close()
time.sleep(3)
PY
stuck=$!
for _ in $(seq 1 100); do [ -e stuck.ready ] && break; sleep 0.1; done  # up to 10 s
[ -e stuck.ready ] || fail "the 70 stuck clients did not connect within 10 s"
code=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 --cacert ca.crt -u "prometheus:$password" \
         "https://$target/metrics" || true)
wait $stuck || true
[ "${code%% *}" = 200 ] || fail "a scrape with 70 clients stuck mid-handshake: $code"
echo "scrape with 70 clients stuck mid-handshake: HTTP ${code% *} in ${code#* } s"

# A flood of wrong passwords over TLS while Prometheus keeps scraping.
t0=$(date +%s)
python3 - "$target" ca.crt <<'PY' || fail "the TLS flood"
import base64, socket, ssl, sys, threading, collections, itertools, time
host, port = sys.argv[1].rsplit(":", 1)
ctx = ssl.create_default_context(cafile=sys.argv[2])
counts = collections.Counter()
lock = threading.Lock()
n = itertools.count()
end = time.monotonic() + 12  # long enough for a few of Prometheus's 3 s scrapes of each rank
def client():
    for i in n:
        if i >= 1000 and time.monotonic() > end:
            break
        auth = base64.b64encode(b"prometheus:guess%d" % i).decode()
        try:
            with socket.create_connection((host, int(port)), timeout=10) as s, ctx.wrap_socket(s, server_hostname=host) as t:
                t.sendall(("GET /metrics HTTP/1.0\r\nAuthorization: Basic %s\r\n\r\n" % auth).encode())
                status = t.recv(64).split(b" ")[1].decode()
        except Exception as e:
            status = type(e).__name__
        with lock:
            counts[status] += 1
threads = [threading.Thread(target=client) for _ in range(16)]
for t in threads: t.start()
for t in threads: t.join()
total = sum(counts.values())
print("TLS flood: %d wrong-password requests in 12 s or more:" % total, dict(counts))
# On a host this loaded a few handshakes can outlast their 2 s deadline; nearly all must be answered.
if counts["401"] + counts["429"] < 0.95 * total:
    print("FAIL: too few flood requests answered 401 or 429")
    sys.exit(1)
PY
sleep 2
window=$(( $(date +%s) - t0 ))s
stats=$(value "max(max_over_time(scrape_duration_seconds{job=\"ncclscope\"}[$window]))")
p50=$(value "max(quantile_over_time(0.5, scrape_duration_seconds{job=\"ncclscope\"}[$window]))")
downs=$(value "sum(count_over_time(up{job=\"ncclscope\"}[$window])) - sum(sum_over_time(up{job=\"ncclscope\"}[$window]))")
echo "scrapes during the flood (${window}): p50 ${p50:-?} s, max ${stats:-?} s, failed scrapes ${downs:-?}"
[ "${downs:-1}" = 0 ] || fail "a scrape failed during the flood"
echo "PASS: Prometheus over TLS + basic auth"

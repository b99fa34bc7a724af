#!/usr/bin/env bash
# Regenerates rules/*.yml, dashboards/*.json and deploy/kubernetes/prometheusrule.yaml from the mixin
# (mixin/generate.jsonnet, parameters in mixin/config.libsonnet). Usage: scripts/gen-mixin.sh [OUTDIR [jsonnet args...]]
#   scripts/gen-mixin.sh                                   # the checked-in files, in place
#   scripts/gen-mixin.sh /tmp/out --tla-code 'config={scrapeIntervalSeconds: 60, scrapeJob: "gpu"}'
#   scripts/gen-mixin.sh /tmp/out --tla-code-file config=site.libsonnet
# OUTDIR gets rules/, dashboards/ and deploy/kubernetes/ (default: the repository root). Needs jsonnet (Debian
# package jsonnet).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root}
shift || true
command -v jsonnet >/dev/null || { echo "gen-mixin: jsonnet is not installed (apt-get install jsonnet)" >&2; exit 2; }
mkdir -p "$out/rules" "$out/dashboards" "$out/deploy/kubernetes"
jsonnet -J "$root/mixin" -S -m "$out" "$@" "$root/mixin/generate.jsonnet" >/dev/null
echo "gen-mixin: wrote $out/rules, $out/dashboards and $out/deploy/kubernetes/prometheusrule.yaml"

#!/usr/bin/env bash
# with_victoria_metrics.sh CACHE_DIR COMMAND...: runs COMMAND with --vm-bin DIR appended, DIR holding Debian 13's
# VictoriaMetrics binaries (scripts/fetch-victoria-metrics.sh, kept in CACHE_DIR); a skip, with the reason, where
# the package cannot be fetched.
set -euo pipefail
cache=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
if ! bin=$("$here/../../scripts/fetch-victoria-metrics.sh" "$cache"); then
  echo "SKIP: Debian 13's victoria-metrics package could not be fetched into $cache (no network to deb.debian.org?)"
  exit 77
fi
exec "$@" --vm-bin "$bin"

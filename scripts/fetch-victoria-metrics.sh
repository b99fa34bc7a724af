#!/usr/bin/env bash
# Unpacks VictoriaMetrics (victoria-metrics, vmagent, vmalert, vmalert-tool) from Debian 13's package into DIR
# (default build/victoria-metrics) and prints the directory holding the binaries. Debian 13 is the current
# stable and its 1.112 is what sites run now (Debian 12's 1.79 predates several of the flags our recipes use).
# Nothing is installed: a private apt list, `apt-get download`, `dpkg-deb -x`. Run again, it reuses DIR.
set -euo pipefail
dir=$(mkdir -p "${1:-build/victoria-metrics}" && cd "${1:-build/victoria-metrics}" && pwd)
bin=$dir/root/usr/bin
if [ -x "$bin/vmalert" ]; then echo "$bin"; exit 0; fi
exec 9>"$dir.lock"
flock 9
if [ ! -x "$bin/vmalert" ]; then
  apt=$dir/apt
  mkdir -p "$apt/lists/partial" "$apt/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
    >"$apt/sources.list"
  opts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt" -o APT::Sandbox::User=root -q)
  echo "fetch-victoria-metrics: downloading Debian 13's victoria-metrics into $dir (one time, ~40 MB)" >&2
  apt-get "${opts[@]}" update >/dev/null
  (cd "$apt" && apt-get "${opts[@]}" download victoria-metrics >/dev/null)
  rm -rf "$dir/root.part"
  dpkg-deb -x "$apt"/victoria-metrics_*.deb "$dir/root.part"
  dpkg-deb -f "$apt"/victoria-metrics_*.deb Version >"$dir/version"  # Debian's build prints no -version
  rm -rf "$apt"
  mv "$dir/root.part" "$dir/root"  # whole or absent: the check above takes no lock
fi
echo "fetch-victoria-metrics: Debian's victoria-metrics $(cat "$dir/version")" >&2
echo "$bin"

# The init container's entrypoint (busybox sh): copies /ncclscope (lib/ with the plugin and its profiler link,
# bin/ with ncclscope-analyze and ncclscope-dump.sh) into DEST, a volume the training container mounts, and
# checks every copied file against the checksums taken when the image was built.
set -eu
dest=${1:-}
if [ -z "$dest" ] || [ "$#" -ne 1 ]; then
  echo "usage: ncclscope-install.sh DEST (a writable directory, e.g. an emptyDir)" >&2
  exit 2
fi
if [ ! -d "$dest" ] || [ ! -w "$dest" ]; then
  echo "ncclscope-install: $dest is not a writable directory: mount a volume (an emptyDir) there" >&2
  exit 2
fi
# -R -P: the profiler's name stays a link to the net plugin; no -p, so a non-root user copies without chown.
cp -R -P -f /ncclscope/. "$dest/"
cd "$dest"
if ! sha256sum -c -s SHA256SUMS; then
  sha256sum -c SHA256SUMS >&2 || true
  echo "ncclscope-install: the copies in $dest differ from the image's files" >&2
  exit 1
fi
echo "ncclscope-install: $(wc -l < SHA256SUMS) files copied into $dest and verified (LD_LIBRARY_PATH=$dest/lib)"

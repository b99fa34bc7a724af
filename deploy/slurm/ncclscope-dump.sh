#!/usr/bin/env bash
# ncclscope-dump [JOB_ID | VAR=VALUE] (the package installs this file as /usr/bin/ncclscope-dump): makes every
# ncclscope rank of Slurm job JOB_ID (default: $SLURM_JOB_ID) on this node write its flight-recorder dumps, by
# sending it the dump signal (NCCLSCOPE_DUMP_SIGNAL, default SIGUSR2). VAR=VALUE selects by another variable of
# the ranks' environment instead (in a Kubernetes pod: NCCL_PROFILER_PLUGIN=ncclscope, from docs/kubernetes.md's
# ConfigMap).
# Only processes that are this user's, have ncclscope loaded, were started with that variable, and catch the
# signal are signalled: a launcher (torchrun's agent), a shell wrapper or a worker spawned with the signal's
# default action, which is to terminate, is left alone. Run it on every node of the job (docs/slurm.md):
#   srun --overlap --jobid=JOB_ID --ntasks-per-node=1 ncclscope-dump JOB_ID
# An application that catches the signal itself gets it too (ncclscope then leaves the signal to it and says
# so in its init log; choose the other one with NCCLSCOPE_DUMP_SIGNAL).
# Exit status: 0 at least one process signalled, 1 none, 2 usage error.
set -u
job=${1:-${SLURM_JOB_ID:-}}
if [ -z "$job" ] || [ "$job" = "-h" ] || [ "$job" = "--help" ]; then
  echo "usage: ncclscope-dump JOB_ID | VAR=VALUE (JOB_ID defaults to SLURM_JOB_ID inside a job)" >&2
  exit 2
fi
case $job in
  *=*) selector=$job ;;
  *) selector=SLURM_JOB_ID=$job ;;
esac
sig=${NCCLSCOPE_DUMP_SIGNAL:-SIGUSR2}
sig=${sig^^}
sig=${sig#SIG}
case $sig in
  USR1) number=10 ;;
  USR2) number=12 ;;
  *) echo "ncclscope-dump.sh: NCCLSCOPE_DUMP_SIGNAL='$sig': no dump signal to send" >&2; exit 2 ;;
esac
sent=0
for dir in /proc/[0-9]*; do
  pid=${dir#/proc/}
  [ -O "$dir" ] || continue
  grep -qsE 'libnccl-(net|profiler)-ncclscope' "$dir/maps" || continue
  tr '\0' '\n' <"$dir/environ" 2>/dev/null | grep -qxF "$selector" || continue
  caught=$(awk '/^SigCgt:/ {print $2}' "$dir/status" 2>/dev/null)
  if [ -z "$caught" ] || (((16#$caught >> (number - 1) & 1) == 0)); then
    echo "$(hostname): pid $pid does not catch SIG$sig (NCCL not initialised yet, or another" \
      "NCCLSCOPE_DUMP_SIGNAL there); skipped"
    continue
  fi
  kill -s "$sig" "$pid" 2>/dev/null && sent=$((sent + 1))
done
echo "$(hostname): SIG$sig sent to $sent ncclscope process(es) with $selector"
[ "$sent" -gt 0 ]

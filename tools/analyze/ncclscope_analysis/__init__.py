"""ncclscope-analyze's library: post-mortem of an NCCL job from the ncclscope dumps of all its ranks.

schema      the type of every field of a dump (v1, v2 summary and recorder members), checked on load
dumps       finds and reads dump files (regular files only; summaries in parallel workers), groups them by
            communicator
progress    what one rank had issued and what it had in flight, per collective function and per p2p peer
waits       the dumps' `wait` field: who each stuck operation waits on; the rank (kernel stuck, not launched,
            unresponsive) or link a hang where every rank joined resolves to; the verdicts' classes
hang        missing or dead ranks, ranks behind, mismatched collectives, ranks stuck inside one operation
stragglers  the rank that arrives last at collectives or p2p pairs: host clock, kernel durations or realtime
chains      root causes across communicators (culprits) and the ranks waiting on them (victims)
summary     per-communicator table: operations, bytes, bus bandwidth, drops
trace       every rank's flight recorder as one Chrome/Perfetto trace
report      verdicts, text and JSON output
cli         the command line: arguments, output, exit status (never a traceback)
version     the version --version prints (written in by the build)
"""

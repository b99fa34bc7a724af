"""ncclscope-analyze's library: post-mortem of an NCCL job from the ncclscope dumps of all its ranks.

schema      the type of every field of an ncclscope.comm.v1 dump, checked on load
dumps       finds and loads dump files (regular files only) and groups them by communicator
progress    what one rank had issued and what it had in flight, per collective function and per p2p peer
hang        missing ranks, ranks behind, ranks stuck inside one operation
stragglers  the rank that arrives last at collectives, by host clock or by kernel durations
summary     per-communicator table: operations, bytes, bus bandwidth, drops
trace       every rank's flight recorder as one Chrome/Perfetto trace
report      verdicts, text and JSON output
cli         the command line: arguments, output, exit status (never a traceback)
"""

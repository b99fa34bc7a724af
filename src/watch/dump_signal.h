// On-demand dumps: NCCLSCOPE_DUMP_SIGNAL (default SIGUSR2) makes every live communicator write its
// flight-recorder dump, e.g. `pkill -USR2 -f train.py` on a job that seems stuck. The handler only sets
// an atomic flag (async-signal-safe); the stall-watch thread sees it within one tick and dumps. We never
// take over a handler the application installed: only SIG_DFL (which would kill the process) is replaced.
#ifndef NCCLSCOPE_WATCH_DUMP_SIGNAL_H_
#define NCCLSCOPE_WATCH_DUMP_SIGNAL_H_

namespace ncclscope::profiler {

// Installs the handler once per process, as configured. Safe to call from every Start().
void InstallDumpSignal();

// True once per signal received (clears the request).
bool TakeDumpRequest();

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_WATCH_DUMP_SIGNAL_H_

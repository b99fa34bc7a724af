// A sample of this host's clocks for a dump: CLOCK_MONOTONIC read just before and just after CLOCK_REALTIME,
// and the kernel's error estimate of the realtime clock (adjtimex, read-only). An analyzer maps the dump's
// monotonic times to wall-clock time with it, and lines up hosts within the stated error. Thread-safe.
#ifndef NCCLSCOPE_EXPORTERS_DUMP_CLOCK_SAMPLE_H_
#define NCCLSCOPE_EXPORTERS_DUMP_CLOCK_SAMPLE_H_

#include <cstdint>

namespace ncclscope::dump {

struct ClockSample {
  uint64_t mono_before_ns = 0;
  uint64_t realtime_ns = 0;
  uint64_t mono_after_ns = 0;
  bool has_error = false;    // adjtimex answered (it may not, e.g. under a seccomp profile)
  int64_t esterror_ns = 0;   // the kernel's estimated error of the realtime clock
  int64_t maxerror_ns = 0;   // and its maximum error
  bool synced = false;       // not TIME_ERROR and not STA_UNSYNC
};

ClockSample SampleClock();

}  // namespace ncclscope::dump

#endif  // NCCLSCOPE_EXPORTERS_DUMP_CLOCK_SAMPLE_H_

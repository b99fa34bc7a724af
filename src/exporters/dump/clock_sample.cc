#include "exporters/dump/clock_sample.h"

#include <sys/timex.h>

#include "common/clock.h"

namespace ncclscope::dump {

ClockSample SampleClock() {
  ClockSample c;
  c.mono_before_ns = MonotonicNs();
  c.realtime_ns = RealtimeNs();
  c.mono_after_ns = MonotonicNs();
  struct timex tx = {};  // modes 0: read only, allowed without privileges
  const int state = adjtimex(&tx);
  if (state != -1) {
    c.has_error = true;
    c.esterror_ns = static_cast<int64_t>(tx.esterror) * 1000;  // µs in the kernel
    c.maxerror_ns = static_cast<int64_t>(tx.maxerror) * 1000;
    c.synced = state != TIME_ERROR && (tx.status & STA_UNSYNC) == 0;
  }
  return c;
}

}  // namespace ncclscope::dump

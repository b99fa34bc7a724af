// Host clocks. Durations come from the monotonic clock; wall-clock time is used only to label dumps
// and to line up ranks. Both are vDSO calls (~20 ns), safe on any thread and in CUDA host callbacks.
#ifndef NCCLSCOPE_COMMON_CLOCK_H_
#define NCCLSCOPE_COMMON_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace ncclscope {

inline uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_CLOCK_H_

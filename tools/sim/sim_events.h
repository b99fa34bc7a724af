// Shared by the communicator's app-side and proxy-side event emission: which activation-mask bits make NCCL
// emit each event type (a child type turns on its ancestors, docs/nccl-abi.md#profiler-events), a zeroed NCCL
// descriptor, and the "GPU" timer. Stateless; safe from any thread.
#ifndef NCCLSCOPE_TOOLS_SIM_SIM_EVENTS_H_
#define NCCLSCOPE_TOOLS_SIM_SIM_EVENTS_H_

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "clock_offset.h"
#include "ncclscope/abi/profiler.h"

namespace ncclscope::sim {

// Which mask bits make NCCL emit each event type (a child type turns on its ancestors),
// docs/nccl-abi.md#profiler-events.
constexpr int kNetPlugin = NCCLSCOPE_PROFILE_NET_PLUGIN;
constexpr int kStepTrig = NCCLSCOPE_PROFILE_PROXY_STEP | kNetPlugin;
constexpr int kProxyOpTrig = NCCLSCOPE_PROFILE_PROXY_OP | kStepTrig;
constexpr int kKernelCh = NCCLSCOPE_PROFILE_KERNEL_CH;
constexpr int kCollTrig = NCCLSCOPE_PROFILE_COLL | kProxyOpTrig | kKernelCh;
constexpr int kP2pTrig = NCCLSCOPE_PROFILE_P2P | kProxyOpTrig | kKernelCh;
constexpr int kGroupTrig = NCCLSCOPE_PROFILE_GROUP | kCollTrig | kP2pTrig;
constexpr int kCollApiTrig = NCCLSCOPE_PROFILE_COLL_API | kCollTrig;
constexpr int kP2pApiTrig = NCCLSCOPE_PROFILE_P2P_API | kP2pTrig;
constexpr int kGroupApiTrig = NCCLSCOPE_PROFILE_GROUP_API | kCollApiTrig | kP2pApiTrig |
                              NCCLSCOPE_PROFILE_KERNEL_LAUNCH | kGroupTrig;

// The GPU's %globaltimer: nanoseconds that look like Unix-epoch time, read on the "device" side; shifted by
// this rank's --clock-offset, as a GPU of a host whose clock disagrees with the others'.
inline uint64_t GlobalTimer() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec) +
         static_cast<uint64_t>(ClockOffsetNs());
}

inline ncclscope_profiler_descr_v6_t Descr(uint64_t type, void* parent, int rank) {
  ncclscope_profiler_descr_v6_t d;
  memset(&d, 0, sizeof(d));
  d.type = type;
  d.parentObj = parent;
  d.rank = rank;
  return d;
}

// Splits [ptr, ptr+bytes) into step-sized slices, element aligned.
template <typename Fn>
void ForSlices(size_t bytes, size_t step, Fn fn) {
  for (size_t off = 0; off < bytes; off += step) fn(off, std::min(step, bytes - off));
}

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_SIM_EVENTS_H_

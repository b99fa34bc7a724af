// The stall check the stall watch runs on every live communicator.
#include "profiler/comm_context.h"

#include "common/log.h"

namespace ncclscope::profiler {

bool CommContext::CheckStall(uint64_t now_ns, uint64_t timeout_ns, CommSnapshot* out) {
  uint64_t oldest_start = UINT64_MAX, oldest_arrival = 0, oldest_seq = 0;
  Func oldest_func = Func::kOther;
  for (uint32_t i = 0; i < ops_pool_.size(); ++i) {
    const Op& op = ops_pool_.at(i);
    if (op.state.load(std::memory_order_acquire) != Op::kInFlight) continue;
    uint64_t st = op.start_ns.Get();
    if (st != 0 && st < oldest_start) {
      oldest_start = st;
      oldest_arrival = op.arrival.Get();
      oldest_seq = op.seq.Get();
      oldest_func = static_cast<Func>(op.func.Get());
    }
  }
  if (oldest_start == UINT64_MAX || now_ns < oldest_start || now_ns - oldest_start < timeout_ns) {
    stalled_.store(false, std::memory_order_relaxed);
    return false;
  }
  if (stalled_arrival_.load(std::memory_order_relaxed) == oldest_arrival && stalled_.load(std::memory_order_relaxed)) {
    return false;  // already reported this operation
  }
  stalled_arrival_.store(oldest_arrival, std::memory_order_relaxed);
  stalled_.store(true, std::memory_order_relaxed);
  NCCLSCOPE_WARN(subsys::kProfile,
                 "ncclscope: communicator 0x%016llx (%s) rank %d stalled: %s seq %llu in flight for %.1f s",
                 static_cast<unsigned long long>(info_.comm_hash), info_.has_name ? info_.name.c_str() : "-",
                 info_.rank, FuncName(oldest_func), static_cast<unsigned long long>(oldest_seq),
                 static_cast<double>(now_ns - oldest_start) / 1e9);
  Fill(out);
  return true;
}

}  // namespace ncclscope::profiler

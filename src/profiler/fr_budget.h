// The flight recorders' share of a process's memory. Each communicator's recorder is allocated and touched at
// its init (NCCLSCOPE_FR_DEPTH records of FlightRecorder::BytesPerRecord() each), so a large depth times many
// communicators can take a host's memory from the job: NCCLSCOPE_FR_DEPTH=1048576 is ~201 MB per communicator
// per rank. NCCLSCOPE_FR_MEMORY caps what all of a process's recorders take together: a communicator whose
// depth would go past it gets a smaller one (a power of two, so the event path keeps its mask; never below
// kMinFrDepth), with a warning that names the bytes.
// Thread-safe and lock-free (one atomic counter); used at communicator init and destruction only.
#ifndef NCCLSCOPE_PROFILER_FR_BUDGET_H_
#define NCCLSCOPE_PROFILER_FR_BUDGET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ncclscope::profiler {

// The smallest depth a recorder is cut to (NCCLSCOPE_FR_DEPTH's minimum): a dump of a hung communicator needs
// its last operations. Past the budget, recorders get this depth anyway (a few KB each) rather than none.
inline constexpr int kMinFrDepth = 16;

// The depth a new recorder gets when `used_bytes` of `budget_bytes` are taken: `requested` if it fits, else the
// largest power of two that does, at least kMinFrDepth.
int DepthWithinBudget(int requested, size_t record_bytes, size_t used_bytes, size_t budget_bytes);

class FlightRecorderBudget {
 public:
  // The recorders of this process (CommContext reserves and releases here).
  static FlightRecorderBudget& Process();

  // Reserves a recorder's records and returns its depth (DepthWithinBudget); warns when the depth is cut, once
  // per process as a warning and then at INFO, naming the communicator, the bytes asked and those given.
  int Reserve(int requested, size_t budget_bytes, uint64_t comm_hash);
  // Returns what Reserve gave (`depth`) when the recorder is freed.
  void Release(int depth);
  size_t used_bytes() const { return used_.load(std::memory_order_relaxed); }

 private:
  std::atomic<size_t> used_{0};
  std::atomic<bool> warned_{false};
};

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_PROFILER_FR_BUDGET_H_

// StallWatch: the process-wide watchdog thread, a runtime Service. Every tick (a quarter of a
// second, so a stall is reported well within 1 s of the threshold) it asks the registry for
// communicators whose oldest in-flight operation is older than NCCLSCOPE_STALL_TIMEOUT_S, logs one
// warning per stalled operation (in CommContext::CheckStall) and runs the dump hooks with that
// communicator's snapshot. Stop() wakes the thread through a condition variable and joins it, so the
// last finalize returns within milliseconds. Start/Stop are called by the runtime, never concurrently.
#ifndef NCCLSCOPE_WATCH_STALL_WATCH_H_
#define NCCLSCOPE_WATCH_STALL_WATCH_H_

#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/snapshot.h"
#include "common/runtime.h"

namespace ncclscope::profiler {

class StallWatch final : public Service {
 public:
  const char* name() const override { return "stall-watch"; }
  void Start() override;
  void Stop() override;

  // Tests: ticks completed since the process started, and a way to shorten the tick.
  uint64_t ticks() const;
  void SetTickForTest(uint64_t tick_ns);
  static StallWatch& Instance();

 private:
  void Run();
  void SpreadCreates();
  // Waits on cv_ for up to `timeout` unless a stop is already asked; Stop() cuts the wait short.
  // Returns whether a stop has been asked.
  bool WaitUnlessStopped(absl::Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void DumpOtherComms(const std::vector<CommSnapshot>& stalled);
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t ticks_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t tick_ns_ ABSL_GUARDED_BY(mu_) = 250'000'000;
  std::thread thread_;
};

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_WATCH_STALL_WATCH_H_

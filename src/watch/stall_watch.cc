#include "watch/stall_watch.h"

#include <pthread.h>

#include <vector>

#include "absl/time/time.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/params.h"
#include "common/random.h"
#include "core/registry.h"
#include "common/tsan_lock.h"
#include "watch/dump_signal.h"

namespace ncclscope::profiler {

StallWatch& StallWatch::Instance() {
  static StallWatch* watch = new StallWatch();  // -z nodelete global; never destroyed
  return *watch;
}

void StallWatch::Start() {
  {
    AnnotatedLock lock(&mu_);
    stop_ = false;
  }
  InstallDumpSignal();
  thread_ = std::thread([this] { Run(); });
}

void StallWatch::Stop() {
  {
    AnnotatedLock lock(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

uint64_t StallWatch::ticks() const {
  AnnotatedLock lock(&mu_);
  return ticks_;
}

void StallWatch::SetTickForTest(uint64_t tick_ns) {
  AnnotatedLock lock(&mu_);
  tick_ns_ = tick_ns;
}

// A process stuck in one communicator is often why others wait in another (a tensor-parallel rank stuck in
// its TP all-reduce never joins the data-parallel one): its other communicators are dumped too, so the
// post-mortem sees what it last issued there and can follow the chain to the stuck rank.
void StallWatch::DumpOtherComms(const std::vector<CommSnapshot>& stalled) {
  const ProcessSnapshot all = CommRegistry::Instance().Snapshot();
  for (const CommSnapshot& snap : all.comms) {
    bool dumped = false;
    for (const CommSnapshot& s : stalled) dumped |= s.comm_hash == snap.comm_hash && s.rank == snap.rank;
    if (!dumped && !snap.stalled) CommRegistry::Instance().RunDumpHooks(snap, DumpReason::kStall);
  }
}

// A stall is seen by every rank of a job within one tick: one random 0-50 ms before each batch of dumps spreads
// a whole job's file creates on shared storage. Once per batch, not per dump: a process with many communicators
// would otherwise hold a last finalize behind 25 ms per communicator. A stop cuts the wait short.
void StallWatch::SpreadCreates() {
  AnnotatedLock lock(&mu_);
  WaitUnlessStopped(absl::Microseconds(static_cast<int64_t>(RandomU64() % 50001)));
}

// The caller holds mu_ across the call so that what it reads or bumps next (tick_ns_, ticks_) stays in the
// same critical section as the wait. WaitWithTimeout unlocks mu_ behind TSan's back: the release/acquire
// pair tells it so, as AnnotatedLock does for the lock itself.
bool StallWatch::WaitUnlessStopped(absl::Duration timeout) {
  if (!stop_) {
    NCCLSCOPE_TSAN_RELEASE(&mu_);
    cv_.WaitWithTimeout(&mu_, timeout);
    NCCLSCOPE_TSAN_ACQUIRE(&mu_);
  }
  return stop_;
}

void StallWatch::Run() {
  pthread_setname_np(pthread_self(), "ncclscope-stall");
  const uint64_t timeout_ns = static_cast<uint64_t>(Params().Int(ParamId::kStallTimeoutS)) * 1'000'000'000ull;
  for (;;) {
    {
      AnnotatedLock lock(&mu_);
      if (WaitUnlessStopped(absl::Nanoseconds(tick_ns_))) return;
      ++ticks_;
    }
    // Dumps run outside every lock of ours except the hooks' own.
    CommRegistry::StallChanges changes = CommRegistry::Instance().CollectStalls(MonotonicNs(), timeout_ns);
    const std::vector<CommSnapshot>& stalled = changes.stalled;
    const bool requested = TakeDumpRequest();
    if (!stalled.empty() || !changes.recovered.empty() || requested) SpreadCreates();
    for (const CommSnapshot& snap : stalled) CommRegistry::Instance().RunDumpHooks(snap, DumpReason::kStall);
    if (!stalled.empty()) DumpOtherComms(stalled);
    for (const CommSnapshot& snap : changes.recovered) {
      CommRegistry::Instance().RunDumpHooks(snap, DumpReason::kRecovered);
    }
    if (requested) {
      const ProcessSnapshot all = CommRegistry::Instance().Snapshot();
      for (const CommSnapshot& snap : all.comms) CommRegistry::Instance().RunDumpHooks(snap, DumpReason::kRequest);
      NCCLSCOPE_INFO(subsys::kProfile, "dumped %zu communicators on request", all.comms.size());
    }
  }
}

}  // namespace ncclscope::profiler

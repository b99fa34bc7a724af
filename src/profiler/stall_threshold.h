// When an in-flight operation is abnormal rather than just old: the communicator's own recent history per
// function and power-of-four size class. A class whose operations recently took up to T is flagged after
// factor × T, never before the floor and never later than the cap. A class never seen completing gets a third of
// the cap on a communicator's first operations (they may include lazy connection set-up), a sixth once others
// have completed (a new algorithm may still connect). docs/stall-detection.md gives the false-alarm argument.
//
// Record runs on the completing thread, Threshold on the stall watch's and scrapes': relaxed atomics, and a
// lost update between two completing threads only makes "recent" a little less recent.
#ifndef NCCLSCOPE_PROFILER_STALL_THRESHOLD_H_
#define NCCLSCOPE_PROFILER_STALL_THRESHOLD_H_

#include <algorithm>
#include <cstdint>

#include "core/op_types.h"
#include "core/relaxed.h"

namespace ncclscope::profiler {

struct StallPolicy {
  uint64_t floor_ns = 2'000'000'000;
  uint64_t cap_ns = 30'000'000'000;
  uint64_t factor = 8;
};

class StallHistory {
 public:
  // An operation of `bytes` that was in flight for `ns` (its start to its completion, host clock).
  void Record(Func f, uint64_t bytes, uint64_t ns) {
    RelaxedAtomic<uint32_t>& cell = typical_us_[Index(f)][Class(bytes)];
    const uint32_t old = cell.Get();
    // A decaying maximum: one slow operation raises it at once, and it halves after about 44 operations of
    // the class that are all faster, so a one-off slow period is forgotten but a periodic one is not.
    const uint32_t decayed = old - old / 64;
    const uint64_t us = std::min<uint64_t>((ns + 999) / 1000, UINT32_MAX);
    const uint32_t next = std::max<uint32_t>(decayed, static_cast<uint32_t>(us));
    if (next != old) cell.Set(next);
    if (!warm_.Get()) warm_.Set(true);
  }
  // How long an operation of this function and size may stay in flight before it counts as stalled.
  uint64_t Threshold(Func f, uint64_t bytes, const StallPolicy& p) const {
    const uint64_t typical_ns = uint64_t{typical_us_[Index(f)][Class(bytes)].Get()} * 1000;
    const uint64_t cold = warm_.Get() ? p.cap_ns / 6 : p.cap_ns / 3;
    const uint64_t want = typical_ns == 0 ? cold : typical_ns * p.factor;
    return std::min(p.cap_ns, std::max(p.floor_ns, want));
  }
  // Tests: the recent maximum of a class, in µs (0: never completed).
  uint32_t TypicalUs(Func f, uint64_t bytes) const { return typical_us_[Index(f)][Class(bytes)].Get(); }

 private:
  static constexpr int kClasses = 32;  // powers of four up to 2^62 bytes
  static int Index(Func f) { return std::min<int>(static_cast<int>(f), static_cast<int>(Func::kCount) - 1); }
  static int Class(uint64_t bytes) { return std::min(SizeClass(bytes) / 2, kClasses - 1); }
  RelaxedAtomic<uint32_t> typical_us_[static_cast<int>(Func::kCount)][kClasses];
  RelaxedAtomic<bool> warm_;  // some operation completed
};

// How long this communicator's connections normally stay still with requests pending (a receive waiting for its
// peer's data, a send for its clear-to-send) before one completes, sampled at every stall check. Stillness is
// normal where a healthy job waits for a late rank (prometheus_hang_live's job whose operations wait 6 s each), so
// it only counts once it is abnormal for this communicator: factor × the longest still stretch that ended in
// progress (a decaying maximum over ended stretches, as StallHistory's), and only once kWarmStretches have ended.
// It catches a frozen peer under long operations that keep moving data (16 ranks of 4 MiB: each takes seconds, so
// the duration threshold is 8 × that) at the floor. Sample runs on the stall watch's thread only; the reads are
// relaxed atomics from any thread.
class StillnessHistory {
 public:
  static constexpr uint32_t kWarmStretches = 16;

  // One stall check's view at now_ns: how long the connections have been still, and whether requests are pending.
  // A progress newer than the last check's ended the still stretch that check saw, at least that long.
  void Sample(uint64_t now_ns, uint64_t quiet_ns, bool pending) {
    const uint64_t progress_ns = now_ns - std::min(now_ns, quiet_ns);
    if (last_pending_ && progress_ns > last_progress_ns_) {
      const uint32_t old = learned_us_.Get();
      const uint64_t us = std::min<uint64_t>((last_quiet_ns_ + 999) / 1000, UINT32_MAX);
      learned_us_.Set(std::max<uint32_t>(old - old / 64, static_cast<uint32_t>(us)));
      if (ended_.Get() < kWarmStretches) ended_.Set(ended_.Get() + 1);
    }
    last_progress_ns_ = progress_ns;
    last_quiet_ns_ = quiet_ns;
    last_pending_ = pending;
  }
  bool Warm() const { return ended_.Get() >= kWarmStretches; }
  // Still this long with requests pending is abnormal: never before the floor, never later than the cap.
  uint64_t Limit(const StallPolicy& p) const {
    return std::min(p.cap_ns, std::max(p.floor_ns, uint64_t{learned_us_.Get()} * 1000 * p.factor));
  }
  // Tests: the longest recent still stretch that ended, in µs.
  uint32_t LearnedUs() const { return learned_us_.Get(); }

 private:
  uint64_t last_progress_ns_ = 0, last_quiet_ns_ = 0;
  bool last_pending_ = false;
  RelaxedAtomic<uint32_t> learned_us_;
  RelaxedAtomic<uint32_t> ended_;
};

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_PROFILER_STALL_THRESHOLD_H_

// StillnessHistory: what a communicator's connections normally go through still, learned from the stall checks.
#include <gtest/gtest.h>

#include "profiler/stall_threshold.h"

namespace ncclscope::profiler {
namespace {

constexpr uint64_t kMs = 1'000'000;

// `n` still stretches of `still_ms` with requests pending, each ended by progress, seen by checks every 250 ms.
uint64_t Stretches(StillnessHistory* h, uint64_t now, int n, uint64_t still_ms) {
  for (int i = 0; i < n; ++i) {
    h->Sample(now, 0, true);  // progress just now
    now += still_ms * kMs;
    h->Sample(now, still_ms * kMs, true);
    now += kMs;
  }
  h->Sample(now, 0, true);  // the last one ends too
  return now;
}

TEST(Stillness, WarmsAfterEnoughEndedStretchesAndLimitsAtFactorTimesTheLongest) {
  StillnessHistory h;
  StallPolicy p;  // floor 2 s, factor 8, cap 30 s
  uint64_t now = Stretches(&h, 1000 * kMs, StillnessHistory::kWarmStretches - 1, 100);
  EXPECT_FALSE(h.Warm());
  now = Stretches(&h, now, 1, 500);
  EXPECT_TRUE(h.Warm());
  EXPECT_EQ(h.LearnedUs(), 500'000u);
  EXPECT_EQ(h.Limit(p), 4000 * kMs) << "8 x 500 ms";
  Stretches(&h, now, 1, 10);
  EXPECT_LT(h.LearnedUs(), 500'000u) << "decays over faster stretches";
  EXPECT_GT(h.LearnedUs(), 490'000u) << "slowly: about 44 of them halve it";
}

TEST(Stillness, NeverUnderTheFloorNorOverTheCap) {
  StillnessHistory h;
  StallPolicy p;
  uint64_t now = Stretches(&h, kMs, StillnessHistory::kWarmStretches, 10);
  EXPECT_EQ(h.Limit(p), p.floor_ns) << "8 x 10 ms is under the floor";
  Stretches(&h, now, 1, 6000);
  EXPECT_EQ(h.Limit(p), p.cap_ns) << "8 x 6 s is over the cap";
}

// Stillness without requests pending (a rank between operations, the host computing) is not waiting: it teaches
// nothing, so a job idle for seconds between steps still flags a connection still for seconds mid-operation.
TEST(Stillness, IdleConnectionsTeachNothing) {
  StillnessHistory h;
  uint64_t now = kMs;
  for (int i = 0; i < 40; ++i) {
    h.Sample(now, 0, false);
    now += 3000 * kMs;
    h.Sample(now, 3000 * kMs, false);
  }
  EXPECT_FALSE(h.Warm());
  EXPECT_EQ(h.LearnedUs(), 0u);
}

// A check that sees no new progress (the same still stretch, longer) ends nothing.
TEST(Stillness, AStretchThatGoesOnEndsNothing) {
  StillnessHistory h;
  uint64_t now = 5 * kMs;
  h.Sample(now, 0, true);
  for (int i = 1; i <= 20; ++i) h.Sample(now + i * 250 * kMs, i * 250 * kMs, true);
  EXPECT_EQ(h.LearnedUs(), 0u);
  EXPECT_FALSE(h.Warm());
}

}  // namespace
}  // namespace ncclscope::profiler

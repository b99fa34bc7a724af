// The TSC line behind MonotonicNs(): its arithmetic on synthetic pairs, then the live clock against
// clock_gettime from several threads.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "gtest/gtest.h"

namespace ncclscope {
namespace {

constexpr uint64_t kInterval = 50'000'000;
// A TSC at 2 ticks per ns: 0.5 ns per tick, 2^31 in 32.32 fixed point.
constexpr uint64_t kHalfNs = 1ull << 31;

TEST(TscLine, FirstLineGoesThroughThePairAtTheMeasuredRate) {
  const TscFit none{0, 0, 0, 0, false};
  const TscFit line = FitTscLine(1'000'000, 5'000'000, 21'000'000, 15'000'000, none, kInterval);
  EXPECT_TRUE(line.stepped);
  EXPECT_EQ(line.tsc0, 21'000'000u);
  EXPECT_EQ(line.ns0, 15'000'000u);
  EXPECT_EQ(line.mult, kHalfNs);
  EXPECT_EQ(line.span, 2 * kInterval);  // one interval's worth of ticks: re-anchored at the first read after it
}

TEST(TscLine, SlewsTowardsTheClockWithoutAJump) {
  const TscFit cur{0, 1'000'000'000, kHalfNs, 2 * kInterval, false};
  const uint64_t tsc = 2 * kInterval;  // one interval on; CLOCK_MONOTONIC is 3 µs ahead of the line
  const uint64_t real = cur.At(tsc) + 3000;
  const TscFit next = FitTscLine(0, 1'000'000'000 + 3000 - kInterval, tsc, real, cur, kInterval);
  EXPECT_FALSE(next.stepped);
  EXPECT_EQ(next.ns0, cur.At(tsc));  // continuous where the lines meet
  EXPECT_GT(next.mult, kHalfNs);      // runs faster to catch up...
  const uint64_t later = tsc + next.span;
  const int64_t gap = static_cast<int64_t>(next.At(later) - (real + kInterval));
  EXPECT_LE(std::abs(gap), 2) << "...and meets the clock one interval on";
}

TEST(TscLine, SlewsBackWhenAheadAndStaysIncreasing) {
  const TscFit cur{0, 1'000'000'000, kHalfNs, 2 * kInterval, false};
  const uint64_t tsc = 2 * kInterval;
  const uint64_t real = cur.At(tsc) - 800'000;  // the line is 0.8 ms ahead: slew, but never backwards
  const TscFit next = FitTscLine(0, real - kInterval, tsc, real, cur, kInterval);
  EXPECT_FALSE(next.stepped);
  EXPECT_EQ(next.ns0, cur.At(tsc));
  EXPECT_GE(next.mult, kHalfNs / 2);
  EXPECT_LT(next.mult, kHalfNs);
}

TEST(TscLine, StepsWhenFarOff) {
  const TscFit cur{0, 1'000'000'000, kHalfNs, 2 * kInterval, false};
  const uint64_t tsc = 2 * kInterval;
  const uint64_t real = cur.At(tsc) + 5'000'000;  // a suspended VM: 5 ms behind
  const TscFit next = FitTscLine(0, real - kInterval, tsc, real, cur, kInterval);
  EXPECT_TRUE(next.stepped);
  EXPECT_EQ(next.ns0, real);
}

TEST(TscClock, SystemModeKeepsClockGettime) {
  EXPECT_NE(EnableTscClock("system").find("clock_gettime"), std::string::npos);
  EXPECT_FALSE(clock_internal::g_line.on.load());
}

// Four threads read the clock for 300 ms: per thread it never goes back by more than the line's distance to
// CLOCK_MONOTONIC (a reader may switch between the two: during the first calibration, or when it meets the
// sequence lock mid-write), and after the first line it stays within 50 µs of clock_gettime read just before
// and after it.
TEST(TscClock, FollowsClockMonotonicFromManyThreads) {
  const std::string how = EnableTscClock("auto");
  if (!clock_internal::g_line.on.load()) GTEST_SKIP() << "no TSC line on this host: MonotonicNs() is " << how;
  std::atomic<int> backwards{0}, far{0};
  std::atomic<uint64_t> worst{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      const uint64_t begin = SystemMonotonicNs();
      uint64_t last = 0;
      while (SystemMonotonicNs() - begin < 300'000'000) {
        const uint64_t before = SystemMonotonicNs();
        const uint64_t ours = MonotonicNs();
        const uint64_t after = SystemMonotonicNs();
        if (ours + 5000 < last) backwards.fetch_add(1);
        last = std::max(last, ours);
        if (before - begin < 120'000'000) continue;  // the first line needs 50 ms; allow the host a margin
        const uint64_t off = ours < before ? before - ours : ours > after ? ours - after : 0;
        uint64_t w = worst.load();
        while (off > w && !worst.compare_exchange_weak(w, off)) {
        }
        if (off > 50'000) far.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  DisableTscClock();
  EXPECT_EQ(backwards.load(), 0);
  EXPECT_EQ(far.load(), 0) << "worst distance to clock_gettime: " << worst.load() << " ns";
  std::printf("TSC line: worst distance to clock_gettime %.1f us\n", worst.load() / 1000.0);
}

}  // namespace
}  // namespace ncclscope

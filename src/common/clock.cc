#include "common/clock.h"

#include <algorithm>
#include <fstream>

namespace ncclscope {
namespace clock_internal {

TscLine g_line;

namespace {

constexpr uint64_t kReanchorNs = 50'000'000;  // re-anchor at the first read after 50 ms
constexpr uint64_t kCalibrateNs = 50'000'000;  // the first line comes from pairs at least 50 ms apart
// A pair whose two TSC reads are further apart than this was interrupted between them: not used. Before the
// first line, in ticks (2-4 µs on 2-4 GHz TSCs); after, 1/20000 of the line's span (2.5 µs). Its midpoint is
// then within ~1 µs of the clock read.
constexpr uint64_t kMaxPairTicksUncalibrated = 1u << 13;

// The re-anchoring thread's state; `busy` is its lock (one re-anchor at a time, readers never wait on it).
std::atomic<bool> busy{false};
uint64_t prev_tsc = 0, prev_ns = 0;  // the last real (TSC, CLOCK_MONOTONIC) pair

void Publish(const TscFit& line) {
  const uint32_t s = g_line.seq.load(std::memory_order_relaxed);
  // Release stores: a reader that sees any new field also sees the odd seq at its second read of it.
  g_line.seq.store(s + 1, std::memory_order_relaxed);
  g_line.tsc0.store(line.tsc0, std::memory_order_release);
  g_line.ns0.store(line.ns0, std::memory_order_release);
  g_line.mult.store(line.mult, std::memory_order_release);
  g_line.span.store(line.span, std::memory_order_release);
  g_line.seq.store(s + 2, std::memory_order_release);
}

#if NCCLSCOPE_HAVE_TSC_CLOCK
// Under `busy`: take a fresh pair and fit the next line through it. Returns the time now.
uint64_t Reanchor() {
  TscFit cur;
  ReadLine(&cur);  // always consistent: under `busy`, this thread is the only writer
  const uint64_t a = __rdtsc();
  const uint64_t now = SystemMonotonicNs();
  const uint64_t b = __rdtsc();
  const uint64_t max_pair = cur.span != 0 ? cur.span / 20000 : kMaxPairTicksUncalibrated;
  if (b - a > max_pair) return cur.span != 0 ? cur.At(b) : now;  // interrupted: the next read tries again
  const uint64_t tsc = a + (b - a) / 2;
  // Not due yet: a reader whose TSC read came just before the last re-anchor, or that met the lock mid-write,
  // lands here. Fitting now would measure the rate over microseconds, and one pair's jitter would tilt the
  // line by a percent for the next 50 ms.
  if (cur.span != 0 && b - cur.tsc0 < cur.span) return cur.At(b);
  if (prev_ns == 0 || tsc <= prev_tsc || now - prev_ns < kCalibrateNs) {
    if (prev_ns == 0 || tsc <= prev_tsc) prev_tsc = tsc, prev_ns = now;
    return cur.span != 0 ? cur.At(b) : now;
  }
  const TscFit next = FitTscLine(prev_tsc, prev_ns, tsc, now, cur, kReanchorNs);
  Publish(next);
  prev_tsc = tsc;
  prev_ns = now;
  return next.At(b);
}
#endif

}  // namespace

uint64_t SlowMonotonicNs() {
#if !NCCLSCOPE_HAVE_TSC_CLOCK
  return SystemMonotonicNs();
#else
  if (busy.exchange(true, std::memory_order_acquire)) {
    // Another thread is re-anchoring: extend the current line (continuous with what it returns next).
    TscFit cur;
    if (ReadLine(&cur) && cur.span != 0) return cur.At(__rdtsc());
    return SystemMonotonicNs();
  }
  const uint64_t now = Reanchor();
  busy.store(false, std::memory_order_release);
  return now;
#endif
}

}  // namespace clock_internal

namespace {
// Further off than this (a suspended VM, a clock set), the line jumps to CLOCK_MONOTONIC instead of slewing.
constexpr int64_t kMaxSlewNs = 1'000'000;
}  // namespace

TscFit FitTscLine(uint64_t prev_tsc, uint64_t prev_ns, uint64_t tsc, uint64_t ns, const TscFit& cur,
                  uint64_t interval_ns) {
  using u128 = unsigned __int128;
  // The measured rate, ns per tick in 32.32 fixed point, over the two real pairs.
  const auto rate = static_cast<uint64_t>((static_cast<u128>(ns - prev_ns) << 32) / (tsc - prev_tsc));
  const auto span = static_cast<uint64_t>((static_cast<u128>(interval_ns) << 32) / (rate != 0 ? rate : 1));
  TscFit step{tsc, ns, rate, span, true};
  if (cur.span == 0 || tsc < cur.tsc0 || rate == 0) return step;
  const uint64_t expected = cur.At(tsc);
  const int64_t error = static_cast<int64_t>(ns - expected);  // > 0: the line is behind CLOCK_MONOTONIC
  if (error > kMaxSlewNs || error < -kMaxSlewNs) return step;
  // Continue from where the line is now, at a slope that closes the error over the next interval.
  const int64_t correction = static_cast<int64_t>((static_cast<__int128>(error) << 32) / static_cast<int64_t>(span));
  int64_t slope = static_cast<int64_t>(rate) + correction;
  slope = std::max<int64_t>(slope, static_cast<int64_t>(rate / 2));
  slope = std::min<int64_t>(slope, static_cast<int64_t>(rate + rate / 2));
  return {tsc, expected, static_cast<uint64_t>(slope), span, false};
}

std::string EnableTscClock(const std::string& mode) {
#if NCCLSCOPE_HAVE_TSC_CLOCK
  if (mode == "system") return "clock_gettime (NCCLSCOPE_HOST_CLOCK=system)";
  std::string source;
  std::ifstream("/sys/devices/system/clocksource/clocksource0/current_clocksource") >> source;
  if (source != "tsc") return "clock_gettime (the kernel's clocksource is '" + source + "', not tsc)";
  clock_internal::g_line.on.store(true, std::memory_order_relaxed);
  clock_internal::SlowMonotonicNs();  // the first pair: the first line follows 50 ms from now
  return "the TSC, re-anchored to CLOCK_MONOTONIC every 50 ms";
#else
  (void)mode;
  return "clock_gettime (no TSC clock on this platform)";
#endif
}

void DisableTscClock() {
  using namespace clock_internal;
  g_line.on.store(false, std::memory_order_relaxed);
  while (busy.exchange(true, std::memory_order_acquire)) {
  }
  Publish({0, 0, 0, 0, false});
  prev_tsc = prev_ns = 0;
  busy.store(false, std::memory_order_release);
}

}  // namespace ncclscope

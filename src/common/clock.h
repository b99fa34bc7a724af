// Host clocks. Durations come from the monotonic clock; wall-clock time is used only to label dumps
// and to line up ranks.
//
// MonotonicNs() is CLOCK_MONOTONIC, read through the TSC where the kernel itself keeps time with it: a
// clock_gettime costs 25-130 ns in a VM against ~12 ns for rdtsc, and the event path reads the clock once
// or twice per operation. The TSC line is re-anchored to CLOCK_MONOTONIC at its first read after every
// 50 ms and slewed, not stepped, towards it, so it stays within a few microseconds of CLOCK_MONOTONIC
// (values are comparable across processes, and with clock samples). It runs backwards only by that distance,
// when a reader switches between the line and clock_gettime (in the first 50 ms, or meeting a re-anchor).
// Until EnableTscClock() (plugin init), and where the TSC is not the kernel's clocksource, it is
// clock_gettime itself. Safe on any thread, in CUDA host callbacks and in signal handlers.
#ifndef NCCLSCOPE_COMMON_CLOCK_H_
#define NCCLSCOPE_COMMON_CLOCK_H_

#include <time.h>

#include <atomic>
#include <cstdint>
#include <string>

#if defined(__x86_64__)
#include <x86intrin.h>
#define NCCLSCOPE_HAVE_TSC_CLOCK 1
#else
#define NCCLSCOPE_HAVE_TSC_CLOCK 0
#endif

namespace ncclscope {

inline uint64_t SystemMonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A line ns = ns0 + ((tsc - tsc0) * mult) >> 32, valid for tsc0 <= tsc < tsc0 + span (span 0: no line).
struct TscFit {
  uint64_t tsc0, ns0, mult, span;
  bool stepped;  // the line jumped to the pair instead of slewing towards it
  // The line at `tsc`, extended beyond its span if need be, and never before tsc0.
  uint64_t At(uint64_t tsc) const {
    const uint64_t d = tsc > tsc0 ? tsc - tsc0 : 0;
    return ns0 + static_cast<uint64_t>((static_cast<unsigned __int128>(d) * mult) >> 32);
  }
};

namespace clock_internal {

// The current TscFit, published under a sequence lock (odd while being rewritten); `on`: MonotonicNs() reads it.
struct alignas(64) TscLine {
  std::atomic<bool> on{false};
  std::atomic<uint32_t> seq{0};
  std::atomic<uint64_t> tsc0{0};
  std::atomic<uint64_t> ns0{0};
  std::atomic<uint64_t> mult{0};
  std::atomic<uint64_t> span{0};
};
extern TscLine g_line;

// One consistent read of the line; false while another thread rewrites it. The fields are read with acquire
// loads (plain loads on x86-64), which keep the second read of seq after them without a fence
// (ThreadSanitizer does not model fences).
inline bool ReadLine(TscFit* line) {
  const uint32_t s = g_line.seq.load(std::memory_order_acquire);
  line->tsc0 = g_line.tsc0.load(std::memory_order_acquire);
  line->ns0 = g_line.ns0.load(std::memory_order_acquire);
  line->mult = g_line.mult.load(std::memory_order_acquire);
  line->span = g_line.span.load(std::memory_order_acquire);
  return (s & 1) == 0 && g_line.seq.load(std::memory_order_relaxed) == s;
}

inline bool LineNs(uint64_t tsc, uint64_t* ns) {
  TscFit line;
  if (!ReadLine(&line)) return false;
  // tsc - tsc0 wraps (huge) when tsc was read before another thread's re-anchor
  if (tsc - line.tsc0 >= line.span) return false;
  *ns = line.At(tsc);
  return true;
}

uint64_t SlowMonotonicNs();  // re-anchors the line when due; otherwise clock_gettime

}  // namespace clock_internal

inline uint64_t MonotonicNs() {
#if NCCLSCOPE_HAVE_TSC_CLOCK
  if (clock_internal::g_line.on.load(std::memory_order_relaxed)) {
    uint64_t ns;
    if (clock_internal::LineNs(__rdtsc(), &ns)) return ns;
    return clock_internal::SlowMonotonicNs();
  }
#endif
  return SystemMonotonicNs();
}

// now - start, or 0 when `start` was read later (on another thread, or across a switch between the line and
// clock_gettime): a duration never wraps to 2^64.
inline uint64_t ElapsedNs(uint64_t start, uint64_t now) { return now > start ? now - start : 0; }

// Turns the TSC line on when `mode` allows it ("auto": where the kernel's clocksource is the TSC; "system":
// never) and the platform has one. Returns what MonotonicNs() reads, for the log.
std::string EnableTscClock(const std::string& mode);
// Back to clock_gettime (tests).
void DisableTscClock();

// The next line through a fresh (tsc, CLOCK_MONOTONIC) pair, exposed for tests.
// `prev_*`: the previous real pair; `cur`: the current line (span 0 if none). Slews so that the new line
// meets CLOCK_MONOTONIC one interval on; steps when it is more than 1 ms off.
TscFit FitTscLine(uint64_t prev_tsc, uint64_t prev_ns, uint64_t tsc, uint64_t ns, const TscFit& cur,
                  uint64_t interval_ns);

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_CLOCK_H_

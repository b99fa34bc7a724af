// --clock-offset: one rank's clocks shifted by a constant, as if its host's clocks disagreed with the others'.
// Shifted: the GPU timer the sim reports to the profiler (KernelCh / KernelPhase pTimer) and the host clocks
// (CLOCK_REALTIME and CLOCK_MONOTONIC families) the loaded plugin libraries read themselves through
// clock_gettime. The sim exports clock_gettime, so a plugin's calls bind to it; it shifts only calls made from
// the code of a library the sim opened as a plugin, never those of libc, libstdc++ or abseil, whose timed
// waits hand absolute deadlines to the kernel and would sleep for the offset. Calls from the sim's own code
// (its timeouts, the launcher) are never shifted.
#ifndef NCCLSCOPE_TOOLS_SIM_CLOCK_OFFSET_H_
#define NCCLSCOPE_TOOLS_SIM_CLOCK_OFFSET_H_

#include <cstdint>

namespace ncclscope::sim {

// Sets this process's offset (once, before any plugin is loaded). Realtime clocks move by offset_ns; the
// monotonic ones too, plus one day when offset_ns is negative, so that they never go below zero (a monotonic
// clock counts from each host's boot, so only the difference between ranks means anything).
void SetClockOffsetNs(int64_t offset_ns);
int64_t ClockOffsetNs();

// The limit of --clock-offset, in ms either way.
inline constexpr int64_t kMaxClockOffsetMs = 86'400'000;

}  // namespace ncclscope::sim

// Called by the plugin loader with each library name before it dlopens it (weak: test binaries that compile
// the loader without this file skip it). Clock reads from the code of a library of that file name are shifted.
extern "C" void NcclscopeSimExpectPlugin(const char* path);

#endif  // NCCLSCOPE_TOOLS_SIM_CLOCK_OFFSET_H_

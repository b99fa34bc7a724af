// Which profiler v7 layout the process's collective library hands us. RCCL (ROCm) exports NCCL's symbol names with
// its own copies of the v7 header, which differ across releases (include/ncclscope/abi/profiler_rccl.h,
// docs/nccl-integration.md#rccl). Decided once per load, at the first profiler init.
#ifndef NCCLSCOPE_PLUGIN_PROFILER_RCCL_LAYOUT_H_
#define NCCLSCOPE_PLUGIN_PROFILER_RCCL_LAYOUT_H_

#include <atomic>
#include <string>

namespace ncclscope::profiler::abi {

enum class V7Reading {
  kNvidia,        // no RCCL in the process: NVIDIA's v7
  kRcclAppended,  // RCCL whose v7 keeps NVIDIA's v7 as a prefix: read as NVIDIA's, RCCL's additions ignored
  kRcclAsV6,      // RCCL whose v7 is not known to carry userTag: v7 declined, its events read through v6's layout
};

// What was found: `library` the loaded librccl.so* ("" when none), `version` its ncclGetVersion code (0 unknown),
// `coll_config` whether it exports the per-call config API (ncclAllReduceConfig) through which user tags arrive.
struct RcclHost {
  std::string library;
  int version = 0;
  bool coll_config = false;
};

RcclHost FindRccl();

// The verdict for a host and the one log line that explains it ("" for NVIDIA). `forced` is NCCLSCOPE_RCCL_V7:
// "auto" decides by version and API, "v7" or "v6" is the operator's choice (it applies under RCCL only).
V7Reading V7ReadingFor(const RcclHost& h, std::string* why, const std::string& forced = "auto");

// The process's verdict and its log line, decided on the first call; later calls return the same.
struct V7Verdict {
  V7Reading reading = V7Reading::kNvidia;
  std::string why;
};
const V7Verdict& ProcessV7Verdict();

// True when RCCL is in the process (for the v6 table: RCCL's v6 gives state 31 and bit 0x8000 to ProxyDiag).
bool RcclInProcess();

// States our side ignores without counting them as unknown: RCCL's ProxyDiag updates (32 with RCCL's v7, 31 with
// its v6 or when v7 is read as v6). INT_MAX: none. Set at init, before NCCL's first event.
inline std::atomic<int> g_first_foreign_state{0x7fffffff};

}  // namespace ncclscope::profiler::abi

#endif  // NCCLSCOPE_PLUGIN_PROFILER_RCCL_LAYOUT_H_

// A second profiler plugin behind ours (NCCLSCOPE_PROFILER_CHAIN = a name or path, resolved as NCCL resolves
// NCCL_PROFILER_PLUGIN: NAME, libnccl-profiler-NAME.so, or a path). Only one profiler plugin loads per process,
// so without this a user cannot keep NCCL Inspector or a tracing profiler and add ncclscope.
//
// The chained plugin is loaded once, at the first init, at the newest table it exports (v7, v6 or v5); events
// reach it translated from whatever version NCCL gave us. NCCL sees the union of both masks; each side then
// receives only the events its own mask asks for plus the parents NCCL starts for them (the ancestor closure:
// Coll/P2p under CollApi/P2pApi and Group, the API events under GroupApi, ProxyOp and KernelCh under Coll/P2p,
// ProxyStep under ProxyOp, NetPlugin under ProxyStep, KernelPhase under KernelCh, CeSync/CeBatch under CeColl),
// so our figures do not change and the chained plugin sees what NCCL
// would give it alone, with its own contexts and handles and its parents translated. NCCL holds one pair per
// event (ours and theirs) from a fixed pool; a full pool drops the event for both sides and counts it. A chained
// init that fails disables it for that communicator with a log line and never affects ours; so does one that calls
// back into our init (common/inner_call.h). A path that is not a regular file, ncclscope itself and a table whose
// entries are ours are not chained (one line each). A crash inside the chained plugin cannot be contained in-process.
#ifndef NCCLSCOPE_PLUGIN_PROFILER_CHAIN_H_
#define NCCLSCOPE_PLUGIN_PROFILER_CHAIN_H_

#include <atomic>
#include <cstdint>

#include "ncclscope/abi/profiler.h"

namespace ncclscope::profiler::abi::chain {

namespace detail {
enum : int { kUnknown = 0, kOff = 1, kOn = 2 };
extern std::atomic<int> g_active;  // kUnknown until the first call has tried to load the plugin
bool LoadOnce();
}  // namespace detail

// True when NCCLSCOPE_PROFILER_CHAIN names a plugin that loaded (tried once, at the first call). Inline: every
// event entry point asks it.
inline bool Active() {
  const int state = detail::g_active.load(std::memory_order_acquire);
  return state != detail::kUnknown ? state == detail::kOn : detail::LoadOnce();
}

// After our own init succeeded: the chained plugin's init with the same arguments; returns the context NCCL
// gets (ours and theirs) and ORs the chained plugin's mask into *mask.
void* WrapInit(void* our_ctx, int* mask, uint64_t comm_id, const char* comm_name, int nnodes, int nranks, int rank,
               ncclscope_logger_t logfn);
// Our own context inside a chained one (NULL stays NULL).
void* OurContext(void* ctx);
// The chained plugin's finalize, then frees the chained context.
void FinalizeTheirs(void* ctx);

// One event for both sides. `start_ours(our_ctx, parent, parent_group)` starts ours (only called when our mask's
// closure has the type) and returns our handle; the returned handle is what NCCL gets.
template <class Descr, class StartOurs>
void* Start(int version, void* ctx, const Descr* d, StartOurs&& start_ours);
// Stop / record: both sides; `ours` gets our handle.
template <class StopOurs>
void Stop(void* handle, StopOurs&& ours);
template <class RecordOurs>
void Record(void* handle, ncclscope_profiler_state_t state, ncclscope_profiler_state_args_t* args, RecordOurs&& ours);

}  // namespace ncclscope::profiler::abi::chain

#include "plugin/profiler/chain_inl.h"

#endif  // NCCLSCOPE_PLUGIN_PROFILER_CHAIN_H_

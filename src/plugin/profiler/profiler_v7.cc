// ncclProfiler_v7 (NCCL 2.31+, the first table it looks for): v6's events read through the v6 view of the
// same bytes (every v6 arm keeps its offsets), plus the caller's 64-bit tag on CollApi, P2pApi, Coll, P2p and
// CeColl, the symmetric-kernel flag on Coll, and KernelPhase events (a kernel channel's initial_sync, compute
// and final_sync, GPU-timed, stopped with state 31 just before their KernelCh).
#include "ncclscope/abi/layout_asserts.h"
#include "ncclscope/abi/profiler.h"
#include "plugin/profiler/translate.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler::abi {
namespace {

ncclscope_result_t InitV7(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                          int nranks, int rank, ncclscope_logger_t logfn) {
  return InitV5Plus("v7", context, commId, eActivationMask, commName, nNodes, nranks, rank, logfn);
}

void TranslateV7(const ncclscope_profiler_descr_v7_t* e, EventDesc* d) {
  ncclscope_profiler_descr_v6_t v6;
  static_assert(sizeof(v6) < sizeof(*e));
  __builtin_memcpy(&v6, e, sizeof(v6));
  TranslateV6(&v6, d);
  switch (e->type) {
    case NCCLSCOPE_PROFILE_COLL:
      d->user_tag = e->coll.userTag;
      d->symmetric = e->coll.isSymColl;
      break;
    case NCCLSCOPE_PROFILE_P2P:
      d->user_tag = e->p2p.userTag;
      break;
    case NCCLSCOPE_PROFILE_COLL_API:
      d->user_tag = e->collApi.userTag;
      break;
    case NCCLSCOPE_PROFILE_P2P_API:
      d->user_tag = e->p2pApi.userTag;
      break;
    case NCCLSCOPE_PROFILE_CE_COLL:
      d->user_tag = e->ceColl.userTag;
      break;
    case NCCLSCOPE_PROFILE_KERNEL_PHASE:
      d->type = EventType::kKernelPhase;
      d->parent = e->parentObj;
      d->rank = e->rank;
      d->channel = e->kernelPhase.channelId;
      d->phase = e->kernelPhase.phaseId;
      d->has_ptimer = true;
      d->ptimer = e->kernelPhase.pTimer;
      break;
    default:
      break;
  }
}

ncclscope_result_t StartEventV7(void* context, void** eHandle, ncclscope_profiler_descr_v7_t* eDescr) {
  return StartEventAbi(7, "ncclProfiler_v7 startEvent", &TranslateV7, context, eHandle, eDescr);
}

}  // namespace
}  // namespace ncclscope::profiler::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v7_t ncclProfiler_v7 = {
    .name = "ncclscope",
    .init = ncclscope::profiler::abi::InitV7,
    .startEvent = ncclscope::profiler::abi::StartEventV7,
    .stopEvent = ncclscope::profiler::abi::StopEventAbi,
    .recordEventState = ncclscope::profiler::abi::RecordEventStateAbi,
    .finalize = ncclscope::profiler::abi::FinalizeAbi,
};

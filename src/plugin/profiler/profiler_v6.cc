// ncclProfiler_v6 (NCCL 2.29+): the v5 arms at the same offsets plus the copy-engine events, which
// are counted (CeColl/CeSync/CeBatch) but carry no operation of ours yet.
#include "ncclscope/abi/layout_asserts.h"
#include "ncclscope/abi/profiler.h"
#include "common/gate.h"
#include "ncclscope/abi/profiler_rccl.h"
#include "plugin/profiler/rccl_layout.h"
#include "plugin/profiler/translate.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler::abi {

void TranslateV6(const ncclscope_profiler_descr_v6_t* e, EventDesc* d) {
  // The shared arms: read the same bytes through the v5 layout (a strict prefix of v6's union).
  ncclscope_profiler_descr_v5_t v5;
  static_assert(sizeof(v5) == sizeof(*e));
  __builtin_memcpy(&v5, e, sizeof(v5));
  TranslateV5(&v5, d);
  if (d->type == EventType::kCeColl) {
    d->has_seq = true;
    d->seq = e->ceColl.seqNumber;
    d->func = e->ceColl.func;
    d->datatype = e->ceColl.datatype;
    d->count = e->ceColl.count;
    d->root_or_peer = e->ceColl.root;
  }
}

namespace {

static_assert(sizeof(ncclscope_profiler_descr_v6_t) == sizeof(ncclscope_profiler_descr_v5_t));

ncclscope_result_t InitV6(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                          int nranks, int rank, ncclscope_logger_t logfn) {
  if (!RcclInProcess()) {
    return InitV5Plus("v6", context, commId, eActivationMask, commName, nNodes, nranks, rank, logfn);
  }
  // RCCL's v6 gives bit 0x8000 and state 31 (NVIDIA's KernelPhase in v7) to its ProxyDiag diagnostics.
  g_first_foreign_state.store(NCCLSCOPE_RCCL_V6_STATE_PROXY_DIAG_UPDATE, std::memory_order_relaxed);
  return InitV5Plus("v6-rccl", context, commId, eActivationMask, commName, nNodes, nranks, rank, logfn, 0x7fff);
}

ncclscope_result_t StartEventV6(void* context, void** eHandle, ncclscope_profiler_descr_v6_t* eDescr) {
  return StartEventAbi(6, "ncclProfiler_v6 startEvent", &TranslateV6, context, eHandle, eDescr);
}

}  // namespace
}  // namespace ncclscope::profiler::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v6_t ncclProfiler_v6 = {
    .name = "ncclscope",
    .init = ncclscope::profiler::abi::InitV6,
    .startEvent = ncclscope::profiler::abi::StartEventV6,
    .stopEvent = ncclscope::profiler::abi::StopEventAbi,
    .recordEventState = ncclscope::profiler::abi::RecordEventStateAbi,
    .finalize = ncclscope::profiler::abi::FinalizeAbi,
};

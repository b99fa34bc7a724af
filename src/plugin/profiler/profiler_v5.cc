// ncclProfiler_v5 (NCCL 2.28): translates v5 descriptors into the neutral model. TranslateV5 also serves v6 and
// v7 (their descriptors keep v5's arms at v5's offsets). The slots every version shares are in
// shared_entry_points.cc.
#include "ncclscope/abi/layout_asserts.h"
#include "ncclscope/abi/profiler.h"
#include "common/gate.h"
#include "plugin/profiler/translate.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler::abi {

void TranslateV5(const ncclscope_profiler_descr_v5_t* e, EventDesc* d) {
  d->type = EventTypeFromBit(e->type);
  TranslateSharedArms(e, d);
  switch (d->type) {
    case EventType::kCollApi:
      d->func = e->collApi.func;
      d->datatype = e->collApi.datatype;
      d->count = e->collApi.count;
      d->root_or_peer = e->collApi.root;
      break;
    case EventType::kP2pApi:
      d->func = e->p2pApi.func;
      d->datatype = e->p2pApi.datatype;
      d->count = e->p2pApi.count;
      break;
    default:
      break;
  }
}

namespace {

ncclscope_result_t InitV5(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                          int nranks, int rank, ncclscope_logger_t logfn) {
  return InitV5Plus("v5", context, commId, eActivationMask, commName, nNodes, nranks, rank, logfn);
}

ncclscope_result_t StartEventV5(void* context, void** eHandle, ncclscope_profiler_descr_v5_t* eDescr) {
  return StartEventAbi(5, "ncclProfiler_v5 startEvent", &TranslateV5, context, eHandle, eDescr);
}

}  // namespace
}  // namespace ncclscope::profiler::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v5_t ncclProfiler_v5 = {
    .name = "ncclscope",
    .init = ncclscope::profiler::abi::InitV5,
    .startEvent = ncclscope::profiler::abi::StartEventV5,
    .stopEvent = ncclscope::profiler::abi::StopEventAbi,
    .recordEventState = ncclscope::profiler::abi::RecordEventStateAbi,
    .finalize = ncclscope::profiler::abi::FinalizeAbi,
};

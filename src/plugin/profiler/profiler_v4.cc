// ncclProfiler_v4 (NCCL 2.27): u8 type, no API events, Coll/P2p parented by the Group event, and
// init's arguments in the older order. State arguments share the v5 layout.
#include "ncclscope/abi/layout_asserts.h"
#include "ncclscope/abi/profiler.h"
#include "common/gate.h"
#include "plugin/profiler/translate.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler::abi {
namespace {

void TranslateV4(const ncclscope_profiler_descr_v4_t* e, EventDesc* d) {
  d->type = EventTypeFromBit(e->type);
  // v4 has no API events: those bits mean nothing here.
  if (d->type > EventType::kNetPlugin) d->type = EventType::kUnknown;
  TranslateSharedArms(e, d);
}

ncclscope_result_t InitV4(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes,
                          int nranks, int rank, ncclscope_logger_t logfn) {
  return InitV5Plus("v4", context, commHash, eActivationMask, commName, nNodes, nranks, rank, logfn);
}

ncclscope_result_t StartEventV4(void* context, void** eHandle, ncclscope_profiler_descr_v4_t* eDescr) {
  return StartEventAbi(4, "ncclProfiler_v4 startEvent", &TranslateV4, context, eHandle, eDescr);
}

}  // namespace
}  // namespace ncclscope::profiler::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v4_t ncclProfiler_v4 = {
    .name = "ncclscope",
    .init = ncclscope::profiler::abi::InitV4,
    .startEvent = ncclscope::profiler::abi::StartEventV4,
    .stopEvent = ncclscope::profiler::abi::StopEventAbi,
    .recordEventState = ncclscope::profiler::abi::RecordEventStateAbi,
    .finalize = ncclscope::profiler::abi::FinalizeAbi,
};

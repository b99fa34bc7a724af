// ncclProfiler_v2 (NCCL 2.24-2.25): v1 with strings for func, datatype, algo and proto, and Coll still carrying
// trafficBytes. The v1-v3 shared part is in legacy_v1_v3.h.
#include "ncclscope/abi/layout_asserts.h"
#include "ncclscope/abi/profiler_v1_v3.h"
#include "plugin/profiler/legacy_v1_v3.h"

namespace ncclscope::profiler::abi {
namespace {

void TranslateV2(const ncclscope_profiler_descr_v2_t* e, EventDesc* d) {
  d->type = EventTypeFromBit(e->type);
  if (d->type > EventType::kProxyCtrl) d->type = EventType::kUnknown;  // v2 has no later event types
  legacy::TranslateHeaderAndProxy(e, d);
  switch (d->type) {
    case EventType::kColl:
      d->has_seq = true;
      d->seq = e->coll.seqNumber;
      d->func = e->coll.func;
      d->datatype = e->coll.datatype;
      d->count = e->coll.count;
      d->root_or_peer = e->coll.root;
      d->nchannels = e->coll.nMaxChannels;
      d->algo = e->coll.algo;
      d->proto = e->coll.proto;
      break;
    case EventType::kP2p:
      d->func = e->p2p.func;
      d->datatype = e->p2p.datatype;
      d->count = e->p2p.count;
      d->root_or_peer = e->p2p.peer;
      break;
    default:
      break;
  }
}

ncclscope_result_t InitV2(void** context, int* eActivationMask) {
  return legacy::Init("v2", legacy::kMaskV1V2, context, eActivationMask);
}

ncclscope_result_t StartEventV2(void* context, void** eHandle, ncclscope_profiler_descr_v2_t* eDescr) {
  return legacy::Start(2, "ncclProfiler_v2 startEvent", &TranslateV2, context, eHandle, eDescr);
}

}  // namespace
}  // namespace ncclscope::profiler::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v2_t ncclProfiler_v2 = {
    .name = "ncclscope",
    .init = ncclscope::profiler::abi::InitV2,
    .startEvent = ncclscope::profiler::abi::StartEventV2,
    .stopEvent = ncclscope::profiler::abi::StopEventUnchained,
    .recordEventState = ncclscope::profiler::abi::legacy::RecordState,
    .finalize = ncclscope::profiler::abi::FinalizeUnchained,
};

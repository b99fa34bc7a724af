// ncclProfiler_v3 (NCCL 2.26): v2 without trafficBytes, plus KernelCh (no GPU timer) and NetPlugin events. The
// v1-v3 shared part is in legacy_v1_v3.h.
#include "ncclscope/abi/layout_asserts.h"
#include "ncclscope/abi/profiler_v1_v3.h"
#include "plugin/profiler/legacy_v1_v3.h"

namespace ncclscope::profiler::abi {
namespace {

void TranslateV3(const ncclscope_profiler_descr_v3_t* e, EventDesc* d) {
  d->type = EventTypeFromBit(e->type);
  if (d->type > EventType::kNetPlugin) d->type = EventType::kUnknown;  // v3 has no API or CE events
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
    case EventType::kKernelCh:
      d->channel = e->kernelCh.channelId;  // no pTimer in v3: the op is timed by the host's calls
      break;
    case EventType::kNetPlugin:
      d->net_id = e->netPlugin.id;
      d->net_data = e->netPlugin.data;
      DecodeNetPlugin(d);
      break;
    default:
      break;
  }
}

ncclscope_result_t InitV3(void** context, int* eActivationMask) {
  return legacy::Init("v3", legacy::kMaskV3, context, eActivationMask);
}

ncclscope_result_t StartEventV3(void* context, void** eHandle, ncclscope_profiler_descr_v3_t* eDescr) {
  return legacy::Start(3, "ncclProfiler_v3 startEvent", &TranslateV3, context, eHandle, eDescr);
}

}  // namespace
}  // namespace ncclscope::profiler::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v3_t ncclProfiler_v3 = {
    .name = "ncclscope",
    .init = ncclscope::profiler::abi::InitV3,
    .startEvent = ncclscope::profiler::abi::StartEventV3,
    .stopEvent = ncclscope::profiler::abi::StopEventUnchained,
    .recordEventState = ncclscope::profiler::abi::legacy::RecordState,
    .finalize = ncclscope::profiler::abi::FinalizeUnchained,
};

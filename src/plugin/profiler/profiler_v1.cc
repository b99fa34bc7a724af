// ncclProfiler_v1 (NCCL 2.23): u8 type, Coll/P2p naming their communicator, and func, datatype, algo and proto as
// NCCL's enum values, turned back into the strings later versions pass. The v1-v3 shared part is in
// legacy_v1_v3.h.
#include "ncclscope/abi/layout_asserts.h"
#include "ncclscope/abi/profiler_v1_v3.h"
#include "plugin/profiler/legacy_v1_v3.h"

namespace ncclscope::profiler::abi {
namespace {

// NCCL 2.23's numbering (ncclFunc_t, ncclDataType_t, NCCL_ALGO_*, NCCL_PROTO_*), as the strings v2+ pass.
const char* FuncOf(uint8_t f) {
  static constexpr const char* kNames[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                           "AllReduce", "SendRecv", "Send", "Recv"};
  return f < sizeof(kNames) / sizeof(kNames[0]) ? kNames[f] : "Unknown";
}
const char* DatatypeOf(uint8_t t) {
  static constexpr const char* kNames[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",   "ncclUint32",
                                           "ncclInt64",   "ncclUint64",  "ncclFloat16", "ncclFloat32",
                                           "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return t < sizeof(kNames) / sizeof(kNames[0]) ? kNames[t] : "Unknown";
}
const char* AlgoOf(uint8_t a) {
  static constexpr const char* kNames[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE",
                                           "PAT"};
  return a < sizeof(kNames) / sizeof(kNames[0]) ? kNames[a] : nullptr;
}
const char* ProtoOf(uint8_t p) {
  static constexpr const char* kNames[] = {"LL", "LL128", "SIMPLE"};
  return p < sizeof(kNames) / sizeof(kNames[0]) ? kNames[p] : nullptr;
}

void TranslateV1(const ncclscope_profiler_descr_v1_t* e, EventDesc* d) {
  d->type = EventTypeFromBit(e->type);
  if (d->type > EventType::kProxyCtrl) d->type = EventType::kUnknown;  // v1 has no later event types
  legacy::TranslateHeaderAndProxy(e, d);
  switch (d->type) {
    case EventType::kColl:
      d->has_seq = true;
      d->seq = e->coll.seqNumber;
      d->func = FuncOf(e->coll.func);
      d->datatype = DatatypeOf(e->coll.datatype);
      d->count = e->coll.count;
      d->root_or_peer = e->coll.root;
      d->nchannels = e->coll.nMaxChannels;
      d->algo = AlgoOf(e->coll.algo);
      d->proto = ProtoOf(e->coll.proto);
      break;
    case EventType::kP2p:
      d->func = FuncOf(e->p2p.func);
      d->datatype = DatatypeOf(e->p2p.datatype);
      d->count = e->p2p.count;
      d->root_or_peer = e->p2p.peer;
      break;
    default:
      break;
  }
}

ncclscope_result_t InitV1(void** context, int* eActivationMask) {
  return legacy::Init("v1", legacy::kMaskV1V2, context, eActivationMask);
}

ncclscope_result_t StartEventV1(void* context, void** eHandle, ncclscope_profiler_descr_v1_t* eDescr) {
  return legacy::Start(1, "ncclProfiler_v1 startEvent", &TranslateV1, context, eHandle, eDescr);
}

}  // namespace
}  // namespace ncclscope::profiler::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v1_t ncclProfiler_v1 = {
    .name = "ncclscope",
    .init = ncclscope::profiler::abi::InitV1,
    .startEvent = ncclscope::profiler::abi::StartEventV1,
    .stopEvent = ncclscope::profiler::abi::StopEventUnchained,
    .recordEventState = ncclscope::profiler::abi::legacy::RecordState,
    .finalize = ncclscope::profiler::abi::FinalizeUnchained,
};

// Recording mode for the ncclProfiler_vN adapters (see common/call_recorder.h): writes each call with
// every field of its descriptor and state arguments, as NCCL passed them, and the handle we returned.
#ifndef NCCLSCOPE_PLUGIN_PROFILER_RECORD_CALLS_H_
#define NCCLSCOPE_PLUGIN_PROFILER_RECORD_CALLS_H_

#include <cstdint>

#include "common/call_recorder.h"
#include "ncclscope/abi/profiler.h"

namespace ncclscope::profiler::abi {

void RecordInit(record::Recorder* r, const char* abi, void* context, uint64_t comm_id, int mask_in,
                const int* mask_out, const char* name, int nnodes, int nranks, int rank, int result);
void RecordFinalize(record::Recorder* r, void* context);
void RecordStop(record::Recorder* r, void* handle);
void RecordState(record::Recorder* r, void* handle, int state, const ncclscope_profiler_state_args_t* args);

// The fields every version shares; `type` is NCCL's type bit.
template <class Descr>
void RecordSharedArms(record::Line& l, uint64_t type, const Descr* e) {
  switch (type) {
    case NCCLSCOPE_PROFILE_COLL:
      l.Open("coll").Uint("seqNumber", e->coll.seqNumber).Str("func", e->coll.func);
      l.Ptr("sendBuff", e->coll.sendBuff).Ptr("recvBuff", e->coll.recvBuff).Uint("count", e->coll.count);
      l.Int("root", e->coll.root).Str("datatype", e->coll.datatype).Int("nChannels", e->coll.nChannels);
      l.Int("nWarps", e->coll.nWarps).Str("algo", e->coll.algo).Str("proto", e->coll.proto);
      if constexpr (requires { e->coll.parentGroup; }) l.Ref("parentGroup", e->coll.parentGroup);
      l.Close();
      break;
    case NCCLSCOPE_PROFILE_P2P:
      l.Open("p2p").Str("func", e->p2p.func).Ptr("buff", e->p2p.buff).Str("datatype", e->p2p.datatype);
      l.Uint("count", e->p2p.count).Int("peer", e->p2p.peer).Int("nChannels", e->p2p.nChannels);
      if constexpr (requires { e->p2p.parentGroup; }) l.Ref("parentGroup", e->p2p.parentGroup);
      l.Close();
      break;
    case NCCLSCOPE_PROFILE_PROXY_OP:
      l.Open("proxyOp").Int("pid", e->proxyOp.pid).Int("channelId", e->proxyOp.channelId);
      l.Int("peer", e->proxyOp.peer).Int("nSteps", e->proxyOp.nSteps).Int("chunkSize", e->proxyOp.chunkSize);
      l.Int("isSend", e->proxyOp.isSend).Close();
      break;
    case NCCLSCOPE_PROFILE_PROXY_STEP:
      l.Open("proxyStep").Int("step", e->proxyStep.step).Close();
      break;
    case NCCLSCOPE_PROFILE_KERNEL_CH:
      l.Open("kernelCh").Int("channelId", e->kernelCh.channelId).Uint("pTimer", e->kernelCh.pTimer).Close();
      break;
    case NCCLSCOPE_PROFILE_NET_PLUGIN:
      l.Open("netPlugin").Int("id", e->netPlugin.id).Ptr("data", e->netPlugin.data).Close();
      break;
    default:
      break;
  }
}

// The v5 API arms (v5 and v6).
template <class Descr>
void RecordApiArms(record::Line& l, uint64_t type, const Descr* e) {
  switch (type) {
    case NCCLSCOPE_PROFILE_GROUP_API:
      l.Open("groupApi").Bool("graphCaptured", e->groupApi.graphCaptured);
      l.Int("groupDepth", e->groupApi.groupDepth).Close();
      break;
    case NCCLSCOPE_PROFILE_COLL_API:
      l.Open("collApi").Str("func", e->collApi.func).Uint("count", e->collApi.count);
      l.Str("datatype", e->collApi.datatype).Int("root", e->collApi.root).Ptr("stream", e->collApi.stream);
      l.Bool("graphCaptured", e->collApi.graphCaptured).Close();
      break;
    case NCCLSCOPE_PROFILE_P2P_API:
      l.Open("p2pApi").Str("func", e->p2pApi.func).Uint("count", e->p2pApi.count);
      l.Str("datatype", e->p2pApi.datatype).Ptr("stream", e->p2pApi.stream);
      l.Bool("graphCaptured", e->p2pApi.graphCaptured).Close();
      break;
    case NCCLSCOPE_PROFILE_KERNEL_LAUNCH:
      l.Open("kernelLaunch").Ptr("stream", e->kernelLaunch.stream).Close();
      break;
    default:
      break;
  }
}

void RecordCeArms(record::Line& l, uint64_t type, const ncclscope_profiler_descr_v6_t* e);
// v7: the caller's tag (top level, where the arm has one) and the KernelPhase arm.
void RecordV7Fields(record::Line& l, uint64_t type, const ncclscope_profiler_descr_v7_t* e);

// One startEvent call of ABI version `v`: the descriptor as NCCL passed it, then the handle we returned.
template <class Descr>
void RecordStart(record::Recorder* r, int v, void* context, const Descr* e, void* handle) {
  r->Write("startEvent", [&](record::Line& l) {
    l.Int("v", v).Ref("ctx", context);
    if (e == nullptr) {
      l.Null("descr");
    } else {
      const uint64_t type = e->type;
      l.Hex("type", type).Ref("parent", e->parentObj).Int("rank", e->rank);
      RecordSharedArms(l, type, e);
      if constexpr (requires { e->collApi; }) RecordApiArms(l, type, e);
      if constexpr (requires { e->kernelPhase; }) {
        // v7 keeps v6's copy-engine arms at v6's offsets: read them through the v6 view.
        ncclscope_profiler_descr_v6_t v6;
        __builtin_memcpy(&v6, e, sizeof(v6));
        RecordCeArms(l, type, &v6);
        RecordV7Fields(l, type, e);
      } else if constexpr (requires { e->ceColl; }) {
        RecordCeArms(l, type, e);
      }
    }
    l.NewId("handle", handle, 'h');
  });
}

}  // namespace ncclscope::profiler::abi

#endif  // NCCLSCOPE_PLUGIN_PROFILER_RECORD_CALLS_H_

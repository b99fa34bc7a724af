#include "plugin/profiler/record_calls.h"

namespace ncclscope::profiler::abi {

void RecordInit(record::Recorder* r, const char* abi, void* context, uint64_t comm_id, int mask_in,
                const int* mask_out, const char* name, int nnodes, int nranks, int rank, int result) {
  r->Write("init", [&](record::Line& l) {
    l.Str("abi", abi).Hex("commId", comm_id).Str("commName", name).Int("nNodes", nnodes);
    l.Int("nranks", nranks).Int("rank", rank).Hex("maskIn", static_cast<uint32_t>(mask_in));
    if (mask_out != nullptr) {
      l.Hex("maskOut", static_cast<uint32_t>(*mask_out));
    } else {
      l.Null("maskOut");
    }
    l.Int("result", result).NewId("ctx", context, 'c');
  });
}

void RecordFinalize(record::Recorder* r, void* context) {
  r->Write("finalize", [&](record::Line& l) { l.Ref("ctx", context); });
  r->Flush();
}

void RecordStop(record::Recorder* r, void* handle) {
  const uint64_t repeats = r->Take(handle);
  r->Forget(handle);
  r->Write("stopEvent", [&](record::Line& l) {
    l.Ref("handle", handle);
    if (repeats > 0) l.Uint("repeatsBefore", repeats);
  });
}

void RecordState(record::Recorder* r, void* handle, int state, const ncclscope_profiler_state_args_t* args) {
  // NCCL repeats some states on every progress-loop pass (SEND_PEER_WAIT while a peer is late: 1.5 M calls
  // in 2 s under real NCCL 2.28.9): identical consecutive states of one handle are folded into "repeats".
  const uint64_t arg = args != nullptr ? args->kernelCh.pTimer : ~uint64_t{0};
  if (r->Repeat(handle, (static_cast<uint64_t>(state) << 56) ^ arg)) return;
  const uint64_t repeats = r->Take(handle);
  r->Write("recordEventState", [&](record::Line& l) {
    l.Ref("handle", handle).Int("state", state);
    if (repeats > 0) l.Uint("repeatsBefore", repeats);
    if (args == nullptr) {
      l.Null("args");
    } else if (state >= NCCLSCOPE_STATE_PROXY_CTRL_IDLE && state <= NCCLSCOPE_STATE_PROXY_CTRL_APPEND_END) {
      l.Open("args").Int("appendedProxyOps", args->proxyCtrl.appendedProxyOps).Close();
    } else if (state == NCCLSCOPE_STATE_KERNEL_CH_STOP) {
      l.Open("args").Uint("pTimer", args->kernelCh.pTimer).Close();
    } else if (state == NCCLSCOPE_STATE_NET_PLUGIN_UPDATE) {
      l.Open("args").Ptr("data", args->netPlugin.data).Close();
    } else {
      l.Open("args").Uint("transSize", args->proxyStep.transSize).Close();
    }
  });
}

void RecordCeArms(record::Line& l, uint64_t type, const ncclscope_profiler_descr_v6_t* e) {
  switch (type) {
    case NCCLSCOPE_PROFILE_CE_COLL:
      l.Open("ceColl").Uint("seqNumber", e->ceColl.seqNumber).Str("func", e->ceColl.func);
      l.Uint("count", e->ceColl.count).Int("root", e->ceColl.root).Str("datatype", e->ceColl.datatype);
      l.Str("syncStrategy", e->ceColl.syncStrategy).Bool("intraBatchSync", e->ceColl.intraBatchSync);
      l.Uint("batchSize", e->ceColl.batchSize).Uint("numBatches", e->ceColl.numBatches);
      l.Uint("ceSeqNum", e->ceColl.ceSeqNum).Ptr("stream", e->ceColl.stream).Close();
      break;
    case NCCLSCOPE_PROFILE_CE_SYNC:
      l.Open("ceSync").Bool("isComplete", e->ceCollSync.isComplete).Int("nRanks", e->ceCollSync.nRanks).Close();
      break;
    case NCCLSCOPE_PROFILE_CE_BATCH:
      l.Open("ceBatch").Int("numOps", e->ceCollBatch.numOps).Uint("totalBytes", e->ceCollBatch.totalBytes);
      l.Bool("useIntraSync", e->ceCollBatch.useIntraSync).Close();
      break;
    default:
      break;
  }
}

void RecordV7Fields(record::Line& l, uint64_t type, const ncclscope_profiler_descr_v7_t* e) {
  switch (type) {
    case NCCLSCOPE_PROFILE_COLL:
      l.Uint("userTag", e->coll.userTag).Bool("isSymColl", e->coll.isSymColl).Str("kernelVariant", e->coll.kernelVariant);
      break;
    case NCCLSCOPE_PROFILE_P2P:
      l.Uint("userTag", e->p2p.userTag);
      break;
    case NCCLSCOPE_PROFILE_COLL_API:
      l.Uint("userTag", e->collApi.userTag);
      break;
    case NCCLSCOPE_PROFILE_P2P_API:
      l.Uint("userTag", e->p2pApi.userTag);
      break;
    case NCCLSCOPE_PROFILE_CE_COLL:
      l.Uint("userTag", e->ceColl.userTag);
      break;
    case NCCLSCOPE_PROFILE_KERNEL_PHASE:
      l.Open("kernelPhase").Int("channelId", e->kernelPhase.channelId).Int("phaseId", e->kernelPhase.phaseId);
      l.Str("phaseName", e->kernelPhase.phaseName).Uint("pTimer", e->kernelPhase.pTimer).Close();
      break;
    default:
      break;
  }
}

}  // namespace ncclscope::profiler::abi

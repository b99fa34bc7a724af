// What the ncclProfiler_v1, _v2 and _v3 adapters (NCCL 2.23-2.26) share: init without a communicator, startEvent
// that names the communicator from the first Coll or P2p event, and the 16-byte state arguments. Only
// src/plugin/profiler includes this; each version's file keeps its own descriptor translation.
//
// What these versions lack, and what ncclscope does about it (docs/nccl-integration.md#profiler-v1-v3):
//  - init gives no communicator: the context starts unnamed (hash 0, rank 0, 1 rank) and takes the commHash, name
//    and rank of its first Coll or P2p event; nranks and nnodes stay unknown (1), so per-peer P2P counters fold
//    into peer="other", AllGather/ReduceScatter bytes are one rank's share and bus bandwidth is not derived;
//  - init gives no logger: lines go through the net half's logger, else to stderr at NCCL_DEBUG's level;
//  - ProxyStep state arguments arrive zeroed (no bytes per step) and ProxyOp states 0-7 are ignored;
//  - v1 and v2 have no KernelCh or NetPlugin events (their bits stay off), v3's KernelCh has no GPU timer;
//  - no second profiler is chained behind ours (chain.h starts at v5 tables).
#ifndef NCCLSCOPE_PLUGIN_PROFILER_LEGACY_V1_V3_H_
#define NCCLSCOPE_PLUGIN_PROFILER_LEGACY_V1_V3_H_

#include "ncclscope/abi/profiler_v1_v3.h"
#include "plugin/profiler/translate.h"

namespace ncclscope::profiler::abi::legacy {

// Event bits each version can deliver: v1/v2 Group..ProxyCtrl, v3 adds KernelCh and NetPlugin.
inline constexpr int kMaskV1V2 = 0x3F;
inline constexpr int kMaskV3 = 0xFF;

inline ncclscope_result_t Init(const char* abi, int allowed_mask, void** context, int* eActivationMask) {
  // No communicator yet: hash 0 (learned later), one rank, no name, no logger.
  return InitV5Plus(abi, context, /*commId=*/0, eActivationMask, /*commName=*/nullptr, /*nNodes=*/1,
                    /*nranks=*/1, /*rank=*/0, /*logfn=*/nullptr, allowed_mask, /*chainable=*/false);
}

// The header fields and the arms every v1-v3 descriptor has at the same names (proxyOp, proxyStep); d->type set.
template <class Descr>
void TranslateHeaderAndProxy(const Descr* e, EventDesc* d) {
  d->parent = e->parentObj;
  d->rank = e->rank;
  switch (d->type) {
    case EventType::kProxyOp:
      d->pid = e->proxyOp.pid;
      d->channel = e->proxyOp.channelId;
      d->peer = e->proxyOp.peer;
      d->nsteps = e->proxyOp.nSteps;
      d->chunk_size = e->proxyOp.chunkSize;
      d->is_send = e->proxyOp.isSend != 0;
      break;
    case EventType::kProxyStep:
      d->step = e->proxyStep.step;
      break;
    default:
      break;
  }
}

// startEvent: translate, name the communicator from a Coll or P2p, start. In recording mode the handles are
// wrapped as in v4+ (the recorded line carries the header only).
template <class Descr>
ncclscope_result_t Start(int v, const char* entry, void (*translate)(const Descr*, EventDesc*), void* context,
                         void** eHandle, Descr* eDescr) {
  record::Recorder* r = record::Recorder::Get();
  ncclscope_result_t rc = ProfilerEventGate(entry, [&] {
    if (eHandle == nullptr) return;
    *eHandle = nullptr;
    if (eDescr == nullptr) return;
    if (eDescr->type == NCCLSCOPE_PROFILE_COLL) {
      LearnCommIdentity(context, eDescr->coll.commHash, eDescr->coll.name, eDescr->rank);
    } else if (eDescr->type == NCCLSCOPE_PROFILE_P2P) {
      LearnCommIdentity(context, eDescr->p2p.commHash, eDescr->p2p.name, eDescr->rank);
    }
    EventDesc d;
    translate(eDescr, &d);
    if (r != nullptr) d.parent = r->Unwrap(d.parent);
    *eHandle = StartEvent(context, d);
    if (r != nullptr) *eHandle = r->Wrap(*eHandle);
  });
  if (r != nullptr) {
    r->Write("startEvent", [&](record::Line& l) {
      l.Int("v", v).Ref("ctx", context);
      if (eDescr == nullptr) {
        l.Null("descr");
      } else {
        l.Hex("type", eDescr->type).Ref("parent", eDescr->parentObj).Int("rank", eDescr->rank);
      }
      l.NewId("handle", eHandle != nullptr ? *eHandle : nullptr, 'h');
    });
  }
  return rc;
}

// recordEventState: states 8-18 carry their argument at offset 0, as in v4+ (ProxyStep: zeroed by NCCL; ProxyCtrl:
// appendedProxyOps); the deprecated ProxyOp states 0-7 are not read.
inline ncclscope_result_t RecordState(void* eHandle, ncclscope_profiler_state_t eState,
                                      ncclscope_profiler_state_args_v1_t* eStateArgs) {
  const int s = static_cast<int>(eState);
  if (s <= NCCLSCOPE_STATE_PROXY_OP_RECV_DONE) return NCCLSCOPE_SUCCESS;
  if (eStateArgs == nullptr) return RecordEventStateUnchained(eHandle, eState, nullptr);
  ncclscope_profiler_state_args_t a;
  if (s >= NCCLSCOPE_STATE_PROXY_CTRL_IDLE && s <= NCCLSCOPE_STATE_PROXY_CTRL_APPEND_END) {
    a.proxyCtrl.appendedProxyOps = eStateArgs->proxyCtrl.appendedProxyOps;
  } else {
    a.proxyStep.transSize = eStateArgs->proxyOp.transSize;
  }
  return RecordEventStateUnchained(eHandle, eState, &a);
}

}  // namespace ncclscope::profiler::abi::legacy

#endif  // NCCLSCOPE_PLUGIN_PROFILER_LEGACY_V1_V3_H_

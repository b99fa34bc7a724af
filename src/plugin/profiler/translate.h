// Shared pieces of the ncclProfiler_vN adapters (only src/plugin/profiler includes this): the v5 view
// used by v5 and v6, the state-argument translation (identical in v4-v6) and the common entry points.
#ifndef NCCLSCOPE_PLUGIN_PROFILER_TRANSLATE_H_
#define NCCLSCOPE_PLUGIN_PROFILER_TRANSLATE_H_

#include <atomic>
#include <cstring>
#include <type_traits>

#include "common/gate.h"
#include "ncclscope/abi/profiler.h"
#include "plugin/profiler/chain.h"
#include "plugin/profiler/record_calls.h"
#include "profiler/event.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler::abi {

// NetPlugin: the plugin id's type bits say whose descriptor extData is (docs/nccl-abi.md#net-callback).
// NCCL's IB transport keeps one descriptor per request and rewrites it for each QP, keeping it by pointer:
// copy what we count, now.
inline void DecodeNetPlugin(EventDesc* d) {
  const int64_t type = d->net_id & NCCLSCOPE_NET_PLUGIN_TYPE_MASK;
  const int64_t version = d->net_id & NCCLSCOPE_NET_PLUGIN_VER_MASK;
  if (type == NCCLSCOPE_NET_PLUGIN_TYPE_SOCK) {
    d->net_source = NetSource::kSocket;
    return;
  }
  if (type == NCCLSCOPE_NET_PLUGIN_TYPE_NCCLSCOPE_VERBS) {
    d->net_source = NetSource::kOwnVerbs;
    return;
  }
  if (type != NCCLSCOPE_NET_PLUGIN_TYPE_IB) {
    d->net_source = NetSource::kUnknown;
    return;
  }
  ncclscope_net_ib_descr_v1_t q;
  if (version != 1 || d->net_data == nullptr) {
    d->net_source = NetSource::kIbMalformed;
    return;
  }
  std::memcpy(&q, d->net_data, sizeof(q));
  if (q.type != NCCLSCOPE_NET_IB_DESCR_TYPE_QP) {
    d->net_source = NetSource::kIbMalformed;
    return;
  }
  d->net_source = NetSource::kIb;
  d->net_device = q.qp.device;
  d->net_length = q.qp.length;  // meaningful on send events only (receive events leave it unwritten)
}

// The arms v4, v5 and v6 share under the same names and offsets (coll, p2p, proxyOp, proxyStep,
// kernelCh, netPlugin), read from any version's descriptor type; d->type must already be set.
template <class Descr>
void TranslateSharedArms(const Descr* e, EventDesc* d) {
  d->parent = e->parentObj;
  d->rank = e->rank;
  switch (d->type) {
    case EventType::kColl:
      d->has_seq = true;
      d->seq = e->coll.seqNumber;
      d->func = e->coll.func;
      d->datatype = e->coll.datatype;
      d->count = e->coll.count;
      d->root_or_peer = e->coll.root;
      d->nchannels = e->coll.nChannels;
      d->algo = e->coll.algo;
      d->proto = e->coll.proto;
      break;
    case EventType::kP2p:
      d->func = e->p2p.func;
      d->datatype = e->p2p.datatype;
      d->count = e->p2p.count;
      d->root_or_peer = e->p2p.peer;
      d->nchannels = e->p2p.nChannels;
      break;
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
    case EventType::kKernelCh:
      d->channel = e->kernelCh.channelId;
      d->has_ptimer = true;
      d->ptimer = e->kernelCh.pTimer;
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

// startEvent of ABI version `v` through the neutral description: translate, start, and in recording mode swap
// NCCL's tokens for our handles (the parent) and our handle for a fresh token (the new event), then record the call.
template <class Descr>
[[gnu::noinline]] ncclscope_result_t StartDescribed(int v, const char* entry,
                                                    void (*translate)(const Descr*, EventDesc*), void* context,
                                                    void** eHandle, Descr* eDescr, record::Recorder* r) {
  ncclscope_result_t rc = ProfilerEventGate(entry, [&] {
    if (eHandle == nullptr) return;
    *eHandle = nullptr;
    if (eDescr == nullptr) return;
    EventDesc d;
    translate(eDescr, &d);
    if (r != nullptr) d.parent = r->Unwrap(d.parent);
    *eHandle = StartEvent(context, d);
    if (r != nullptr) *eHandle = r->Wrap(*eHandle);
  });
  if (r != nullptr) RecordStart(r, v, context, eDescr, eHandle != nullptr ? *eHandle : nullptr);
  return rc;
}

// A Coll or P2p descriptor's OpDesc: the arms keep their names in every version (v7 adds the tag and the
// symmetric flag). The parent (a Group) is not needed once the operation is described.
template <class Descr>
OpDesc OpDescOf(const Descr* e) {
  OpDesc o{};
  if (e->type == NCCLSCOPE_PROFILE_COLL) {
    o = {EventType::kColl, e->coll.root, e->coll.nChannels, false, e->coll.seqNumber, e->coll.count, e->coll.func,
         e->coll.datatype, e->coll.algo, e->coll.proto, 0};
    if constexpr (std::is_same_v<Descr, ncclscope_profiler_descr_v7_t>) {
      o.symmetric = e->coll.isSymColl;
      o.user_tag = e->coll.userTag;
    }
  } else {
    o = {EventType::kP2p, e->p2p.peer, e->p2p.nChannels, false, 0, e->p2p.count, e->p2p.func, e->p2p.datatype,
         nullptr, nullptr, 0};
    if constexpr (std::is_same_v<Descr, ncclscope_profiler_descr_v7_t>) o.user_tag = e->p2p.userTag;
  }
  return o;
}

// True once an init found no second profiler chained and no call recording (both fixed for the process): the
// frequent events then take their short paths straight from the exported entry points. Init runs before NCCL's
// first event; until then every event takes the general path, which is right in every case.
inline std::atomic<bool> g_plain{false};
inline bool Plain() { return g_plain.load(std::memory_order_relaxed); }

// KernelCh (32 per collective at the default mask), Coll and P2p (one per operation) start without a neutral
// description: a KernelCh goes straight to its operation, a Coll or P2p to a new one.
template <class Descr>
[[gnu::always_inline]] inline bool IsFrequent(const Descr* e) {
  return e->type == NCCLSCOPE_PROFILE_KERNEL_CH || e->type == NCCLSCOPE_PROFILE_COLL ||
         e->type == NCCLSCOPE_PROFILE_P2P;
}
template <class Descr>
[[gnu::always_inline]] inline ncclscope_result_t StartFrequent(const char* entry, void* context, void** eHandle,
                                                               const Descr* e) {
  return ProfilerEventGate(entry, [&] {
    *eHandle = nullptr;
    *eHandle = e->type == NCCLSCOPE_PROFILE_KERNEL_CH ? StartKernelChannel(context, e->parentObj, e->kernelCh.pTimer)
                                                      : StartOperation(context, OpDescOf(e));
  });
}

// startEvent of ABI version `v` on our side (also our half of a chained event).
template <class Descr>
[[gnu::always_inline]] inline ncclscope_result_t StartOurs(int v, const char* entry,
                                                           void (*translate)(const Descr*, EventDesc*),
                                                           void* context, void** eHandle, Descr* eDescr) {
  record::Recorder* r = record::Recorder::Get();
  if (r == nullptr && eHandle != nullptr && eDescr != nullptr && IsFrequent(eDescr)) {
    return StartFrequent(entry, context, eHandle, eDescr);
  }
  return StartDescribed(v, entry, translate, context, eHandle, eDescr, r);
}

// Every startEvent but the short path below, out of line (inlined, its frame would be paid on every event). With
// a second profiler chained behind ours (chain.h, v5+), both sides get the event; NCCL gets their pair.
template <class Descr>
[[gnu::noinline]] ncclscope_result_t StartGeneral(int v, const char* entry, void (*translate)(const Descr*, EventDesc*),
                                                  void* context, void** eHandle, Descr* eDescr) {
  if constexpr (!std::is_same_v<Descr, ncclscope_profiler_descr_v4_t>) {
    if (chain::Active() && eHandle != nullptr && eDescr != nullptr) {
      return ProfilerEventGate(entry, [&] {
        *eHandle = chain::Start(v, context, eDescr, [&](void* our_ctx, Descr* mine) {
          void* h = nullptr;
          StartOurs(v, entry, translate, our_ctx, &h, mine);
          return h;
        });
      });
    }
  }
  return StartOurs(v, entry, translate, context, eHandle, eDescr);
}

// The exported startEvent: the frequent events' short path first.
template <class Descr>
[[gnu::always_inline]] inline ncclscope_result_t StartEventAbi(int v, const char* entry,
                                                               void (*translate)(const Descr*, EventDesc*),
                                                               void* context, void** eHandle, Descr* eDescr) {
  if (Plain() && eHandle != nullptr && eDescr != nullptr && IsFrequent(eDescr)) {
    return StartFrequent(entry, context, eHandle, eDescr);
  }
  return StartGeneral(v, entry, translate, context, eHandle, eDescr);
}

void TranslateV5(const ncclscope_profiler_descr_v5_t* e, EventDesc* d);
void TranslateV6(const ncclscope_profiler_descr_v6_t* e, EventDesc* d);
StateUpdate TranslateState(ncclscope_profiler_state_t state, const ncclscope_profiler_state_args_t* args);
ncclscope_result_t InitV5Plus(const char* abi, void** context, uint64_t commId, int* eActivationMask,
                            const char* commName, int nNodes, int nranks, int rank, ncclscope_logger_t logfn,
                            int allowed_mask = ~0, bool chainable = true);
ncclscope_result_t StopEventAbi(void* eHandle);
// Profiler v1-v3 have no chained second profiler (chain.h starts at v5 tables): their stop, record and finalize
// go to our side alone, whatever NCCLSCOPE_PROFILER_CHAIN says.
ncclscope_result_t StopEventUnchained(void* eHandle);
ncclscope_result_t RecordEventStateUnchained(void* eHandle, ncclscope_profiler_state_t eState,
                                             ncclscope_profiler_state_args_t* eStateArgs);
ncclscope_result_t FinalizeUnchained(void* context);
ncclscope_result_t RecordEventStateAbi(void* eHandle, ncclscope_profiler_state_t eState,
                                       ncclscope_profiler_state_args_t* eStateArgs);
ncclscope_result_t FinalizeAbi(void* context);

}  // namespace ncclscope::profiler::abi

#endif  // NCCLSCOPE_PLUGIN_PROFILER_TRANSLATE_H_

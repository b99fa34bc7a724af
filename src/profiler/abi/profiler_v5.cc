// ncclProfiler_v5 (NCCL 2.28): translates v5 descriptors and init arguments into the neutral model.
// Also provides the v5/v6 shared translation used by profiler_v6.cc (the v6 descriptor is a strict
// superset of v5 at the same offsets, so the common arms are read through the v5 view).
#include "ncclscope/abi/layout_asserts.h"
#include "ncclscope/abi/profiler.h"
#include "common/gate.h"
#include "profiler/abi/translate.h"
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

StateUpdate TranslateState(ncclscope_profiler_state_t state, const ncclscope_profiler_state_args_t* args) {
  StateUpdate u;
  u.state = static_cast<int>(state);
  u.has_args = args != nullptr;
  if (args != nullptr) {
    if (u.state >= NCCLSCOPE_STATE_PROXY_CTRL_IDLE && u.state <= NCCLSCOPE_STATE_PROXY_CTRL_APPEND_END) {
      u.value = static_cast<uint64_t>(args->proxyCtrl.appendedProxyOps);
    } else if (u.state == NCCLSCOPE_STATE_KERNEL_CH_STOP || u.state == NCCLSCOPE_STATE_KERNEL_PHASE_STOP) {
      u.value = args->kernelCh.pTimer;
    } else {
      u.value = args->proxyStep.transSize;
    }
  }
  return u;
}

ncclscope_result_t InitV5V6(const char* abi, void** context, uint64_t commId, int* eActivationMask,
                            const char* commName, int nNodes, int nranks, int rank, ncclscope_logger_t logfn) {
  const int mask_in = eActivationMask != nullptr ? *eActivationMask : 0;
  ncclscope_result_t rc = ProfilerInitGate("ncclProfiler init", [&] {
    InitArgs a;
    a.comm_hash = commId;
    a.comm_name = commName;
    a.nnodes = nNodes;
    a.nranks = nranks;
    a.rank = rank;
    a.abi = abi;
    a.logger = logfn;
    a.activation_mask = eActivationMask;
    return Init(a, context);
  });
  if (record::Recorder* r = record::Recorder::Get()) {
    RecordInit(r, abi, context != nullptr ? *context : nullptr, commId, mask_in, eActivationMask, commName, nNodes,
               nranks, rank, rc);
  }
  if (rc == NCCLSCOPE_SUCCESS && context != nullptr && *context != nullptr && chain::Active()) {
    ProfilerInitGate("ncclProfiler init (chained plugin)", [&] {
      *context = chain::WrapInit(*context, eActivationMask, commId, commName, nNodes, nranks, rank, logfn);
      return Status::Ok();
    });
  }
  return rc;
}

namespace {

ncclscope_result_t StopOurs(void* eHandle) {
  // Recorded before the call: once stopped, the handle's address may be handed out again.
  record::Recorder* r = record::Recorder::Get();
  if (r == nullptr) return ProfilerEventGate("ncclProfiler stopEvent", [&] { StopEvent(eHandle); });
  RecordStop(r, eHandle);
  return ProfilerEventGate("ncclProfiler stopEvent", [&] { StopEvent(r->Unwrap(eHandle)); });
}

ncclscope_result_t RecordOurs(void* eHandle, ncclscope_profiler_state_t eState,
                              ncclscope_profiler_state_args_t* eStateArgs) {
  record::Recorder* r = record::Recorder::Get();
  if (r != nullptr) RecordState(r, eHandle, eState, eStateArgs);
  return ProfilerEventGate("ncclProfiler recordEventState", [&] {
    RecordEventState(r != nullptr ? r->Unwrap(eHandle) : eHandle, TranslateState(eState, eStateArgs));
  });
}

}  // namespace

ncclscope_result_t StopEventAbi(void* eHandle) {
  if (!chain::Active()) return StopOurs(eHandle);
  return ProfilerEventGate("ncclProfiler stopEvent", [&] { chain::Stop(eHandle, [](void* h) { StopOurs(h); }); });
}

ncclscope_result_t RecordEventStateAbi(void* eHandle, ncclscope_profiler_state_t eState,
                                       ncclscope_profiler_state_args_t* eStateArgs) {
  if (!chain::Active()) return RecordOurs(eHandle, eState, eStateArgs);
  return ProfilerEventGate("ncclProfiler recordEventState", [&] {
    chain::Record(eHandle, eState, eStateArgs, [&](void* h) { RecordOurs(h, eState, eStateArgs); });
  });
}

ncclscope_result_t FinalizeAbi(void* context) {
  if (chain::Active()) {
    void* ours = chain::OurContext(context);
    ProfilerEventGate("ncclProfiler finalize (chained plugin)", [&] { chain::FinalizeTheirs(context); });
    context = ours;
  }
  if (record::Recorder* r = record::Recorder::Get()) RecordFinalize(r, context);
  return ProfilerEventGate("ncclProfiler finalize", [&] { Finalize(context); });
}

namespace {

ncclscope_result_t InitV5(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                          int nranks, int rank, ncclscope_logger_t logfn) {
  return InitV5V6("v5", context, commId, eActivationMask, commName, nNodes, nranks, rank, logfn);
}

ncclscope_result_t StartEventV5(void* context, void** eHandle, ncclscope_profiler_descr_v5_t* eDescr) {
  return StartEventAbi(5, "ncclProfiler_v5 startEvent", &TranslateV5, context, eHandle, eDescr);
}

}  // namespace
}  // namespace ncclscope::profiler::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v5_t ncclProfiler_v5 = {
    "ncclscope",
    ncclscope::profiler::abi::InitV5,
    ncclscope::profiler::abi::StartEventV5,
    ncclscope::profiler::abi::StopEventAbi,
    ncclscope::profiler::abi::RecordEventStateAbi,
    ncclscope::profiler::abi::FinalizeAbi,
};

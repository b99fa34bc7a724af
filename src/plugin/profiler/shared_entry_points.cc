// The profiler table slots v5, v6 and v7 share (v4 shares all but init and startEvent): init's common part,
// stopEvent, recordEventState and finalize, each through the gates, the call recorder and, when a second
// profiler is chained behind ours (chain.h), both plugins. Laid out like the net ABI layer
// (src/plugin/net/shared_entry_points.cc): the per-version files only translate.
#include "common/gate.h"
#include "common/inner_call.h"
#include "ncclscope/abi/profiler.h"
#include "plugin/services/plugin_services.h"
#include "plugin/profiler/rccl_layout.h"
#include "plugin/profiler/translate.h"
#include "profiler/comm_context.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler::abi {

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

ncclscope_result_t InitV5Plus(const char* abi, void** context, uint64_t commId, int* eActivationMask,
                            const char* commName, int nNodes, int nranks, int rank, ncclscope_logger_t logfn,
                            int allowed_mask, bool chainable) {
  const int mask_in = eActivationMask != nullptr ? *eActivationMask : 0;
  // Called back from the chained profiler's init or load: refused without a line; WrapInit or Load reports it.
  if (!RefuseReentry("profiler init").ok()) return NCCLSCOPE_INVALID_USAGE;
  ncclscope_result_t rc = ProfilerInitGate("ncclProfiler init", [&] {
    InstallPluginServices();  // this may be the process's first call into the plugin
    InitArgs a;
    a.comm_hash = commId;
    a.comm_name = commName;
    a.nnodes = nNodes;
    a.nranks = nranks;
    a.rank = rank;
    a.abi = abi;
    a.logger = logfn;
    a.activation_mask = eActivationMask;
    a.allowed_mask = allowed_mask;
    return Init(a, context);
  });
  if (record::Recorder* r = record::Recorder::Get()) {
    RecordInit(r, abi, context != nullptr ? *context : nullptr, commId, mask_in, eActivationMask, commName, nNodes,
               nranks, rank, rc);
  }
  if (rc == NCCLSCOPE_SUCCESS && context != nullptr && *context != nullptr && chainable && chain::Active()) {
    ProfilerInitGate("ncclProfiler init (chained plugin)", [&] {
      *context = chain::WrapInit(*context, eActivationMask, commId, commName, nNodes, nranks, rank, logfn);
      return Status::Ok();
    });
  }
  g_plain.store(!chain::Active() && record::Recorder::Get() == nullptr, std::memory_order_relaxed);
  return rc;
}

namespace {

// Our side of a stop (also our half of a chained one).
[[gnu::always_inline]] inline ncclscope_result_t StopOurs(void* eHandle) {
  // Recorded before the call: once stopped, the handle's address may be handed out again.
  record::Recorder* r = record::Recorder::Get();
  // CommContext directly, not through StopEvent in another file: one call fewer, 32 times per collective.
  if (r == nullptr) return ProfilerEventGate("ncclProfiler stopEvent", [&] { CommContext::Stop(eHandle); });
  RecordStop(r, eHandle);
  return ProfilerEventGate("ncclProfiler stopEvent", [&] { CommContext::Stop(r->Unwrap(eHandle)); });
}

[[gnu::always_inline]] inline ncclscope_result_t RecordOurs(void* eHandle, ncclscope_profiler_state_t eState,
                                                           ncclscope_profiler_state_args_t* eStateArgs) {
  // RCCL's ProxyDiag updates (its own state numbers, a 24-byte argument): not ours to read, not unknown either.
  if (static_cast<int>(eState) >= g_first_foreign_state.load(std::memory_order_relaxed)) return NCCLSCOPE_SUCCESS;
  record::Recorder* r = record::Recorder::Get();
  if (r != nullptr) RecordState(r, eHandle, eState, eStateArgs);
  return ProfilerEventGate("ncclProfiler recordEventState", [&] {
    CommContext::Record(r != nullptr ? r->Unwrap(eHandle) : eHandle, TranslateState(eState, eStateArgs));
  });
}

// Everything but the short paths of the exported entry points below (a second profiler chained behind ours, the
// call recorder, the rarer states), out of line: inlined, their frames would be paid on every event.
[[gnu::noinline]] ncclscope_result_t StopGeneral(void* eHandle) {
  if (!chain::Active()) return StopOurs(eHandle);
  return ProfilerEventGate("ncclProfiler stopEvent", [&] { chain::Stop(eHandle, [](void* h) { StopOurs(h); }); });
}

[[gnu::noinline]] ncclscope_result_t RecordGeneral(void* eHandle, ncclscope_profiler_state_t eState,
                                                   ncclscope_profiler_state_args_t* eStateArgs) {
  if (!chain::Active()) return RecordOurs(eHandle, eState, eStateArgs);
  return ProfilerEventGate("ncclProfiler recordEventState", [&] {
    chain::Record(eHandle, eState, eStateArgs, [&](void* h) { RecordOurs(h, eState, eStateArgs); });
  });
}

}  // namespace

ncclscope_result_t StopEventAbi(void* eHandle) {
  if (Plain()) return ProfilerEventGate("ncclProfiler stopEvent", [&] { CommContext::Stop(eHandle); });
  return StopGeneral(eHandle);
}

ncclscope_result_t RecordEventStateAbi(void* eHandle, ncclscope_profiler_state_t eState,
                                       ncclscope_profiler_state_args_t* eStateArgs) {
  // A KernelCh's stop time, 32 per collective at the default mask, straight to its operation.
  if (eState == NCCLSCOPE_STATE_KERNEL_CH_STOP && eStateArgs != nullptr && HandleIsKernel(eHandle) && Plain()) {
    CommContext::RecordKernelChStop(eHandle, eStateArgs->kernelCh.pTimer);  // noexcept: no gate needed
    return NCCLSCOPE_SUCCESS;
  }
  return RecordGeneral(eHandle, eState, eStateArgs);
}

ncclscope_result_t StopEventUnchained(void* eHandle) { return StopOurs(eHandle); }

ncclscope_result_t RecordEventStateUnchained(void* eHandle, ncclscope_profiler_state_t eState,
                                             ncclscope_profiler_state_args_t* eStateArgs) {
  return RecordOurs(eHandle, eState, eStateArgs);
}

ncclscope_result_t FinalizeUnchained(void* context) {
  if (record::Recorder* r = record::Recorder::Get()) RecordFinalize(r, context);
  return ProfilerEventGate("ncclProfiler finalize", [&] { Finalize(context); });
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

}  // namespace ncclscope::profiler::abi

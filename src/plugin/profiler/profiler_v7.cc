// ncclProfiler_v7 (NCCL 2.31+, the first table it looks for): v6's events read through the v6 view of the
// same bytes (every v6 arm keeps its offsets), plus the caller's 64-bit tag on CollApi, P2pApi, Coll, P2p and
// CeColl, the symmetric-kernel flag on Coll, and KernelPhase events (a kernel channel's initial_sync, compute
// and final_sync, GPU-timed, stopped with state 31 just before their KernelCh).
// Under RCCL (rccl_layout.h) the same table reads RCCL's v7: as NVIDIA's where RCCL keeps NVIDIA's layout as its
// prefix, or through v6's layout where it does not (NCCL and RCCL do not try an older table when init fails: a
// failed init would leave the job unprofiled, so v7's additions are declined and its v6 part is read instead).
#include "common/log.h"
#include "ncclscope/abi/layout_asserts.h"
#include "ncclscope/abi/profiler.h"
#include "ncclscope/abi/profiler_rccl.h"
#include "plugin/profiler/rccl_layout.h"
#include "plugin/profiler/translate.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler::abi {
namespace {

std::atomic<bool> g_v7_as_v6{false};  // RCCL's v7 read through v6's layout: set at init, before any event

ncclscope_result_t InitV7(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                          int nranks, int rank, ncclscope_logger_t logfn) {
  if (logfn != nullptr) SetNcclLogger(logfn);  // the verdict's line goes to NCCL's log
  const V7Verdict& v = ProcessV7Verdict();
  const char* abi = "v7";
  int allowed = ~0;
  if (v.reading == V7Reading::kRcclAppended) {
    abi = "v7-rccl";
    g_first_foreign_state.store(NCCLSCOPE_RCCL_STATE_PROXY_DIAG_UPDATE, std::memory_order_relaxed);
  } else if (v.reading == V7Reading::kRcclAsV6) {
    abi = "v7-rccl-as-v6";
    allowed = 0x7fff;  // no KernelPhase: its layout and numbering are RCCL's to define
    g_first_foreign_state.store(NCCLSCOPE_STATE_KERNEL_PHASE_STOP, std::memory_order_relaxed);
    g_v7_as_v6.store(true, std::memory_order_relaxed);
  }
  ncclscope_result_t rc =
      InitV5Plus(abi, context, commId, eActivationMask, commName, nNodes, nranks, rank, logfn, allowed);
  if (!v.why.empty()) {
    if (v.reading == V7Reading::kRcclAsV6) {
      NCCLSCOPE_LOG_ONCE(NCCLSCOPE_WARN, subsys::kInit, "%s", v.why.c_str());
    } else {
      NCCLSCOPE_LOG_ONCE(NCCLSCOPE_INFO, subsys::kInit, "%s", v.why.c_str());
    }
  }
  return rc;
}

void TranslateV7(const ncclscope_profiler_descr_v7_t* e, EventDesc* d) {
  ncclscope_profiler_descr_v6_t v6;
  static_assert(sizeof(v6) < sizeof(*e));
  __builtin_memcpy(&v6, e, sizeof(v6));
  TranslateV6(&v6, d);
  switch (e->type) {
    case NCCLSCOPE_PROFILE_COLL:
      d->user_tag = e->coll.userTag;
      d->symmetric = e->coll.isSymColl;
      break;
    case NCCLSCOPE_PROFILE_P2P:
      d->user_tag = e->p2p.userTag;
      break;
    case NCCLSCOPE_PROFILE_COLL_API:
      d->user_tag = e->collApi.userTag;
      break;
    case NCCLSCOPE_PROFILE_P2P_API:
      d->user_tag = e->p2pApi.userTag;
      break;
    case NCCLSCOPE_PROFILE_CE_COLL:
      d->user_tag = e->ceColl.userTag;
      break;
    case NCCLSCOPE_PROFILE_KERNEL_PHASE:
      d->type = EventType::kKernelPhase;
      d->parent = e->parentObj;
      d->rank = e->rank;
      d->channel = e->kernelPhase.channelId;
      d->phase = e->kernelPhase.phaseId;
      d->has_ptimer = true;
      d->ptimer = e->kernelPhase.pTimer;
      break;
    default:
      break;
  }
}

// RCCL's v7 through v6's layout: every v6 arm sits at v6's offsets in each RCCL copy; nothing past v6's 112
// bytes is read (an untagged descriptor is 128 bytes, NVIDIA's userTag at 128 would lie past it). KernelPhase
// events are dropped: RCCL defines them.
[[gnu::noinline]] ncclscope_result_t StartEventV7AsV6(void* context, void** eHandle,
                                                      ncclscope_profiler_descr_v7_t* eDescr) {
  if (eDescr != nullptr && eDescr->type >= NCCLSCOPE_PROFILE_KERNEL_PHASE) {
    if (eHandle != nullptr) *eHandle = nullptr;
    return NCCLSCOPE_SUCCESS;
  }
  return StartEventAbi(6, "ncclProfiler_v7 startEvent (read as v6)", &TranslateV6, context, eHandle,
                       reinterpret_cast<ncclscope_profiler_descr_v6_t*>(eDescr));
}

ncclscope_result_t StartEventV7(void* context, void** eHandle, ncclscope_profiler_descr_v7_t* eDescr) {
  if (__builtin_expect(g_v7_as_v6.load(std::memory_order_relaxed), 0)) {
    return StartEventV7AsV6(context, eHandle, eDescr);
  }
  return StartEventAbi(7, "ncclProfiler_v7 startEvent", &TranslateV7, context, eHandle, eDescr);
}

}  // namespace
}  // namespace ncclscope::profiler::abi

extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v7_export_t ncclProfiler_v7 = {
    .table =
        {
            .name = "ncclscope",
            .init = ncclscope::profiler::abi::InitV7,
            .startEvent = ncclscope::profiler::abi::StartEventV7,
            .stopEvent = ncclscope::profiler::abi::StopEventAbi,
            .recordEventState = ncclscope::profiler::abi::RecordEventStateAbi,
            .finalize = ncclscope::profiler::abi::FinalizeAbi,
        },
    .optional_slots = {},
};

#include "profiler/profiler.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "common/params.h"
#include "common/runtime.h"
#include "core/registry.h"
#include "common/tsan_lock.h"
#include "profiler/comm_context.h"

namespace ncclscope::profiler {
namespace {

// The context table: NCCL's `context` is &g_slots[i]. 4096 live communicators per process is far
// beyond any real job; init fails cleanly (NCCL continues without us) when it is full.
constexpr int kMaxContexts = 4096;
struct alignas(16) CtxSlot {
  std::atomic<CommContext*> ctx{nullptr};
};
CtxSlot g_slots[kMaxContexts];

ABSL_CONST_INIT absl::Mutex g_mu(absl::kConstInit);
int g_next_slot ABSL_GUARDED_BY(g_mu) = 0;  // round robin: a stale context pointer is reused late
std::vector<CommContext*>* g_retired ABSL_GUARDED_BY(g_mu) = nullptr;
std::atomic<uint64_t> g_retained{0};
std::atomic<CommContext*> g_process{nullptr};
const int g_pid = static_cast<int>(getpid());

// Process-level counters for the registry's snapshot.
class ProcessCounters final : public ProcessCounterSource {
 public:
  void FillProcess(ProcessSnapshot* out) const override {
    CommContext* p = g_process.load(std::memory_order_acquire);
    if (p != nullptr) p->FillCounters(&out->process_dropped, &out->process_events);
  }
};
ProcessCounters g_process_counters;

ContextConfig CurrentConfig() {
  ContextConfig cfg;
  cfg.fr_depth = static_cast<int>(Params().Int(ParamId::kFrDepth));
  cfg.fr_memory_bytes = static_cast<size_t>(Params().Int(ParamId::kFrMemory));
  cfg.event_mask = EffectiveEventMask();
  cfg.stall.floor_ns = static_cast<uint64_t>(Params().Int(ParamId::kStallFloorMs)) * 1'000'000;
  cfg.stall.cap_ns = static_cast<uint64_t>(Params().Int(ParamId::kStallTimeoutS)) * 1'000'000'000;
  cfg.stall.factor = static_cast<uint64_t>(Params().Int(ParamId::kStallFactor));
  return cfg;
}

CommContext* ProcessContext() {
  CommContext* p = g_process.load(std::memory_order_acquire);
  if (p != nullptr) return p;
  AnnotatedLock lock(&g_mu);
  p = g_process.load(std::memory_order_acquire);
  if (p == nullptr) {
    CommInfo info;
    info.abi = "process";
    ContextConfig cfg = CurrentConfig();
    cfg.event_pool = 4096;
    p = new CommContext(info, cfg, /*is_process=*/true);  // lives for the process
    g_process.store(p, std::memory_order_release);
    CommRegistry::Instance().SetProcessSource(&g_process_counters);
  }
  return p;
}

// nullptr if `context` is not one of ours (or is no longer live); counts why on the process context.
CommContext* Resolve(void* context) {
  if (context == nullptr) {
    ProcessContext()->CountDrop(Drop::kNullContext);
    return nullptr;
  }
  auto a = reinterpret_cast<uintptr_t>(context), b = reinterpret_cast<uintptr_t>(&g_slots[0]);
  if (a < b || a >= b + sizeof(g_slots) || (a - b) % sizeof(CtxSlot) != 0) {
    ProcessContext()->CountDrop(Drop::kInvalidContext);
    return nullptr;
  }
  CommContext* c = reinterpret_cast<CtxSlot*>(context)->ctx.load(std::memory_order_acquire);
  if (c == nullptr) ProcessContext()->CountDrop(Drop::kAfterFinalize);
  return c;
}

void SweepRetired() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) {
  if (g_retired == nullptr) return;
  for (auto it = g_retired->begin(); it != g_retired->end();) {
    if ((*it)->TryRetire()) {
      delete *it;
      it = g_retired->erase(it);
      g_retained.fetch_sub(1, std::memory_order_relaxed);
    } else {
      ++it;
    }
  }
}

}  // namespace

// NCCL's version, from its own ncclGetVersion in this process (0 when NCCL is not loaded, e.g. in tests).
int NcclVersionCode() {
  static const int code = [] {
    using GetVersion = int (*)(int*);
    auto get = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
    int v = 0;
    if (get == nullptr || get(&v) != 0) return 0;
    if (DefaultEventMaskFor(v) != kDefaultEventMask) {
      NCCLSCOPE_INFO(subsys::kInit, "NCCL %d.%d.%d: KernelCh left out of the default event mask (it costs up to "
                     "10%% of kernel time in NCCL 2.31, NVIDIA/nccl #2355); NCCLSCOPE_EVENT_MASK=0x46 keeps it",
                     v / 10000, v / 100 % 100, v % 100);
    }
    return v;
  }();
  return code;
}

int EffectiveEventMask() {
  int64_t m = Params().Int(ParamId::kEventMask);
  return m < 0 ? DefaultEventMaskFor(NcclVersionCode()) : static_cast<int>(m);
}

Status Init(const InitArgs& args, void** context) {
  if (context == nullptr) return InvalidArgument("profiler init: NULL context pointer");
  *context = nullptr;
  // Profiler v1-v3 pass no logger: keep the one the net half got (else lines go to stderr at NCCL_DEBUG).
  if (args.logger != nullptr) SetNcclLogger(args.logger);
  Runtime::Instance().Acquire("profiler");
  CommContext* ctx = nullptr;
  try {
    ProcessContext();
    CommInfo info;
    info.comm_hash = args.comm_hash;
    info.has_name = args.comm_name != nullptr;
    if (info.has_name) info.name = args.comm_name;
    info.nnodes = args.nnodes > 0 ? args.nnodes : 1;
    info.nranks = args.nranks > 0 ? args.nranks : 1;
    info.rank = args.rank;
    info.abi = args.abi != nullptr ? args.abi : "neutral";
    ContextConfig cfg = CurrentConfig();
    cfg.event_mask &= args.allowed_mask;  // what NCCL will deliver: v1/v2 no KernelCh, so ops are not timed by it
    if ((cfg.event_mask & kMaskKernelCh) == 0) {
      NCCLSCOPE_LOG_ONCE(NCCLSCOPE_WARN, subsys::kInit,
                         "event mask 0x%x has no KernelCh: an operation counts as done once enqueued, so a hang is "
                         "seen only where ncclscope's net half carries the communicator (its connections go still); "
                         "ncclscope_comm_completion_seen{by=\"none\"} marks the communicators where it is not. "
                         "NCCLSCOPE_EVENT_MASK=0x46 sees every hang (GPU cost: docs/stall-detection.md)",
                         cfg.event_mask);
    }
    ctx = new CommContext(info, cfg, /*is_process=*/false);
  } catch (...) {
    Runtime::Instance().Release("profiler");
    throw;
  }
  CtxSlot* slot = nullptr;
  {
    AnnotatedLock lock(&g_mu);
    for (int i = 0; i < kMaxContexts && slot == nullptr; ++i) {
      int index = (g_next_slot + i) % kMaxContexts;
      if (g_slots[index].ctx.load(std::memory_order_relaxed) == nullptr) {
        slot = &g_slots[index];
        g_next_slot = (index + 1) % kMaxContexts;
        slot->ctx.store(ctx, std::memory_order_release);
      }
    }
  }
  if (slot == nullptr) {
    delete ctx;
    Runtime::Instance().Release("profiler");
    return SystemError("profiler init: more than 4096 live communicators");
  }
  CommRegistry::Instance().Add(ctx);
  const int mask = EffectiveEventMask() & args.allowed_mask;
  if (args.activation_mask != nullptr) __atomic_store_n(args.activation_mask, mask, __ATOMIC_RELAXED);
  *context = slot;
  NCCLSCOPE_INFO(subsys::kProfile, "profiler %s: comm 0x%016llx rank %d/%d, mask 0x%x, %zu bytes",
                 args.abi != nullptr ? args.abi : "neutral", static_cast<unsigned long long>(args.comm_hash), args.rank, args.nranks,
                 mask, ctx->memory_bytes());
  return Status::Ok();
}

void* StartEvent(void* context, const EventDesc& d) {
  // Proxy events of another process (PXN): its context and parent pointers are foreign.
  if (d.type == EventType::kProxyOp && d.pid != 0 && d.pid != g_pid) {
    CommContext* p = ProcessContext();
    EventDesc local = d;
    local.parent = nullptr;
    return p->Start(local);
  }
  // ProxyStep/NetPlugin: the parent is a handle we created in this process; its owner is the context.
  if ((d.type == EventType::kProxyStep || d.type == EventType::kNetPlugin) && d.parent != nullptr) {
    EventSlot* parent = HandleSlot(d.parent);
    CommContext* owner = parent->owner;
    if (owner != nullptr) return owner->Start(d);
  }
  CommContext* c = Resolve(context);
  if (c == nullptr) {
    if (d.type == EventType::kColl || d.type == EventType::kP2p || d.type == EventType::kKernelCh) return nullptr;
    EventDesc local = d;
    local.parent = nullptr;
    return ProcessContext()->Start(local);
  }
  return c->Start(d);
}

void* StartKernelChannel(void* context, void* parent, uint64_t ptimer) {
  CommContext* c = Resolve(context);
  return c != nullptr ? c->StartKernelCh(parent, ptimer) : nullptr;
}

void* StartOperation(void* context, const OpDesc& d) {
  CommContext* c = Resolve(context);
  return c != nullptr ? c->StartOperation(d) : nullptr;
}

void LearnCommIdentity(void* context, uint64_t comm_hash, const char* name, int rank) {
  if (context == nullptr) return;  // the event's own start counts it
  CommContext* c = Resolve(context);
  if (c != nullptr && !c->identity_known()) c->LearnIdentity(comm_hash, name, rank);
}

void StopEvent(void* handle) { CommContext::Stop(handle); }

void RecordEventState(void* handle, const StateUpdate& u) { CommContext::Record(handle, u); }

void Finalize(void* context) {
  auto a = reinterpret_cast<uintptr_t>(context), b = reinterpret_cast<uintptr_t>(&g_slots[0]);
  if (context == nullptr || a < b || a >= b + sizeof(g_slots) || (a - b) % sizeof(CtxSlot) != 0) return;
  CommContext* ctx = reinterpret_cast<CtxSlot*>(context)->ctx.exchange(nullptr, std::memory_order_acq_rel);
  if (ctx == nullptr) return;
  ctx->MarkFinalized();
  CommRegistry::Instance().Remove(ctx);
  CommSnapshot snap;
  ctx->Fill(&snap);
  CommRegistry::Instance().RunDumpHooks(snap, DumpReason::kFinalize);
  {
    AnnotatedLock lock(&g_mu);
    if (ctx->TryRetire()) {
      delete ctx;
    } else {
      // NCCL still holds handles into its pools (ProxyOps that are never stopped): keep it.
      if (g_retired == nullptr) g_retired = new std::vector<CommContext*>();
      g_retired->push_back(ctx);
      g_retained.fetch_add(1, std::memory_order_relaxed);
    }
    SweepRetired();
  }
  Runtime::Instance().Release("profiler");
}

size_t ContextMemoryBytes(void* context) {
  CommContext* c = Resolve(context);
  return c != nullptr ? c->memory_bytes() : 0;
}

uint64_t RetainedContexts() { return g_retained.load(std::memory_order_relaxed); }

}  // namespace ncclscope::profiler

#include "plugin/profiler/chain.h"

#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/inner_call.h"
#include "common/log.h"
#include "common/params.h"
#include "common/plugin_library.h"
#include "profiler/pools.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler::abi::chain {
namespace {

constexpr uint32_t kPairs = 1 << 16;  // live events of the whole process (1.5 MiB, only when chaining)

struct Chained {
  int version = 0;  // 5, 6 or 7
  const void* table = nullptr;
  std::string where;
  std::string who;  // "the chained profiler plugin 'NAME' (WHERE)"
};

Chained* g_chained = nullptr;  // set once by Load, never freed (NCCL threads may call until exit)
FixedPool<detail::Pair>* g_pairs = nullptr;
FixedPool<detail::ChainCtx>* g_ctxs = nullptr;  // live chained communicators
constexpr uint32_t kContexts = 4096;
std::atomic<uint64_t> g_pair_drops{0};

// Event types each side must receive to see its own mask's events with their parents: NCCL starts the parents of
// every event it emits (docs/nccl-abi.md#profiler-events).
uint64_t AncestorClosure(uint64_t mask) {
  struct Edge {
    uint64_t child, parents;
  };
  static constexpr Edge kEdges[] = {
      {NCCLSCOPE_PROFILE_COLL, NCCLSCOPE_PROFILE_COLL_API | NCCLSCOPE_PROFILE_GROUP},
      {NCCLSCOPE_PROFILE_P2P, NCCLSCOPE_PROFILE_P2P_API | NCCLSCOPE_PROFILE_GROUP},
      {NCCLSCOPE_PROFILE_COLL_API, NCCLSCOPE_PROFILE_GROUP_API},
      {NCCLSCOPE_PROFILE_P2P_API, NCCLSCOPE_PROFILE_GROUP_API},
      {NCCLSCOPE_PROFILE_KERNEL_LAUNCH, NCCLSCOPE_PROFILE_GROUP_API},
      {NCCLSCOPE_PROFILE_PROXY_OP, NCCLSCOPE_PROFILE_COLL | NCCLSCOPE_PROFILE_P2P},
      {NCCLSCOPE_PROFILE_KERNEL_CH, NCCLSCOPE_PROFILE_COLL | NCCLSCOPE_PROFILE_P2P},
      {NCCLSCOPE_PROFILE_PROXY_STEP, NCCLSCOPE_PROFILE_PROXY_OP},
      {NCCLSCOPE_PROFILE_NET_PLUGIN, NCCLSCOPE_PROFILE_PROXY_STEP},
      {NCCLSCOPE_PROFILE_KERNEL_PHASE, NCCLSCOPE_PROFILE_KERNEL_CH},
      {NCCLSCOPE_PROFILE_CE_SYNC, NCCLSCOPE_PROFILE_CE_COLL},
      {NCCLSCOPE_PROFILE_CE_BATCH, NCCLSCOPE_PROFILE_CE_COLL},
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (const Edge& e : kEdges) {
      if ((mask & e.child) && (mask & e.parents) != e.parents) {
        mask |= e.parents;
        grew = true;
      }
    }
  }
  return mask;
}

Chained* Load() {
  const std::string value = Params().Str(ParamId::kProfilerChain);
  if (value.empty()) return nullptr;
  std::string where;
  const std::string who = "the profiler plugin " + value + " (NCCLSCOPE_PROFILER_CHAIN), while it loaded,";
  void* lib = nullptr;
  {
    InnerCall loading(who);  // its constructors must not re-enter our init (this load is a static's init)
    lib = OpenPluginLibrary("profiler", value, &where);
    if (loading.reentered()) {
      NCCLSCOPE_WARN(subsys::kInit, "NCCLSCOPE_PROFILER_CHAIN=%s: %s; no second profiler", value.c_str(),
                     loading.ReentryError("constructor").message().c_str());
      return nullptr;
    }
  }
  if (lib == nullptr) {
    NCCLSCOPE_WARN(subsys::kInit, "NCCLSCOPE_PROFILER_CHAIN=%s: cannot load it (%s); no second profiler",
                   value.c_str(), where.c_str());
    return nullptr;
  }
  for (int v = 7; v >= 5; --v) {
    const void* t = dlsym(lib, ("ncclProfiler_v" + std::to_string(v)).c_str());
    if (t == nullptr) continue;
    // ncclscope itself, or a table whose entries are ours: our init would call itself without end.
    const Status ours =
        CheckNotOurs(t, sizeof(ncclscope_profiler_v5_t), "ncclProfiler_v" + std::to_string(v), where);
    if (!ours.ok()) {
      NCCLSCOPE_WARN(subsys::kInit, "NCCLSCOPE_PROFILER_CHAIN=%s: %s; no second profiler", value.c_str(),
                     ours.message().c_str());
      return nullptr;
    }
    const char* name = static_cast<const ncclscope_profiler_v5_t*>(t)->name;
    auto* c = new Chained{v, t, where,
                          "the chained profiler plugin '" + std::string(name ? name : "?") + "' (" + where + ")"};
    g_pairs = new FixedPool<detail::Pair>(kPairs);
    g_ctxs = new FixedPool<detail::ChainCtx>(kContexts);
    NCCLSCOPE_INFO(subsys::kInit, "NCCLSCOPE_PROFILER_CHAIN: %s (ncclProfiler_v%d, \"%s\") runs behind ncclscope",
                   where.c_str(), v, static_cast<const ncclscope_profiler_v5_t*>(t)->name);
    return c;
  }
  NCCLSCOPE_WARN(subsys::kInit, "NCCLSCOPE_PROFILER_CHAIN=%s (%s) exports no ncclProfiler_v5, v6 or v7; no second "
                 "profiler", value.c_str(), where.c_str());
  return nullptr;
}

// v5-v7 tables share every slot but startEvent's descriptor type; v5's view serves the other slots.
const ncclscope_profiler_v5_t* Slots() { return static_cast<const ncclscope_profiler_v5_t*>(g_chained->table); }

}  // namespace

namespace detail {

std::atomic<int> g_active{kUnknown};

bool LoadOnce() {
  static const bool active = [] {
    g_chained = Load();
    g_active.store(g_chained != nullptr ? kOn : kOff, std::memory_order_release);  // after g_chained is set
    return g_chained != nullptr;
  }();
  return active;
}

}  // namespace detail

void* WrapInit(void* our_ctx, int* mask, uint64_t comm_id, const char* comm_name, int nnodes, int nranks, int rank,
               ncclscope_logger_t logfn) {
  detail::ChainCtx* cc = g_ctxs->Allocate();
  if (cc == nullptr) {
    NCCLSCOPE_WARN(subsys::kInit, "NCCLSCOPE_PROFILER_CHAIN: more than %u communicators at once; comm 0x%lx runs "
                   "without the second profiler", kContexts, static_cast<unsigned long>(comm_id));
    return our_ctx;
  }
  cc->ours = our_ctx;
  cc->theirs = nullptr;
  cc->their_types = 0;
  cc->our_types = AncestorClosure(static_cast<uint64_t>(EffectiveEventMask()));
  int their_mask = 0;
  void* theirs = nullptr;
  InnerCall call(g_chained->who);
  const ncclscope_result_t rc =
      Slots()->init(&theirs, comm_id, &their_mask, comm_name, nnodes, nranks, rank, logfn);
  if (call.reentered()) {
    NCCLSCOPE_WARN(subsys::kInit, "NCCLSCOPE_PROFILER_CHAIN: %s; it is off for comm 0x%lx, ncclscope goes on",
                   call.ReentryError("init").message().c_str(), static_cast<unsigned long>(comm_id));
    if (rc == NCCLSCOPE_SUCCESS && theirs != nullptr) Slots()->finalize(theirs);
  } else if (rc != NCCLSCOPE_SUCCESS || theirs == nullptr) {
    NCCLSCOPE_WARN(subsys::kInit, "NCCLSCOPE_PROFILER_CHAIN: %s's init failed (%d) for comm 0x%lx; it is off for "
                   "this communicator, ncclscope goes on", g_chained->where.c_str(), static_cast<int>(rc),
                   static_cast<unsigned long>(comm_id));
  } else {
    cc->theirs = theirs;
    cc->their_types = AncestorClosure(static_cast<uint32_t>(their_mask));
    if (mask != nullptr) *mask |= their_mask;
  }
  return cc;
}

void* OurContext(void* ctx) {
  detail::ChainCtx* cc = detail::AsChainCtx(ctx);
  return cc != nullptr ? cc->ours : ctx;
}

void FinalizeTheirs(void* ctx) {
  detail::ChainCtx* cc = detail::AsChainCtx(ctx);
  if (cc == nullptr) return;
  if (cc->theirs != nullptr) Slots()->finalize(cc->theirs);
  g_ctxs->Free(cc);
}

namespace detail {

Pair* NewPair() {
  Pair* p = g_pairs->Allocate();
  if (p == nullptr) g_pair_drops.fetch_add(1, std::memory_order_relaxed);
  return p;
}
void FreePair(Pair* p) { g_pairs->Free(p); }
bool IsPair(const void* h) { return h != nullptr && g_pairs != nullptr && g_pairs->Contains(h); }

ChainCtx* AsChainCtx(void* ctx) {
  return ctx != nullptr && g_ctxs != nullptr && g_ctxs->Contains(ctx) ? static_cast<ChainCtx*>(ctx) : nullptr;
}

void* StartTheirs(void* their_ctx, const ncclscope_profiler_descr_v7_t& d) {
  void* h = nullptr;
  switch (g_chained->version) {
    case 7: {
      ncclscope_profiler_descr_v7_t copy = d;
      static_cast<const ncclscope_profiler_v7_t*>(g_chained->table)->startEvent(their_ctx, &h, &copy);
      return h;
    }
    case 6: {
      if (d.type == NCCLSCOPE_PROFILE_KERNEL_PHASE) return nullptr;
      ncclscope_profiler_descr_v6_t v6;
      std::memcpy(&v6, &d, sizeof(v6));
      static_cast<const ncclscope_profiler_v6_t*>(g_chained->table)->startEvent(their_ctx, &h, &v6);
      return h;
    }
    default: {
      if (d.type >= NCCLSCOPE_PROFILE_CE_COLL) return nullptr;
      ncclscope_profiler_descr_v5_t v5;
      std::memcpy(&v5, &d, sizeof(v5));
      Slots()->startEvent(their_ctx, &h, &v5);
      return h;
    }
  }
}

void StopTheirs(void* h) { Slots()->stopEvent(h); }

void RecordTheirs(void* h, ncclscope_profiler_state_t state, ncclscope_profiler_state_args_t* args) {
  Slots()->recordEventState(h, state, args);
}

}  // namespace detail
}  // namespace ncclscope::profiler::abi::chain

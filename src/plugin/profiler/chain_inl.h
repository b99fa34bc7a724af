// The templates of chain.h (included from it only).
#ifndef NCCLSCOPE_PLUGIN_PROFILER_CHAIN_INL_H_
#define NCCLSCOPE_PLUGIN_PROFILER_CHAIN_INL_H_

#include <atomic>
#include <cstring>

namespace ncclscope::profiler::abi::chain {
namespace detail {

// What NCCL holds for one event: our handle and the chained plugin's (either may be NULL).
struct Pair {
  std::atomic<uint32_t> state{0};
  void* ours = nullptr;
  void* theirs = nullptr;
};

// A communicator's context as NCCL holds it (from a fixed pool: recognised by address, never dereferenced blind).
struct ChainCtx {
  std::atomic<uint32_t> state{0};
  void* ours = nullptr;
  void* theirs = nullptr;    // NULL: the chained init failed for this communicator
  uint64_t our_types = 0;    // event type bits each side receives: its mask's ancestor closure
  uint64_t their_types = 0;
};

Pair* NewPair();  // NULL when the pool is full (counted)
void FreePair(Pair* p);
bool IsPair(const void* h);
ChainCtx* AsChainCtx(void* ctx);  // NULL for NULL or anything that is not one of ours
// The chained plugin's startEvent, from a v7 descriptor translated down to the version it exports.
void* StartTheirs(void* their_ctx, const ncclscope_profiler_descr_v7_t& d);
void StopTheirs(void* h);
void RecordTheirs(void* h, ncclscope_profiler_state_t state, ncclscope_profiler_state_args_t* args);

inline void* OursOf(void* h) { return IsPair(h) ? static_cast<Pair*>(h)->ours : h; }
inline void* TheirsOf(void* h) { return IsPair(h) ? static_cast<Pair*>(h)->theirs : h; }

// Any v5/v6/v7 descriptor as v7: the same bytes, and no tag where the older layout had other arms' bytes.
template <class Descr>
ncclscope_profiler_descr_v7_t ToV7(const Descr& d) {
  static_assert(sizeof(Descr) <= sizeof(ncclscope_profiler_descr_v7_t));
  ncclscope_profiler_descr_v7_t v7;
  std::memset(&v7, 0, sizeof(v7));
  std::memcpy(&v7, &d, sizeof(d));
  if constexpr (sizeof(Descr) < sizeof(v7)) {
    switch (d.type) {
      case NCCLSCOPE_PROFILE_COLL_API: v7.collApi.userTag = 0; break;
      case NCCLSCOPE_PROFILE_P2P_API: v7.p2pApi.userTag = 0; break;
      case NCCLSCOPE_PROFILE_P2P: v7.p2p.userTag = 0; break;
      default: break;
    }
  }
  return v7;
}

}  // namespace detail

template <class Descr, class StartOurs>
void* Start(int version, void* ctx, const Descr* d, StartOurs&& start_ours) {
  (void)version;
  detail::ChainCtx* cc = detail::AsChainCtx(ctx);
  const uint64_t type = d->type;
  detail::Pair* p = detail::NewPair();
  if (p == nullptr) return nullptr;
  p->ours = p->theirs = nullptr;
  if (cc == nullptr || (cc->our_types & type) != 0) {
    Descr mine = *d;
    mine.parentObj = detail::OursOf(d->parentObj);
    if (type == NCCLSCOPE_PROFILE_COLL) mine.coll.parentGroup = detail::OursOf(d->coll.parentGroup);
    if (type == NCCLSCOPE_PROFILE_P2P) mine.p2p.parentGroup = detail::OursOf(d->p2p.parentGroup);
    p->ours = start_ours(cc != nullptr ? cc->ours : ctx, &mine);
  }
  if (cc != nullptr && cc->theirs != nullptr && (cc->their_types & type) != 0) {
    ncclscope_profiler_descr_v7_t theirs = detail::ToV7(*d);
    theirs.parentObj = detail::TheirsOf(d->parentObj);
    if (type == NCCLSCOPE_PROFILE_COLL) theirs.coll.parentGroup = detail::TheirsOf(d->coll.parentGroup);
    if (type == NCCLSCOPE_PROFILE_P2P) theirs.p2p.parentGroup = detail::TheirsOf(d->p2p.parentGroup);
    p->theirs = detail::StartTheirs(cc->theirs, theirs);
  }
  if (p->ours == nullptr && p->theirs == nullptr) {
    detail::FreePair(p);
    return nullptr;
  }
  return p;
}

template <class StopOurs>
void Stop(void* handle, StopOurs&& ours) {
  if (!detail::IsPair(handle)) return ours(handle);  // NULL (NCCL may stop one) or not ours to translate
  auto* p = static_cast<detail::Pair*>(handle);
  if (p->ours != nullptr) ours(p->ours);
  if (p->theirs != nullptr) detail::StopTheirs(p->theirs);
  detail::FreePair(p);
}

template <class RecordOurs>
void Record(void* handle, ncclscope_profiler_state_t state, ncclscope_profiler_state_args_t* args, RecordOurs&& ours) {
  if (!detail::IsPair(handle)) return ours(handle);
  auto* p = static_cast<detail::Pair*>(handle);
  if (p->ours != nullptr) ours(p->ours);
  if (p->theirs != nullptr) detail::RecordTheirs(p->theirs, state, args);
}

}  // namespace ncclscope::profiler::abi::chain

#endif  // NCCLSCOPE_PLUGIN_PROFILER_CHAIN_INL_H_

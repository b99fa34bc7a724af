// A communicator's profiler context: construction and size. The event path is in comm_events.cc, the
// snapshot in comm_snapshot.cc, the stall check in comm_stall_check.cc.
#include "profiler/comm_context.h"

#include <unistd.h>

#include <cstring>

#include "common/clock.h"
#include "profiler/fr_budget.h"

namespace ncclscope::profiler {

CommContext::CommContext(const CommInfo& info, const ContextConfig& cfg, bool is_process)
    : info_(info),
      cfg_(cfg),
      is_process_(is_process),
      pid_(static_cast<int>(getpid())),
      created_realtime_ns_(RealtimeNs()),
      events_pool_(OpPoolSize(cfg, is_process) + cfg.event_pool, OpPoolSize(cfg, is_process)),
      ops_pool_(OpPoolSize(cfg, is_process)),
      fr_(is_process ? 1 : FlightRecorderBudget::Process().Reserve(cfg.fr_depth, cfg.fr_memory_bytes, info.comm_hash)),
      p2p_seq_(new std::atomic<uint32_t>[2 * static_cast<size_t>(info.nranks > 0 ? info.nranks : 1) + 2]) {
  size_t n = 2 * static_cast<size_t>(info.nranks > 0 ? info.nranks : 1) + 2;
  for (size_t i = 0; i < n; ++i) p2p_seq_[i].store(0, std::memory_order_relaxed);
  for (int f = 0; f < static_cast<int>(Func::kCount); ++f) {
    bus_factor_[f] = BusBwFactor(static_cast<Func>(f), info.nranks);
  }
}

CommContext::~CommContext() {
  if (!is_process_) FlightRecorderBudget::Process().Release(fr_.depth());
}

size_t CommContext::memory_bytes() const {
  return sizeof(*this) + events_pool_.memory_bytes() + ops_pool_.memory_bytes() + fr_.memory_bytes() +
         CommAggregates::memory_bytes() + sizeof(std::atomic<uint32_t>) * (2 * static_cast<size_t>(info_.nranks) + 2) +
         info_.name.capacity();
}

void CommContext::LearnIdentity(uint64_t comm_hash, const char* name, int rank) {
  if (is_process_ || info_.comm_hash != 0 || comm_hash == 0) return;
  int open = kLearnOpen;
  if (!learn_state_.compare_exchange_strong(open, kLearnClaimed, std::memory_order_acq_rel)) return;
  learned_hash_ = comm_hash;
  learned_rank_ = rank;
  learned_has_name_ = name != nullptr;
  if (name != nullptr) {
    size_t n = 0;
    while (n + 1 < kLearnedNameBytes && name[n] != '\0') ++n;
    std::memcpy(learned_name_, name, n);
    learned_name_[n] = '\0';
  }
  learn_state_.store(kLearned, std::memory_order_release);
}

// The ops last: Release frees an operation's slot before the operation itself (see there).
bool CommContext::TryRetire() { return events_pool_.Live() == 0 && ops_pool_.Live() == 0; }

}  // namespace ncclscope::profiler

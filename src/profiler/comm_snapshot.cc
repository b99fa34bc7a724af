// Reading a communicator for snapshots: its operations (in flight and completed), counters and totals.
#include "profiler/comm_context.h"

#include <algorithm>

#include "common/clock.h"
#include "profiler/comm_read_op.h"

namespace ncclscope::profiler {
namespace {

constexpr const char* kDropNames[] = {"event_pool_full", "op_pool_full",   "unknown_type",  "unknown_state",
                                      "stale_handle",    "stale_parent",   "foreign_parent", "null_context",
                                      "invalid_context", "after_finalize", "net_unknown_plugin", "net_bad_descriptor",
                                      "net_bad_device",  "net_unattributed"};
static_assert(sizeof(kDropNames) / sizeof(kDropNames[0]) == static_cast<size_t>(Drop::kCount));

constexpr const char* kEventNames[] = {"Group",   "Coll",     "P2p",    "ProxyOp",      "ProxyStep", "ProxyCtrl",
                                       "KernelCh", "NetPlugin", "GroupApi", "CollApi",    "P2pApi",    "KernelLaunch",
                                       "CeColl",  "CeSync",   "CeBatch", "KernelPhase", "Unknown"};
static_assert(sizeof(kEventNames) / sizeof(kEventNames[0]) == static_cast<size_t>(EventType::kCount));

}  // namespace

const char* DropName(Drop d) { return kDropNames[static_cast<int>(d)]; }
const char* EventTypeName(EventType t) { return kEventNames[static_cast<int>(t)]; }

void CommContext::FillCounters(std::map<std::string, uint64_t>* dropped, std::map<std::string, uint64_t>* events,
                               const uint64_t* kernel_ch) const {
  for (int i = 0; i < static_cast<int>(Drop::kCount); ++i) {
    uint64_t v = drops_[i].load(std::memory_order_relaxed);
    if (v != 0) (*dropped)[kDropNames[i]] += v;
  }
  if (agg_.dropped_full() != 0) (*dropped)["aggregate_table_full"] += agg_.dropped_full();
  for (int i = 0; i < static_cast<int>(EventType::kCount); ++i) {
    uint64_t v = events_[i].load(std::memory_order_relaxed);
    if (i == static_cast<int>(EventType::kKernelCh) && kernel_ch != nullptr) v = *kernel_ch;
    if (i == static_cast<int>(EventType::kColl)) v += op_events_[0].Get();
    if (i == static_cast<int>(EventType::kP2p)) v += op_events_[1].Get();
    if (v != 0) (*events)[kEventNames[i]] += v;
  }
}

uint64_t CommContext::IdleNs(uint64_t now, uint64_t arrivals) const {
  if (arrivals == 0) return now;
  OpRecord newest;
  if (!fr_.Newest(arrivals, &newest)) return 0;
  const uint64_t last = std::max({newest.start_ns, newest.enqueued_ns, newest.end_ns});
  return last != 0 && now > last ? now - last : 0;
}

void CommContext::Fill(CommSnapshot* out, SnapshotScope scope) const {
  const uint64_t now = MonotonicNs();
  // KernelCh events: those counted so far plus the announced channels started by operations still in
  // flight (not yet sealed by Complete). Read before the scan, with acquire: see Complete.
  uint64_t kernel_ch = events_[static_cast<int>(EventType::kKernelCh)].load(std::memory_order_acquire);
  const bool learned = Learned();  // profiler v1-v3: named by the first Coll or P2p (LearnIdentity)
  out->comm_hash = learned ? learned_hash_ : info_.comm_hash;
  out->comm_name = learned ? std::string(learned_name_) : info_.name;
  out->has_name = learned ? learned_has_name_ : info_.has_name;
  out->rank = learned ? learned_rank_ : info_.rank;
  out->nranks = info_.nranks;
  out->nnodes = info_.nnodes;
  out->pid = pid_;
  out->abi = info_.abi;
  out->created_realtime_ns = created_realtime_ns_;
  out->snapshot_monotonic_ns = now;
  out->finalized = finalized();
  out->stalled = stalled_.load(std::memory_order_relaxed);
  out->arrivals = arrival_.load(std::memory_order_relaxed);
  for (int k = 0; k < 2; ++k) {
    for (int f = 0; f < static_cast<int>(Func::kCount); ++f) {
      uint64_t n = op_count_[k][f].Get(), last = last_seq_[k][f].Get();
      if (n == 0 && last == 0) continue;
      OpTotals t;
      t.kind = static_cast<OpKind>(k);
      t.func = static_cast<Func>(f);
      t.count = n;
      t.bytes = op_bytes_[k][f].Get();
      t.last_seq = last;
      out->ops.push_back(t);
    }
  }
  out->aggregates = agg_.Snapshot();
  out->p2p_peers.clear();
  const size_t p2p_slots = 2 * static_cast<size_t>(info_.nranks > 0 ? info_.nranks : 1) + 2;
  for (size_t i = 0; i < p2p_slots; ++i) {
    const uint64_t n = p2p_seq_[i].load(std::memory_order_relaxed);
    if (n == 0) continue;
    const int peer = i / 2 < static_cast<size_t>(info_.nranks) ? static_cast<int>(i / 2) : -1;
    out->p2p_peers.push_back({peer, (i & 1) != 0, n});
  }
  for (const TagCell& c : tags_) {
    const uint64_t tag = c.tag.load(std::memory_order_acquire);
    if (tag != 0) out->tags.push_back({tag, c.ops.Get(), c.bytes.Get()});
  }
  out->tags_other = {0, tags_other_ops_.Get(), tags_other_bytes_.Get()};
  out->phase_ops = phase_ops_.Get();
  for (int i = 0; i < kKernelPhases; ++i) out->phase_sum_ns[i] = phase_sum_ns_[i].Get();
  out->symmetric_ops = symmetric_ops_.Get();
  out->symmetric_barrier_ns = symmetric_barrier_ns_.Get();
  out->fr_depth = fr_.depth();
  out->fr_overwritten = fr_.overwritten(out->arrivals);  // the recorder is indexed by arrival
  if (scope == SnapshotScope::kFull) out->completed = fr_.Snapshot(out->arrivals);
  out->in_flight.clear();
  for (uint32_t i = 0; i < ops_pool_.size(); ++i) {
    const Op& op = ops_pool_.at(i);
    if (op.state.load(std::memory_order_acquire) != Op::kInFlight) continue;
    OpRecord r = ReadOp(op, now);
    const uint16_t started = op.kernel_started.load(std::memory_order_relaxed);
    const bool kernel_mode = op.kernel_mode.Get();
    std::atomic_thread_fence(std::memory_order_acquire);  // the reads above before the re-check below
    if (op.state.load(std::memory_order_acquire) != Op::kInFlight || op.arrival.Get() != r.arrival) continue;
    if (kernel_mode && (started & Op::kKernelSealed) == 0) kernel_ch += std::min<uint16_t>(started, r.channels);
    out->in_flight.push_back(r);
  }
  std::sort(out->in_flight.begin(), out->in_flight.end(),
            [](const OpRecord& a, const OpRecord& b) { return a.arrival < b.arrival; });
  out->in_flight_count = static_cast<int>(out->in_flight.size());
  out->oldest_in_flight_age_ns = 0;
  for (const OpRecord& r : out->in_flight) {
    if (r.start_ns != 0 && now > r.start_ns) out->oldest_in_flight_age_ns = std::max(out->oldest_in_flight_age_ns, now - r.start_ns);
  }
  out->wait = FindWait(now, cfg_.stall);
  out->idle_ns = out->in_flight.empty() && !out->wait.present ? IdleNs(now, out->arrivals) : 0;
  out->completion = is_process_ ? CompletionSeen::kKernel : Completion(now);
  int64_t off = gpu_offset_.load(std::memory_order_relaxed);
  out->has_gpu_offset = off != INT64_MAX;
  out->gpu_to_host_offset_ns = out->has_gpu_offset ? off : 0;
  // The sum never exceeds the starts seen, but an op caught between its seal and its add is missing from
  // both terms: report the highest sum so far, so that the counter never goes backwards (exact once quiet).
  uint64_t reported = kernel_ch_reported_.load(std::memory_order_relaxed);
  while (kernel_ch > reported &&
         !kernel_ch_reported_.compare_exchange_weak(reported, kernel_ch, std::memory_order_relaxed)) {
  }
  kernel_ch = std::max(kernel_ch, reported);
  FillCounters(&out->dropped, &out->events, &kernel_ch);
  out->memory_bytes = memory_bytes();
}

}  // namespace ncclscope::profiler

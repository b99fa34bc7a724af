// CommContext: everything the profiler keeps for one communicator (or, for the process context,
// for events that belong to no local communicator: NULL context, PXN proxies of other processes).
// Created at profiler init, registered in the core's CommRegistry, unregistered at finalize.
//
// Thread-safety: the event methods (Start*/Stop/Record) are called concurrently from NCCL's
// threads and take no lock and allocate nothing: fixed pools, relaxed atomics, a lock-free flight
// recorder and aggregate table. Fill/CheckStall run under the registry lock on other threads and
// only read atomics. The context outlives every event slot it handed out: finalize frees it only
// when no slot is live, otherwise it is retired and freed when the last slot is released.
#ifndef NCCLSCOPE_PROFILER_COMM_CONTEXT_H_
#define NCCLSCOPE_PROFILER_COMM_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/aggregates.h"
#include "core/flight_recorder.h"
#include "core/net_links.h"
#include "core/net_stats.h"
#include "core/registry.h"
#include "core/relaxed.h"
#include "profiler/event.h"
#include "profiler/pools.h"
#include "profiler/stall_threshold.h"

namespace ncclscope::profiler {

enum class Drop : uint8_t {
  kEventPoolFull = 0,
  kOpPoolFull,
  kUnknownType,
  kUnknownState,
  kStaleHandle,
  kStaleParent,
  kForeignParent,
  kNullContext,
  kInvalidContext,
  kAfterFinalize,
  // NetPlugin events kept (their stop stays safe) whose IB QP figures are not counted:
  kNetUnknownPlugin,   // a plugin-id type other than IB (0x10000) or socket (0x20000)
  kNetBadDescriptor,   // IB type with NULL extData, an unknown descriptor version or type
  kNetBadDevice,       // qp.device outside [0, kMaxIbDevices)
  kNetUnattributed,    // no ProxyStep parent (dropped or stale): neither direction nor step known
  kCount
};
const char* DropName(Drop d);

struct CommInfo {
  uint64_t comm_hash = 0;
  std::string name;
  bool has_name = false;
  int rank = 0;
  int nranks = 1;
  int nnodes = 1;
  std::string abi = "neutral";
};

// v7 user tags kept apart per communicator; later ones are folded into one counted bucket.
inline constexpr int kMaxTagsPerComm = 16;

struct ContextConfig {
  uint32_t event_pool = 2048;
  uint32_t op_pool = 512;
  int fr_depth = 2048;
  size_t fr_memory_bytes = size_t{64} << 20;   // NCCLSCOPE_FR_MEMORY: all of the process's recorders (fr_budget.h)
  int event_mask = kDefaultEventMask;
  StallPolicy stall;  // the cap is the stall watch's timeout (CheckStall's argument); Fill uses this one
};

class CommContext final : public CommSource {
 public:
  CommContext(const CommInfo& info, const ContextConfig& cfg, bool is_process);
  ~CommContext() override;

  // Event path. Start returns the handle for NCCL (nullptr: dropped, counted).
  void* Start(const EventDesc& d);
  // A KernelCh event, started without a neutral description (see profiler::StartKernelChannel): no slot
  // of its own (see pools.h); `ptimer` 0 when NCCL gave none.
  void* StartKernelCh(void* parent, uint64_t ptimer);
  // A Coll or P2p event, started from its OpDesc (see profiler::StartOperation).
  void* StartOperation(const OpDesc& d);
  static void Stop(void* handle);
  static void Record(void* handle, const StateUpdate& u);
  // Record of a KernelCh stop (state KernelChStop) on a KernelCh handle: its GPU end timer, 0 when none.
  static void RecordKernelChStop(void* handle, uint64_t ptimer) noexcept;

  void CountDrop(Drop d) { drops_[static_cast<int>(d)].fetch_add(1, std::memory_order_relaxed); }
  void CountEvent(EventType t) { events_[static_cast<int>(t)].fetch_add(1, std::memory_order_relaxed); }

  // Registry side.
  void Fill(CommSnapshot* out, SnapshotScope scope = SnapshotScope::kFull) const override;
  StallChange CheckStall(uint64_t now_ns, uint64_t timeout_ns, CommSnapshot* out) override;
  // kernel_ch: the KernelCh count to report instead of the counter (Fill adds the in-flight operations').
  void FillCounters(std::map<std::string, uint64_t>* dropped, std::map<std::string, uint64_t>* events,
                    const uint64_t* kernel_ch = nullptr) const;

  // Lifetime. MarkFinalized; then Retire() returns true if the context may be deleted now.
  void MarkFinalized() { finalized_.store(true, std::memory_order_release); }
  bool finalized() const { return finalized_.load(std::memory_order_acquire); }
  bool TryRetire();
  bool OwnsSlot(const void* p) const { return events_pool_.Contains(p); }
  const CommInfo& info() const { return info_; }
  // Profiler v1-v3 (NCCL 2.23-2.26): init names no communicator; the first Coll or P2p event does, with its
  // commHash, name and rank. The first caller wins; later calls (and contexts whose init named them) are no-ops.
  // Lock-free and allocation-free (the name goes into a fixed buffer, cut at kLearnedNameBytes - 1).
  void LearnIdentity(uint64_t comm_hash, const char* name, int rank);
  bool identity_known() const {
    return info_.comm_hash != 0 || learn_state_.load(std::memory_order_acquire) == kLearned;
  }
  // The communicator's hash and rank: init's, else the learned ones (0 and init's rank until learned).
  uint64_t comm_hash() const { return Learned() ? learned_hash_ : info_.comm_hash; }
  int rank() const { return Learned() ? learned_rank_ : info_.rank; }
  size_t memory_bytes() const;
  uint32_t live_events() const { return events_pool_.Live(); }

 private:
  static uint32_t OpPoolSize(const ContextConfig& cfg, bool is_process) { return is_process ? 1 : cfg.op_pool; }
  // v7 KernelPhase under a live KernelCh handle: a child slot holding a reference on the op's slot.
  void* StartKernelPhase(const EventDesc& d);
  // The op slot a KernelCh handle names, if that op is still live (counts the drop otherwise).
  EventSlot* LiveKernelParent(void* parent_handle);
  // v7: counts a completed op under its tag (bounded table, lock-free; later tags fold into tags_other_).
  void CountTag(uint64_t tag, uint64_t bytes);
  void* StartChild(const EventDesc& d, EventSlot* parent);
  // NetPlugin: a child slot, plus NCCL IB QP accounting into the per-NIC counters (net_ib_accounting.cc).
  void* StartNetPlugin(const EventDesc& d, EventSlot* parent);
  static void StopNetPlugin(EventSlot* s);
  // ProxyStep RecvFlushWait: the step's received bytes split over its IB receive QPs.
  static void RecordStepReceived(EventSlot* step, uint64_t bytes);
  // The counter blocks of NCCL IB device `dev` (< kMaxIbDevices): the NIC total and, for a communicator with a
  // hash, its row. Resolved once per device per context (NetCountersFor takes the net-stats lock and
  // allocates the block, the first time only), then read lock-free.
  void IbCounters(int dev, NetCounters** nic, NetCounters** comm);
  EventSlot* AcquireParent(void* parent_handle);
  // Drops n references; the last one frees the slot (and its Op) and releases the parent.
  static void Release(EventSlot* s, int32_t n = 1);
  // Casts one completion vote; the last one completes the op and returns true. now_ns 0: read the clock.
  bool OpVote(Op* op, uint64_t now_ns);
  // Completion votes (and the references they hold on the op's slot): the Coll/P2p stop, plus one per
  // announced channel when KernelCh events time the op.
  static int32_t Votes(const Op& op) { return 1 + (op.kernel_mode.Get() ? op.channels.Get() : 0); }
  void CalibrateGpuOffset(int64_t sample);
  void Complete(Op* op, uint64_t now_ns);
  OpRecord ReadOp(const Op& op, uint64_t now_ns) const;  // inline, in comm_read_op.h
  // The in-flight operation started first, or null (comm_stall_check.cc, as are the two below).
  const Op* OldestInFlight() const;
  // The in-flight time past which `op` (the oldest) counts as stalled: the adaptive threshold, but no more than the
  // floor once a connection of this communicator has failed (that operation can never complete, however slow its
  // kind usually is). Hands back the communicator's connections where it read them.
  uint64_t StallThreshold(const OpRecord& op, uint64_t now_ns, const StallPolicy& policy,
                          std::optional<CommNetLinks>* links) const;
  // Where the oldest in-flight operation waits, when it is past its threshold under `policy`.
  WaitSite FindWait(uint64_t now_ns, const StallPolicy& policy) const;
  // CommSnapshot::idle_ns of a communicator with nothing in flight: since its newest recorded operation ended.
  uint64_t IdleNs(uint64_t now, uint64_t arrivals) const;
  // Without KernelCh an operation completes at enqueue and none is seen in flight: the communicator counts as
  // stalled when its connections have requests pending and none has moved for the floor (or one failed).
  WaitSite NetworkOnlyWait(uint64_t now_ns, const StallPolicy& policy) const;
  // How this communicator's operations are seen to finish (KernelCh, or only the net half's connections, or not).
  CompletionSeen Completion(uint64_t now_ns) const;
  // One WaitPeer per pending connection, the longest waiting first, at most kMaxWaitPeers.
  static void AddLinkPeers(CommNetLinks* links, std::vector<WaitPeer>* peers);
  // The peers of `op`'s unfinished ProxyOp events (one entry per direction with some pending); false when none.
  static bool AddProxyPeers(const Op& op, uint64_t age_ns, std::vector<WaitPeer>* peers);

  static constexpr int kLearnOpen = 0, kLearnClaimed = 1, kLearned = 2;
  static constexpr size_t kLearnedNameBytes = 128;
  bool Learned() const { return learn_state_.load(std::memory_order_acquire) == kLearned; }

  const CommInfo info_;
  // Written once by the LearnIdentity call that claims learn_state_, then published with kLearned (release).
  std::atomic<int> learn_state_{kLearnOpen};
  uint64_t learned_hash_ = 0;
  int learned_rank_ = 0;
  bool learned_has_name_ = false;
  char learned_name_[kLearnedNameBytes] = {};
  const ContextConfig cfg_;
  const bool is_process_;
  const int pid_;
  const uint64_t created_realtime_ns_;
  FixedPool<EventSlot> events_pool_;
  FixedPool<Op> ops_pool_;
  FlightRecorder fr_;
  CommAggregates agg_;
  StallHistory stall_history_;
  StillnessHistory stillness_;  // sampled by CheckStall (under the registry lock)
  std::unique_ptr<std::atomic<uint32_t>[]> p2p_seq_;  // [peer * 2 + is_send]
  // Counters' own lanes (LanedCounter) belong to one thread each: the first to start an operation here
  // (last_seq_) and the first to complete one (op_count_, op_bytes_, agg_). Claimed once, never released.
  double bus_factor_[static_cast<int>(Func::kCount)];  // BusBwFactor per function at this size (a division)
  alignas(64) std::atomic<uintptr_t> start_lane_{0};
  std::atomic<uintptr_t> complete_lane_{0};
  LanedMax<uint64_t> last_seq_[2][static_cast<int>(Func::kCount)];
  LanedCounter<uint64_t> op_events_[2];  // Coll and P2p starts (by OpKind), counted on the start lane
  LanedCounter<uint64_t> op_count_[2][static_cast<int>(Func::kCount)];
  LanedCounter<uint64_t> op_bytes_[2][static_cast<int>(Func::kCount)];
  struct TagCell {
    std::atomic<uint64_t> tag{0};  // 0: free; claimed once by CAS, never released
    RelaxedAtomic<uint64_t> ops, bytes;
  };
  TagCell tags_[kMaxTagsPerComm];
  RelaxedAtomic<uint64_t> tags_other_ops_, tags_other_bytes_;
  // v7 KernelPhase totals: operations that reported phases, and per phase the sum of their longest channel's
  // time; initial_sync of symmetric collectives separately (there it is the wait for the other ranks).
  RelaxedAtomic<uint64_t> phase_ops_, phase_sum_ns_[kKernelPhases];
  RelaxedAtomic<uint64_t> symmetric_ops_, symmetric_barrier_ns_;
  alignas(64) std::atomic<uint64_t> arrival_{0};
  alignas(64) std::atomic<uint64_t> drops_[static_cast<int>(Drop::kCount)] = {};
  // Per event type; Coll and P2p stay 0 here (op_events_ counts them on the start lane) and the snapshot adds both.
  std::atomic<uint64_t> events_[static_cast<int>(EventType::kCount)] = {};
  // GPU→host calibration: the smallest (host_monotonic − gpu) seen at a KernelCh start; the host
  // sees the start late, so the minimum is the best estimate of the true offset.
  std::atomic<int64_t> gpu_offset_{INT64_MAX};
  // NCCL IB devices seen in NetPlugin events: counter blocks, filled on first sight (see IbCounters).
  std::atomic<NetCounters*> ib_nic_[kMaxIbDevices] = {};
  std::atomic<NetCounters*> ib_comm_[kMaxIbDevices] = {};
  std::atomic<bool> finalized_{false};
  std::atomic<bool> stalled_{false};
  std::atomic<uint64_t> stalled_arrival_{UINT64_MAX};
  // The stall last reported (CheckStall only, under the registry lock): for the line that says it is over.
  Func stalled_func_ = Func::kOther;
  uint64_t stalled_seq_ = 0, stalled_since_ns_ = 0;
  mutable std::atomic<uint64_t> kernel_ch_reported_{0};  // the highest KernelCh count a snapshot reported
};

}  // namespace ncclscope::profiler

#endif  // NCCLSCOPE_PROFILER_COMM_CONTEXT_H_

// Plain data a snapshot of the telemetry core is made of: the live-communicator registry, per
// communicator aggregates, flight recorders, in-flight operations and drop counters. No NCCL types
// and no pointers into live state, so exporters and tools can keep, copy and serialise a snapshot
// on any thread without further synchronisation.
#ifndef NCCLSCOPE_CORE_SNAPSHOT_H_
#define NCCLSCOPE_CORE_SNAPSHOT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/op_types.h"

namespace ncclscope {

inline constexpr int kLatencyBuckets = 40;  // bucket i holds durations in [2^i, 2^(i+1)) ns; 0 holds < 2 ns

// One completed (or in-flight) operation as the flight recorder keeps it.
struct OpRecord {
  uint64_t seq = 0;        // NCCL seqNumber for collectives, our per-(peer, direction) counter for p2p
  uint64_t arrival = 0;    // our per-communicator arrival counter
  uint64_t count = 0;      // elements as NCCL reported them
  uint64_t bytes = 0;      // nccl-tests byte base
  uint64_t start_ns = 0;   // host monotonic: Coll/P2p start (enqueue began)
  uint64_t enqueued_ns = 0;  // host monotonic: Coll/P2p stop (enqueue done)
  uint64_t end_ns = 0;       // host monotonic: completion observed
  uint64_t gpu_start_ns = 0;  // GPU %globaltimer domain (0: none)
  uint64_t gpu_end_ns = 0;
  uint64_t kernel_start_host_ns = 0;  // gpu_start calibrated to host monotonic (0: unknown)
  uint64_t duration_ns = 0;  // in one domain only, per timing_source
  int32_t peer_or_root = -1;
  uint16_t channels = 0;
  uint16_t kernel_channels_done = 0;
  uint16_t proxy_ops_started = 0;
  uint16_t proxy_ops_done = 0;
  uint32_t steps_total = 0;
  uint32_t steps_done = 0;
  OpKind kind = OpKind::kColl;
  Func func = Func::kOther;
  Algo algo = Algo::kNone;
  Proto proto = Proto::kNone;
  OpState state = OpState::kEnqueued;
  TimingSource timing_source = TimingSource::kCpu;
  uint8_t type_size = 1;
  uint8_t is_send = 0;  // p2p direction
  bool symmetric = false;  // v7: a symmetric-memory collective
  uint64_t user_tag = 0;   // v7: the caller's tag (0 = untagged)
  // v7 KernelPhase durations, the longest channel's, ns (saturating): initial_sync, compute, final_sync; 0 = none.
  uint32_t phase_ns[3] = {0, 0, 0};
};

// One aggregate cell: communicator × kind/function × algorithm/protocol × power-of-two size class.
struct AggregateCell {
  OpKind kind = OpKind::kColl;
  Func func = Func::kOther;
  Algo algo = Algo::kNone;
  Proto proto = Proto::kNone;
  int size_class = 0;
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t bus_bytes = 0;  // bytes × bus factor, so rate(bus_bytes)/rate(time) is busbw
  uint64_t latency_count = 0;        // operations with a GPU or proxy duration
  uint64_t latency_sum_ns = 0;
  uint64_t latency_buckets[kLatencyBuckets] = {};
  uint64_t cpu_count = 0;            // operations with only a CPU (enqueue) duration
  uint64_t cpu_sum_ns = 0;
};

// Per (kind, function) totals as the dump's "ops" array has them.
struct OpTotals {
  OpKind kind = OpKind::kColl;
  Func func = Func::kOther;
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t last_seq = 0;
};

// Point-to-point operations started towards one peer in one direction (peer -1: outside [0, nranks)).
struct PeerProgress {
  int peer = -1;
  bool send = false;
  uint64_t started = 0;
};

// v7: operations and bytes of one user tag (0 never appears: untagged operations are the totals' rest).
struct TagTotals {
  uint64_t tag = 0;
  uint64_t ops = 0;
  uint64_t bytes = 0;
};

// Where a communicator's oldest operation waits once it is past its stall threshold (see WaitSite).
enum class WaitClass : uint8_t {
  kHost = 0,  // issued, but its kernel has not started on this rank (not launched)
  kPeer,      // launched, and waiting on peers: network requests pending towards them, or a send/recv's peer
  kKernel,    // launched, not finished, and none of this communicator's network requests is pending
  kLaunched,  // launched, not finished; the net half does not carry this communicator, so where is not known
};
inline const char* WaitClassName(WaitClass c) {
  constexpr const char* kNames[] = {"host", "peer", "kernel", "launched"};
  return kNames[static_cast<int>(c)];
}

// One peer a stuck operation's network requests wait on (merged over the connections to it in one direction).
struct WaitPeer {
  int peer_global_rank = -1;  // -1: the connection handshake did not say (a wrapped plugin's connection)
  int peer_rank = -1;         // the peer's rank in the communicator, when the operation names it (send/recv)
  std::string peer_host;      // "": not known
  std::string nic;
  bool send = false;
  int64_t requests = 0;
  uint64_t waiting_ns = 0;    // since a request to this peer last completed (or the connection failed)
  bool failed = false;        // the connection already failed (its error is in the net-error log)
};

inline constexpr size_t kMaxWaitPeers = 8;  // per communicator: the longest-waiting ones

// How the profiler sees an operation finish, which decides whether a hang can be seen at all.
enum class CompletionSeen : uint8_t {
  kKernel = 0,   // KernelCh events: the GPU says when each channel is done
  kNetwork = 1,  // KernelCh off: operations "complete" at enqueue; a stall shows as the net half's still connections
  kNone = 2,     // KernelCh off and the net half carries none of this communicator's traffic: a hang is not seen
};
inline const char* CompletionSeenName(CompletionSeen c) {
  constexpr const char* kNames[] = {"kernel", "network", "none"};
  return kNames[static_cast<int>(c)];
}

struct WaitSite {
  bool present = false;  // the oldest in-flight operation is past its threshold
  // No operation is seen in flight (KernelCh off): the communicator's connections are still while requests wait.
  // kind, func, seq and arrival are then those of the latest operation issued, the one it waits in or a later one.
  bool network_only = false;
  WaitClass cls = WaitClass::kLaunched;
  OpKind kind = OpKind::kColl;
  Func func = Func::kOther;
  uint64_t seq = 0;
  uint64_t arrival = 0;
  uint64_t age_ns = 0;
  uint64_t threshold_ns = 0;  // the adaptive stall threshold of its function and size class
  std::vector<WaitPeer> peers;  // kPeer only, longest waiting first, at most kMaxWaitPeers
};

struct CommSnapshot {
  uint64_t comm_hash = 0;
  std::string comm_name;
  bool has_name = false;
  int rank = 0;
  int nranks = 0;
  int nnodes = 0;
  int pid = 0;
  std::string abi;  // "v1" … "v7" | "neutral"
  uint64_t created_realtime_ns = 0;
  uint64_t snapshot_monotonic_ns = 0;
  bool finalized = false;
  bool stalled = false;
  CompletionSeen completion = CompletionSeen::kKernel;
  uint64_t arrivals = 0;
  int in_flight_count = 0;
  uint64_t oldest_in_flight_age_ns = 0;
  WaitSite wait;
  // How long this communicator has been left alone: nothing in flight, no stalled wait, and its newest operation
  // finished this long ago (a communicator that never had one: since boot). 0 while busy, or when the flight
  // recorder cannot say (NCCLSCOPE_FR_DEPTH=0). A rank idle on every communicator exports its progress for the
  // hang rules (ncclscope_comm_idle_last_seq).
  uint64_t idle_ns = 0;
  int64_t gpu_to_host_offset_ns = 0;  // host_monotonic ≈ gpu + offset; 0 with has_gpu_offset false
  bool has_gpu_offset = false;
  std::vector<OpTotals> ops;
  std::vector<AggregateCell> aggregates;
  std::vector<PeerProgress> p2p_peers;  // non-zero (peer, direction) pairs only
  std::vector<TagTotals> tags;  // v7: the first kMaxTagsPerComm tags seen, in first-seen order
  TagTotals tags_other;         // v7: every later tag, folded (tag 0)
  // v7 KernelPhase totals (0 without phase events): operations with phases and, per phase (initial_sync,
  // compute, final_sync), the sum of their longest channel's time; initial_sync of symmetric collectives alone,
  // where it is the time this rank waited for the others.
  uint64_t phase_ops = 0;
  uint64_t phase_sum_ns[3] = {0, 0, 0};
  uint64_t symmetric_ops = 0;
  uint64_t symmetric_barrier_ns = 0;
  int fr_depth = 0;
  uint64_t fr_overwritten = 0;
  std::vector<OpRecord> completed;  // oldest first
  std::vector<OpRecord> in_flight;  // oldest first
  std::map<std::string, uint64_t> dropped;
  std::map<std::string, uint64_t> events;  // started events by type name
  uint64_t memory_bytes = 0;
};

struct ProcessSnapshot {
  int pid = 0;
  uint64_t monotonic_ns = 0;
  uint64_t realtime_ns = 0;
  std::vector<CommSnapshot> comms;
  std::map<std::string, uint64_t> process_dropped;  // NULL context, foreign (PXN) events, …
  std::map<std::string, uint64_t> process_events;
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_SNAPSHOT_H_

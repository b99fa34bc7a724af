// Per-NIC and per-communicator network counters, published by the net half and read by exporters.
// The net half obtains a NetCounters block once per communicator (at connect/accept, never on the data
// path) and then updates it with relaxed atomics only; blocks are never freed, so pointers stay valid
// for the life of the process (counters are cumulative, which is what Prometheus rate() wants).
// Thread-safety: NetCountersFor() and SnapshotNetStats() take one registry lock; counter updates are
// lock-free and may run on any thread concurrently with snapshots.
#ifndef NCCLSCOPE_CORE_NET_STATS_H_
#define NCCLSCOPE_CORE_NET_STATS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/log2_histogram.h"
#include "core/request_progress.h"

namespace ncclscope {

// Error kinds the net half counts separately (each is a different operator action).
enum class NetErrorKind : int {
  kConnect = 0,    // connect refused / failed
  kAccept,         // accept or handshake failed
  kSend,           // send() failed (reset, broken pipe)
  kRecv,           // recv() failed or peer closed with data pending
  kTimeout,        // no progress within the configured timeout (peer stopped or host silent)
  kTruncated,      // a message ended early or did not fit its buffer
  kProtocol,       // malformed handle, hello or header
  kResource,       // out of file descriptors / memory / threads
  kDevice,         // the RDMA device reported a fatal event (port down, QP or CQ in error, device fatal)
  kCount
};
const char* NetErrorKindName(NetErrorKind kind);

// log2 buckets of completion latency in nanoseconds: bucket b counts latencies in [2^b, 2^(b+1)).
inline constexpr int kNetLatencyBuckets = 40;

// RequestProgress: in_flight, and progress_ns (with requests in flight, now minus it is how long they have
// waited without one completing: NetStatsRow::waiting_ns).
struct NetCounters : RequestProgress {
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> messages_sent{0};
  std::atomic<uint64_t> messages_received{0};
  std::atomic<int64_t> connections_open{0};
  std::array<std::atomic<uint64_t>, static_cast<int>(NetErrorKind::kCount)> errors{};
  std::array<std::atomic<uint64_t>, kNetLatencyBuckets> latency_log2_ns{};
  std::atomic<uint64_t> latency_sum_ns{0};  // the histogram's exact _sum

  void AddError(NetErrorKind kind) {
    errors[static_cast<int>(kind)].fetch_add(1, std::memory_order_relaxed);
  }
  void AddLatency(uint64_t ns) {
    latency_log2_ns[Log2Bucket<kNetLatencyBuckets>(ns)].fetch_add(1, std::memory_order_relaxed);
    latency_sum_ns.fetch_add(ns, std::memory_order_relaxed);
  }
  void Completed(uint64_t latency_ns, uint64_t now_ns) {
    RequestProgress::Completed(now_ns);
    AddLatency(latency_ns);
  }
};

// Counts traffic once: in the communicator's block where there is one (v11+), else in the NIC's own block
// (legacy ABIs). A NIC's total row is its block plus its communicators' blocks, summed at snapshot time, so the
// data path pays one set of atomic adds, not two.
template <class F>
void ForNicAndComm(NetCounters* nic, NetCounters* comm, F&& f) {
  if (comm != nullptr) {
    f(*comm);
  } else if (nic != nullptr) {
    f(*nic);
  }
}

// A plain-data copy of one counter block.
struct NetStatsRow {
  std::string nic;
  uint64_t comm_id = 0;     // 0: the NIC total (or traffic of legacy ABIs, which carry no comm id)
  bool nic_total = false;   // true for the per-NIC aggregate row
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  int64_t in_flight = 0;
  uint64_t waiting_ns = 0;  // requests in flight with none completing for this long (0: none in flight)
  int64_t connections_open = 0;
  std::array<uint64_t, static_cast<int>(NetErrorKind::kCount)> errors{};
  std::array<uint64_t, kNetLatencyBuckets> latency_log2_ns{};
  uint64_t latency_sum_ns = 0;
};

// Where a NIC sits in the fabric, as the transport describes it to NCCL (v12 railId/planeId from the
// NCCL_IB_HCA syntax; -1 unknown) and, for a fused device, its members' names joined by '+'.
struct NicIdentity {
  std::string nic;
  std::string transport;
  int rail = -1;
  int plane = -1;
};

struct NetStatsSnapshot {
  uint64_t taken_ns = 0;  // MonotonicNs() at the copy
  std::vector<NetStatsRow> rows;  // NIC totals first, then per-communicator rows
  std::vector<NicIdentity> nics;  // every NIC a transport described, in the order it did
};

// Records (or updates) a NIC's identity; called when a transport opens, never on the data path.
void SetNicIdentity(const NicIdentity& id);

// The counter block of (nic, comm_id); `comm_id` 0 with nic_total = true is the NIC aggregate.
// Communicator rows exist only for comm_id != 0 (net v11+). Never returns null.
NetCounters* NetCountersFor(const std::string& nic, uint64_t comm_id, bool nic_total);

NetStatsSnapshot SnapshotNetStats();

// The NICs this process's traffic went through (a NIC total row with bytes or an open connection): the names our
// transports and the wrapped plugin gave them, and the device numbers N of NCCL IB's QP events (nic="nccl-ib<N>").
struct CarriedNics {
  std::vector<std::string> names;
  std::vector<int> nccl_ib_devices;
};
CarriedNics CarriedNicsOf(const NetStatsSnapshot& snapshot);

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_NET_STATS_H_

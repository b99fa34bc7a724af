#include "core/net_stats.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <tuple>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/tsan_lock.h"

namespace ncclscope {
namespace {

struct Block {
  std::string nic;
  uint64_t comm_id;
  bool nic_total;
  NetCounters counters;
};

ABSL_CONST_INIT absl::Mutex registry_mu(absl::kConstInit);
// Never destroyed: counter pointers are held by comms that NCCL may close during process exit.
std::vector<Block*>* registry ABSL_GUARDED_BY(registry_mu) = nullptr;
std::vector<NicIdentity>* identities ABSL_GUARDED_BY(registry_mu) = nullptr;  // never freed, as the blocks

NetStatsRow Copy(const Block& b, uint64_t now_ns) {
  NetStatsRow r;
  r.nic = b.nic;
  r.comm_id = b.comm_id;
  r.nic_total = b.nic_total;
  const NetCounters& c = b.counters;
  r.bytes_sent = c.bytes_sent.load(std::memory_order_relaxed);
  r.bytes_received = c.bytes_received.load(std::memory_order_relaxed);
  r.messages_sent = c.messages_sent.load(std::memory_order_relaxed);
  r.messages_received = c.messages_received.load(std::memory_order_relaxed);
  r.in_flight = c.in_flight.load(std::memory_order_relaxed);
  if (r.in_flight > 0) r.waiting_ns = ElapsedNs(c.progress_ns.load(std::memory_order_relaxed), now_ns);
  r.connections_open = c.connections_open.load(std::memory_order_relaxed);
  for (size_t i = 0; i < r.errors.size(); ++i) r.errors[i] = c.errors[i].load(std::memory_order_relaxed);
  for (size_t i = 0; i < r.latency_log2_ns.size(); ++i) {
    r.latency_log2_ns[i] = c.latency_log2_ns[i].load(std::memory_order_relaxed);
  }
  r.latency_sum_ns = c.latency_sum_ns.load(std::memory_order_relaxed);
  return r;
}

void AddInto(const NetStatsRow& from, NetStatsRow* to) {
  to->bytes_sent += from.bytes_sent;
  to->bytes_received += from.bytes_received;
  to->messages_sent += from.messages_sent;
  to->messages_received += from.messages_received;
  to->in_flight += from.in_flight;
  to->waiting_ns = std::max(to->waiting_ns, from.waiting_ns);
  to->connections_open += from.connections_open;
  for (size_t i = 0; i < to->errors.size(); ++i) to->errors[i] += from.errors[i];
  for (size_t i = 0; i < to->latency_log2_ns.size(); ++i) to->latency_log2_ns[i] += from.latency_log2_ns[i];
  to->latency_sum_ns += from.latency_sum_ns;
}

}  // namespace

const char* NetErrorKindName(NetErrorKind kind) {
  switch (kind) {
    case NetErrorKind::kConnect: return "connect";
    case NetErrorKind::kAccept: return "accept";
    case NetErrorKind::kSend: return "send";
    case NetErrorKind::kRecv: return "recv";
    case NetErrorKind::kTimeout: return "timeout";
    case NetErrorKind::kTruncated: return "truncated";
    case NetErrorKind::kProtocol: return "protocol";
    case NetErrorKind::kResource: return "resource";
    case NetErrorKind::kDevice: return "device";
    case NetErrorKind::kCount: break;
  }
  return "unknown";
}

NetCounters* NetCountersFor(const std::string& nic, uint64_t comm_id, bool nic_total) {
  AnnotatedLock lock(&registry_mu);
  if (registry == nullptr) registry = new std::vector<Block*>();
  for (Block* b : *registry) {
    if (b->nic == nic && b->comm_id == comm_id && b->nic_total == nic_total) return &b->counters;
  }
  Block* b = new Block{nic, comm_id, nic_total, {}};
  registry->push_back(b);
  return &b->counters;
}

void SetNicIdentity(const NicIdentity& id) {
  AnnotatedLock lock(&registry_mu);
  if (identities == nullptr) identities = new std::vector<NicIdentity>();
  for (NicIdentity& known : *identities) {
    if (known.nic == id.nic) {
      known = id;
      return;
    }
  }
  identities->push_back(id);
}

NetStatsSnapshot SnapshotNetStats() {
  NetStatsSnapshot snap;
  snap.taken_ns = MonotonicNs();
  AnnotatedLock lock(&registry_mu);
  if (identities != nullptr) snap.nics = *identities;
  if (registry == nullptr) return snap;
  for (const Block* b : *registry) {
    if (b->nic_total) snap.rows.push_back(Copy(*b, snap.taken_ns));
  }
  const size_t nic_rows = snap.rows.size();
  for (const Block* b : *registry) {
    if (b->nic_total) continue;
    snap.rows.push_back(Copy(*b, snap.taken_ns));
    const NetStatsRow& c = snap.rows.back();
    for (size_t i = 0; i < nic_rows; ++i) {  // ForNicAndComm counted it here only: add it to its NIC's total
      NetStatsRow& n = snap.rows[i];
      if (n.nic != c.nic) continue;
      AddInto(c, &n);
      break;
    }
  }
  return snap;
}

CarriedNics CarriedNicsOf(const NetStatsSnapshot& snapshot) {
  CarriedNics out;
  constexpr std::string_view kNcclIb = "nccl-ib";
  for (const NetStatsRow& r : snapshot.rows) {
    if (!r.nic_total || (r.bytes_sent + r.bytes_received == 0 && r.connections_open <= 0)) continue;
    if (r.nic.rfind(kNcclIb, 0) == 0) {
      out.nccl_ib_devices.push_back(std::atoi(r.nic.c_str() + kNcclIb.size()));
    } else {
      out.names.push_back(r.nic);
    }
  }
  return out;
}

}  // namespace ncclscope

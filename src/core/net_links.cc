#include "core/net_links.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/tsan_lock.h"

namespace ncclscope {
namespace {

ABSL_CONST_INIT absl::Mutex links_mu(absl::kConstInit);
// Never destroyed: comms NCCL closes during process exit still unregister.
std::vector<NetLink*>* links ABSL_GUARDED_BY(links_mu) = nullptr;
// Retransmissions of the TCP connections already closed, per NIC, so that the per-NIC total never goes down.
std::map<std::string, uint64_t>* closed_tcp_retransmits ABSL_GUARDED_BY(links_mu) = nullptr;

// The link's retransmissions now (the sum over its sockets, never below what was seen), and the largest RTT.
uint64_t ReadTcpInfo(NetLink* l, uint32_t* rtt_max_us) ABSL_EXCLUSIVE_LOCKS_REQUIRED(links_mu) {
  uint64_t total = 0;
  for (int fd : l->tcp_fds) {
    tcp_info info{};
    socklen_t len = sizeof(info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) continue;
    total += info.tcpi_total_retrans;
    *rtt_max_us = std::max(*rtt_max_us, info.tcpi_rtt);
  }
  l->tcp_retransmits_seen = std::max(l->tcp_retransmits_seen, total);
  return l->tcp_retransmits_seen;
}

// Calls fn on each connection of the communicator; returns their latest progress (0: none, or no connection).
template <typename Fn>
uint64_t ForEachLinkOf(uint64_t comm_id, Fn fn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(links_mu) {
  uint64_t latest_progress_ns = 0;
  if (links == nullptr || comm_id == 0) return latest_progress_ns;
  for (const NetLink* l : *links) {
    if (l->comm_id != comm_id) continue;
    latest_progress_ns = std::max(latest_progress_ns, l->progress_ns.load(std::memory_order_relaxed));
    fn(l);
  }
  return latest_progress_ns;
}

}  // namespace

void RegisterNetLink(NetLink* link) {
  AnnotatedLock lock(&links_mu);
  if (links == nullptr) links = new std::vector<NetLink*>();
  links->push_back(link);
}

void UnregisterNetLink(NetLink* link) {
  AnnotatedLock lock(&links_mu);
  if (links == nullptr) return;
  const auto end = std::remove(links->begin(), links->end(), link);
  if (end == links->end()) return;  // not registered (any more)
  links->erase(end, links->end());
  if (link->tcp_fds.empty()) return;
  uint32_t rtt_us = 0;
  if (closed_tcp_retransmits == nullptr) closed_tcp_retransmits = new std::map<std::string, uint64_t>();
  (*closed_tcp_retransmits)[link->nic] += ReadTcpInfo(link, &rtt_us);
  link->tcp_fds.clear();
}

void SetNetLinkSockets(NetLink* link, std::vector<int> fds) {
  AnnotatedLock lock(&links_mu);
  link->tcp_fds = std::move(fds);
}

std::vector<NicTcpInfo> SnapshotNicTcpInfo() {
  std::map<std::string, NicTcpInfo> by_nic;
  AnnotatedLock lock(&links_mu);
  if (closed_tcp_retransmits != nullptr) {
    for (const auto& [nic, n] : *closed_tcp_retransmits) by_nic[nic].retransmits += n;
  }
  if (links != nullptr) {
    for (NetLink* l : *links) {
      if (l->tcp_fds.empty()) continue;
      NicTcpInfo& info = by_nic[l->nic];
      uint32_t rtt_us = 0;
      info.retransmits += ReadTcpInfo(l, &rtt_us);
      info.rtt_max_s = std::max(info.rtt_max_s, rtt_us / 1e6);
      ++info.connections;
    }
  }
  std::vector<NicTcpInfo> out;
  for (auto& [nic, info] : by_nic) {
    info.nic = nic;
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<int> RegisteredTcpFds() {
  std::vector<int> fds;
  AnnotatedLock lock(&links_mu);
  if (links == nullptr) return fds;
  for (const NetLink* l : *links) fds.insert(fds.end(), l->tcp_fds.begin(), l->tcp_fds.end());
  return fds;
}

void SetNetLinkPeer(NetLink* link, int global_rank, const std::string& host) {
  AnnotatedLock lock(&links_mu);
  link->peer_global_rank = global_rank;
  link->peer_host = host;
}

CommNetLinks NetLinksOf(uint64_t comm_id, uint64_t now_ns) {
  CommNetLinks out;
  AnnotatedLock lock(&links_mu);
  const uint64_t latest_progress_ns = ForEachLinkOf(comm_id, [&](const NetLink* l) {
    out.carried = true;
    const int64_t n = l->in_flight.load(std::memory_order_relaxed);
    const uint64_t failed_ns = l->failed_ns.load(std::memory_order_relaxed);
    if (n <= 0 && failed_ns == 0) return;
    const uint64_t since = failed_ns != 0 ? failed_ns : l->progress_ns.load(std::memory_order_relaxed);
    const uint64_t waiting = ElapsedNs(since, now_ns);
    auto same = [&](const PendingNetLink& p) {
      return p.peer_global_rank == l->peer_global_rank && p.peer_host == l->peer_host && p.dir == l->dir &&
             p.nic == l->nic;
    };
    auto it = std::find_if(out.pending.begin(), out.pending.end(), same);
    if (it == out.pending.end()) {
      out.pending.push_back({l->nic, l->peer_global_rank, l->peer_host, l->dir, 0, 0, false});
      it = out.pending.end() - 1;
    }
    it->requests += std::max<int64_t>(n, 0);
    it->waiting_ns = std::max(it->waiting_ns, waiting);
    it->failed |= failed_ns != 0;
  });
  out.quiet_ns = ElapsedNs(latest_progress_ns, now_ns);
  std::sort(out.pending.begin(), out.pending.end(), [](const PendingNetLink& a, const PendingNetLink& b) {
    return std::tie(b.waiting_ns, a.peer_global_rank, a.dir) < std::tie(a.waiting_ns, b.peer_global_rank, b.dir);
  });
  return out;
}

CommNetStillness NetStillnessOf(uint64_t comm_id, uint64_t now_ns) {
  CommNetStillness out;
  AnnotatedLock lock(&links_mu);
  const uint64_t latest_progress_ns = ForEachLinkOf(comm_id, [&](const NetLink* l) {
    out.carried = true;
    out.pending |= l->in_flight.load(std::memory_order_relaxed) > 0 && l->failed_ns.load(std::memory_order_relaxed) == 0;
  });
  out.quiet_ns = ElapsedNs(latest_progress_ns, now_ns);
  return out;
}

}  // namespace ncclscope

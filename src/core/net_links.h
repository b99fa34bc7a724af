// The live network connections of this process, one per send or receive comm of the net half, so that a stuck
// operation can say whom it waits for: which peer process (global rank and host, when the connection handshake
// said), in which direction, on which NIC, with how many requests pending and for how long none completed.
//
// A NetLink is owned by its comm (CommAccounting) and registered for the comm's life. Its counters are relaxed
// atomics the data path updates (one add per post, one per completion); the peer fields are written under the
// registry lock (service thread, once the handshake named the peer) and read under it.
#ifndef NCCLSCOPE_CORE_NET_LINKS_H_
#define NCCLSCOPE_CORE_NET_LINKS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/request_progress.h"

namespace ncclscope {

enum class NetDir : uint8_t { kSend = 0, kRecv = 1 };

struct NetLink : RequestProgress {  // data path: in_flight and progress_ns
  // Fixed at construction.
  std::string nic;
  uint64_t comm_id = 0;  // NCCL's communicator hash (net v11+), 0 when the ABI carries none
  NetDir dir = NetDir::kSend;
  std::atomic<uint64_t> failed_ns{0};    // MonotonicNs() of the link's failure, 0 while healthy
  // Under the registry lock (SetNetLinkPeer).
  int peer_global_rank = -1;
  std::string peer_host;
  // TCP connections only, under the registry lock (SetNetLinkSockets): the sockets, whose TCP_INFO the scrape
  // reads, and the most retransmissions seen on them (the kernel's count only grows while a socket lives).
  std::vector<int> tcp_fds;
  uint64_t tcp_retransmits_seen = 0;

  void Abandoned() { in_flight.fetch_sub(1, std::memory_order_relaxed); }
  void Failed(uint64_t now_ns) {
    uint64_t expected = 0;
    failed_ns.compare_exchange_strong(expected, now_ns == 0 ? 1 : now_ns, std::memory_order_relaxed);
  }
};

void RegisterNetLink(NetLink* link);
void UnregisterNetLink(NetLink* link);
void SetNetLinkPeer(NetLink* link, int global_rank, const std::string& host);
// A TCP connection's sockets. Its owner unregisters the link before it closes them, so that a scrape never
// reads a descriptor that is closed or already reused; unregistering keeps their last retransmission count.
void SetNetLinkSockets(NetLink* link, std::vector<int> fds);

// What the kernel's TCP says of this process's connections per NIC (TCP_INFO, read now): retransmitted segments
// of every connection since the process began (closed ones included), and the largest smoothed round-trip
// time of the open ones. A lossy or overloaded link shows in both, whoever else shares the NIC.
struct NicTcpInfo {
  std::string nic;
  uint64_t retransmits = 0;
  double rtt_max_s = 0;
  int connections = 0;  // open, with sockets
};
std::vector<NicTcpInfo> SnapshotNicTcpInfo();
// The sockets of the TCP connections registered now (so that a walk of the process's other sockets leaves them out).
std::vector<int> RegisteredTcpFds();

// What one communicator's connections wait for, merged per (peer, direction, NIC): only connections with
// requests pending or a failure. Largest waiting first.
struct PendingNetLink {
  std::string nic;
  int peer_global_rank = -1;
  std::string peer_host;
  NetDir dir = NetDir::kSend;
  int64_t requests = 0;
  uint64_t waiting_ns = 0;  // since the last completion (or the failure)
  bool failed = false;
};

struct CommNetLinks {
  bool carried = false;  // the net half has (or had open) a connection of this communicator
  std::vector<PendingNetLink> pending;
  // Since the latest progress (a completion, or a post that woke an idle connection) of any of the
  // communicator's connections: how long the whole communicator's network has been still.
  uint64_t quiet_ns = 0;
};
CommNetLinks NetLinksOf(uint64_t comm_id, uint64_t now_ns);

// The part of CommNetLinks every stall check reads, without copying names: whether the net half carries the
// communicator, how long its connections have been still, and whether requests are pending on a healthy one.
struct CommNetStillness {
  bool carried = false;
  bool pending = false;
  uint64_t quiet_ns = 0;
};
CommNetStillness NetStillnessOf(uint64_t comm_id, uint64_t now_ns);

}  // namespace ncclscope

#endif  // NCCLSCOPE_CORE_NET_LINKS_H_

// Retransmissions of this process's TCP connections that ncclscope's own transport did not open, per NIC: a
// wrapped plugin's (NCCLSCOPE_NET_CHAIN), NCCL's own socket transport's, the launcher's. Where ncclscope does not
// carry the data over TCP, these are what the kernel says of the links that do. Found by walking /proc/self/fd at
// scrape time: each TCP socket's local address names its interface, TCP_INFO its retransmitted segments. Only
// read-only calls on the descriptors (fstat, getsockname, getsockopt), so one that another thread closes or reuses
// meanwhile costs at most one scrape's misattribution, never a side effect.
#ifndef NCCLSCOPE_HOST_NICS_PROCESS_TCP_H_
#define NCCLSCOPE_HOST_NICS_PROCESS_TCP_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ncclscope {

struct NicTcpRetransmits {
  std::string nic;  // the interface of the sockets' local address
  uint64_t retransmits = 0;  // since the process began: closed connections are kept in the total
};

// The TCP connections of this process but those of `ours` (ncclscope's transport's sockets, counted on their
// own), per NIC, sorted by NIC. Listening sockets and connections of unknown local address are left out; at most
// kMaxScannedFds descriptors are looked at. Thread-safe.
std::vector<NicTcpRetransmits> OtherTcpRetransmits(const std::vector<int>& ours);

inline constexpr int kMaxScannedFds = 16384;

// Leaves out the connections whose local port is `port`: the metrics endpoint's scrapes are not the job's traffic.
void SkipTcpLocalPort(int port);

}  // namespace ncclscope

#endif  // NCCLSCOPE_HOST_NICS_PROCESS_TCP_H_

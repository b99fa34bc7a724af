// The host's NIC counters for the exporters: read at scrape time (a few hundred small sysfs files for 8 NICs,
// docs/measurements.md gives the cost), only in the process that speaks for the host (host_speaker.h), never on
// the data path. NCCLSCOPE_HOST_NICS=off turns them off; NCCLSCOPE_HOST_NETDEVS picks the interfaces.
#ifndef NCCLSCOPE_HOST_NICS_HOST_NICS_H_
#define NCCLSCOPE_HOST_NICS_HOST_NICS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host_nics/netdevs.h"
#include "host_nics/rdma_ports.h"

namespace ncclscope {

struct HostNics {
  std::vector<RdmaPort> rdma;
  std::vector<std::vector<std::string>> nearest_gpus;  // per rdma port: the GPUs it is nearest (rank_nics.h)
  // Per rdma port: its link downs since this process first read it (LinkDownsSinceFirstRead); nullopt where the
  // driver does not count them.
  std::vector<std::optional<uint64_t>> link_downs;
  std::vector<Netdev> netdevs;
};

// Each port's link downs since this process first read that port (rdma_ports.h LinkDowns). Counted from the
// first read, so that the metric of a port appears at its first link down: a host of healthy ports pays no series
// for it at the basic level. Thread-safe.
std::vector<std::optional<uint64_t>> LinkDownsSinceFirstRead(const std::vector<RdmaPort>& ports);

// False (and nothing read) when this process does not speak for its job on this host, or they are off.
// `rank_netdevs`, the interfaces this rank's traffic uses, are read whatever kind of device they are.
bool ReadHostNicsIfSpeaker(const std::vector<std::string>& rank_netdevs, HostNics* out);

}  // namespace ncclscope

#endif  // NCCLSCOPE_HOST_NICS_HOST_NICS_H_

// The host's NIC counters for the exporters: read at scrape time (a few hundred small sysfs files for 8 NICs,
// docs/measurements.md gives the cost), only in the process that speaks for the host (host_speaker.h), never on
// the data path. NCCLSCOPE_HOST_NICS=off turns them off; NCCLSCOPE_HOST_NETDEVS picks the interfaces.
#ifndef NCCLSCOPE_HOST_NICS_HOST_NICS_H_
#define NCCLSCOPE_HOST_NICS_HOST_NICS_H_

#include <string>
#include <vector>

#include "host_nics/netdevs.h"
#include "host_nics/rdma_ports.h"

namespace ncclscope {

struct HostNics {
  std::vector<RdmaPort> rdma;
  std::vector<std::vector<std::string>> nearest_gpus;  // per rdma port: the GPUs it is nearest (rank_nics.h)
  std::vector<Netdev> netdevs;
};

// False (and nothing read) when this process does not speak for its job on this host, or they are off.
// `rank_netdevs`, the interfaces this rank's traffic uses, are read whatever kind of device they are.
bool ReadHostNicsIfSpeaker(const std::vector<std::string>& rank_netdevs, HostNics* out);

}  // namespace ncclscope

#endif  // NCCLSCOPE_HOST_NICS_HOST_NICS_H_

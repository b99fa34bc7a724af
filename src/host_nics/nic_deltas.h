// What the host's NICs counted since this process took its baseline (at the plugin's start, where dumps are on):
// retransmission, congestion and error events and link downs per RDMA port, and each interface's carrier changes.
// The dumps carry them, at a stall and at finalize, so that the post-mortem analyzer names a degraded or flapping
// NIC from the dumps alone, as NcclscopeNicDegraded and NcclscopeNicFlapping do live.
#ifndef NCCLSCOPE_HOST_NICS_NIC_DELTAS_H_
#define NCCLSCOPE_HOST_NICS_NIC_DELTAS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "host_nics/netdevs.h"
#include "host_nics/rdma_ports.h"

namespace ncclscope {

struct NicEventCounts {
  std::string nic;  // the RDMA device
  int port = 0;
  uint64_t retransmit = 0, congestion = 0, error = 0;
  uint64_t link_downs = 0;  // link_downed (rdma_ports.h LinkDowns); 0 where the driver does not count it
};
// Each port's counters summed per kind.
std::vector<NicEventCounts> NicEventCountsOf(const std::vector<RdmaPort>& ports);

// Takes the baseline once per process (later calls do nothing): its time, and with NCCLSCOPE_HOST_NICS=off no port.
void RecordHostNicBaseline();

struct HostNicDeltas {
  double seconds = 0;  // since the baseline
  std::vector<NicEventCounts> rdma;  // ports present at both reads; counters that went down count from 0
  std::vector<std::pair<std::string, uint64_t>> carrier_changes;  // interfaces present at both reads, by name
};
// False before a baseline. Reads sysfs at most once a second (every communicator of a rank dumps at once).
bool HostNicDeltasSinceBaseline(HostNicDeltas* out);

}  // namespace ncclscope

#endif  // NCCLSCOPE_HOST_NICS_NIC_DELTAS_H_

// The host's network interfaces as the kernel counts them (/sys/class/net/<if>/statistics, operstate, speed,
// carrier_changes): the NIC counters of the TCP transports (ours and NCCL's sockets) and the Ethernet side of RoCE
// and EFA. Which interfaces: those named (names or name prefixes, as NCCL_SOCKET_IFNAME lists them), or by
// default those under an RDMA port and those with a device of their own (not lo, veth, bridges, tunnels), at most
// kMaxNetdevs: a container host's hundreds of veths would blow the series budget.
#ifndef NCCLSCOPE_HOST_NICS_NETDEVS_H_
#define NCCLSCOPE_HOST_NICS_NETDEVS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "host_nics/sysfs_files.h"

namespace ncclscope {

inline constexpr size_t kMaxNetdevs = 16;

struct Netdev {
  std::string name;
  bool up = false;               // operstate "up" (or "unknown" with a carrier: lo, some virtual links)
  double speed_bytes_per_s = 0;  // the negotiated link speed; 0 when the driver does not say
  SysfsDeviceLocation location;  // pci "" for a virtual interface
  uint64_t rx_bytes = 0, tx_bytes = 0, rx_packets = 0, tx_packets = 0;
  uint64_t rx_errors = 0, tx_errors = 0, rx_dropped = 0, tx_dropped = 0;
  uint64_t carrier_changes = 0;  // each link down and up counts two: a flapping link
};

// `wanted`: names or prefixes ("eth" matches eth0); empty = the default set above, plus `also` (the netdevs
// under the host's RDMA ports, those the ranks use). Sorted by name.
std::vector<Netdev> ReadNetdevs(const std::string& sysfs, const std::vector<std::string>& wanted,
                                const std::vector<std::string>& also);

// Every interface's carrier changes but lo's, by name (at most kMaxCarrierNetdevs, virtual ones included: a veth
// or a bond a rank uses flaps too). One file each: cheap enough for a dump's baseline.
std::vector<std::pair<std::string, uint64_t>> ReadCarrierChanges(const std::string& sysfs);
inline constexpr size_t kMaxCarrierNetdevs = 256;

// "eth0,=ib0" -> {"eth0", "ib0"}: NCCL_SOCKET_IFNAME's list form; its exclusions (^name) are dropped.
std::vector<std::string> SplitNetdevList(const std::string& text);

}  // namespace ncclscope

#endif  // NCCLSCOPE_HOST_NICS_NETDEVS_H_

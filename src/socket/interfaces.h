// Network-interface discovery for the socket transports: the UP interfaces with an address, filtered with
// NCCL_SOCKET_IFNAME syntax ("eth,ib" prefixes, "^docker" excludes, "=eth0" exact names; loopback
// only when the filter asks for it), with speed, PCI path and NUMA node read from sysfs where present.
// Pure functions; thread-safe.
#ifndef NCCLSCOPE_SOCKET_INTERFACES_H_
#define NCCLSCOPE_SOCKET_INTERFACES_H_

#include <string>
#include <vector>

#include "socket/sock_addr.h"

namespace ncclscope::sock {

struct Interface {
  std::string name;
  SockAddr addr{};
  bool loopback = false;
  int speed_mbps = 10000;  // sysfs speed, or 10 Gb/s when unknown (virtual NICs report -1)
  std::string pci_path;    // resolved /sys/class/net/<if>/device, empty if virtual
  int numa_node = -1;
};

// True when `ifname` passes `spec` (empty spec: everything but loopback and docker bridges).
bool InterfaceMatches(const std::string& spec, const std::string& ifname, bool loopback);

// The interfaces that pass `spec`, one per name (IPv4 preferred), in name order.
std::vector<Interface> DiscoverInterfaces(const std::string& spec);

}  // namespace ncclscope::sock

#endif  // NCCLSCOPE_SOCKET_INTERFACES_H_

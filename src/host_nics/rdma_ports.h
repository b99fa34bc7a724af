// The host's RDMA ports as the kernel counts them, whoever carries the data (NCCL's own IB transport, ours, or a
// wrapped plugin): /sys/class/infiniband/<device>/ports/<n>/counters (the IB performance counters) and
// hw_counters (the driver's own: mlx5's retransmission and congestion counters, rxe's, EFA's). Each counter is
// sorted into what it tells (RdmaCounterKind), so that rules read "retransmissions on this port" whatever the
// driver calls them. Read at scrape time by the process that speaks for the host (host_speaker.h).
#ifndef NCCLSCOPE_HOST_NICS_RDMA_PORTS_H_
#define NCCLSCOPE_HOST_NICS_RDMA_PORTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host_nics/sysfs_files.h"

namespace ncclscope {

enum class RdmaCounterKind : uint8_t {
  kBytesSent,
  kBytesReceived,
  kPacketsSent,
  kPacketsReceived,
  kRetransmit,  // the transport resent or re-requested: sequence errors, ACK timeouts, duplicates, RNR retries
  kCongestion,  // ECN marks, CNPs sent and handled, time waiting for link credits
  kError,       // link and packet errors, discards, error completions, link downs
  kOther,       // everything else (exported at the full metrics level only)
};
const char* RdmaCounterKindName(RdmaCounterKind kind);

// What a counter of `counters/` (hw = false) or `hw_counters/` (hw = true) named `name` tells, and the factor
// that turns its value into the kind's unit (the IB data counters count 4-byte words). Skip = not a counter.
struct RdmaCounterMeaning {
  RdmaCounterKind kind = RdmaCounterKind::kOther;
  uint64_t scale = 1;
  bool skip = false;
};
RdmaCounterMeaning ClassifyRdmaCounter(const std::string& name, bool hw);

struct RdmaCounter {
  std::string name;  // as the driver names the file
  RdmaCounterKind kind;
  uint64_t value;  // scaled: bytes for the byte kinds
};

struct RdmaPort {
  std::string device;  // mlx5_0, rxe0, efa_0
  int port = 0;
  std::string netdev;      // the network interface under it (RoCE, EFA's host netdev), "" for native IB
  std::string link_layer;  // InfiniBand, Ethernet, Unspecified
  bool active = false;     // state ACTIVE
  double rate_bytes_per_s = 0;  // the link's negotiated rate (a port retrained to a lower one shows here); 0 unknown
  SysfsDeviceLocation location;  // the device's PCI function; pci "" when it has none (soft-RoCE)
  std::vector<RdmaCounter> counters;  // counters/ first, then hw_counters/, each sorted by name
};

// Every port of every RDMA device under `sysfs` (normally "/sys"), sorted by device and port. Never fails: no
// device, no ports. Without `counters`, only where the ports are and their state (a few files per port).
std::vector<RdmaPort> ReadRdmaPorts(const std::string& sysfs, bool counters = true);

// The sum of the port's counters of `kind`; nullopt when the driver has none of that kind.
std::optional<uint64_t> SumOfKind(const RdmaPort& port, RdmaCounterKind kind);

// Times the port's link went down (link_downed: counters/ for IB and mlx5, hw_counters/ for rxe; the first
// wins); nullopt when the driver does not count it. A flapping link.
std::optional<uint64_t> LinkDowns(const RdmaPort& port);

}  // namespace ncclscope

#endif  // NCCLSCOPE_HOST_NICS_RDMA_PORTS_H_

// Which RDMA ports become net devices, and what NCCL is told about each. DiscoverVerbsDevices() loads
// libibverbs, enumerates devices (devices.h), and hands the structs to SelectNetDevices(), the pure
// part: device usable (RC QPs), port ACTIVE, link layer IB or Ethernet, selected by the HCA filter,
// a usable GID. Every device and port considered gets one log line saying what happened to it
// ("rxe0:1 Ethernet 10000 Mbps RoCE v2 GID 1 ::ffff:198.51.100.1: chosen", "mlx5_1:1 port down:
// skipped", "efa0: no RC QPs: declined"). The chosen ports are ordered as NCCL orders its IB devices
// (by PCI path, devices without one last), so every rank numbers them alike.
// Thread-safety: pure functions over values; DiscoverVerbsDevices may run on any thread.
#ifndef NCCLSCOPE_NET_VERBS_DISCOVERY_H_
#define NCCLSCOPE_NET_VERBS_DISCOVERY_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/params.h"
#include "common/status.h"
#include "net/net_types.h"
#include "net/verbs/devices.h"
#include "net/verbs/gid_select.h"
#include "common/hca_filter.h"

namespace ncclscope::net::verbs {

struct DiscoveryOptions {
  bool disabled = false;        // NCCL_IB_DISABLE: report nothing, load nothing
  std::string hca;              // NCCLSCOPE_IB_HCA / NCCL_IB_HCA
  GidPolicy gid;                // NCCL_IB_GID_INDEX, _ROCE_VERSION_NUM, _ADDR_FAMILY, _ADDR_RANGE
  std::string sysfs_root = "/sys";
  std::string ibverbs_soname;   // test hook: load this library, uncached, instead of libibverbs.so.1

  // From the process's tunables (a bad NCCL_IB_ADDR_RANGE is warned about and ignored).
  static DiscoveryOptions FromParams(const ParamValues& params);
};

// One chosen (device, port): what the transport opens and what getProperties reports.
struct VerbsNetDevice {
  std::string device_name;  // ibv device name, e.g. "mlx5_0", "rxe0"
  int port_num = 0;         // verbs port number (1-based)
  LinkLayer link_layer = LinkLayer::kUnknown;
  int active_mtu = 0;       // enum ibv_mtu
  uint16_t lid = 0;
  GidChoice gid;
  int max_qp_wr = 0;
  std::string full_pci_path;  // realpath of the sysfs device link; empty for virtual devices
  NetProperties props;       // ptr_support from gpu (PtrSupportFor)
  GpuMemSupport gpu;
  std::string reason;       // the "...: chosen" log line
};

struct DiscoveryReport {
  std::vector<VerbsNetDevice> devices;  // chosen ports, NCCL's order
  std::vector<std::string> lines;       // one per device/port considered, chosen or not
};

// The pure part: `devices` as EnumerateDevices returns them.
DiscoveryReport SelectNetDevices(const std::vector<VerbsDevice>& devices, const DiscoveryOptions& options);

// Loads libibverbs and enumerates the host. A host without rdma-core gives an error naming the missing
// library; a host with rdma-core and no device gives an empty report. Logs every line at INFO.
Result<DiscoveryReport> DiscoverVerbsDevices(const DiscoveryOptions& options);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_DISCOVERY_H_

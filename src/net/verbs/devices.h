// What the host's RDMA devices are: plain structs filled from libibverbs (device and port attributes,
// GID table) and from sysfs (PCI path, NUMA node, GID types and their network devices). Nothing here
// decides which ports to use; see discovery.h. The sysfs readers take a root directory so tests can
// point them at a fake tree ("<root>/class/infiniband/<dev>/...").
// Pure functions and value types; thread-safe.
#ifndef NCCLSCOPE_NET_VERBS_DEVICES_H_
#define NCCLSCOPE_NET_VERBS_DEVICES_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ncclscope::net::verbs {

struct IbvApi;

enum class LinkLayer { kUnknown, kInfiniBand, kEthernet };
// sysfs gid_attrs/types/<i>: "IB/RoCE v1" (IB, or RoCE v1 on Ethernet) or "RoCE v2".
enum class GidType { kUnknown, kIbOrRoceV1, kRoceV2 };

const char* LinkLayerName(LinkLayer l);  // "IB", "Ethernet", "unknown"

struct VerbsGid {
  int index = 0;
  std::array<uint8_t, 16> raw{};
  GidType type = GidType::kUnknown;
  std::string netdev;  // gid_attrs/ndevs/<i>; empty for IB GIDs
};

struct VerbsPort {
  int port_num = 0;
  int state = 0;             // enum ibv_port_state; 4 = IBV_PORT_ACTIVE
  LinkLayer link_layer = LinkLayer::kUnknown;
  int active_mtu = 0;        // enum ibv_mtu: 1 = 256 B ... 5 = 4096 B
  int active_speed = 0;      // IB speed bits (SDR 1 ... NDR 128, XDR 256)
  int active_width = 0;      // width bits (1X 1, 4X 2, 8X 4, 12X 8, 2X 16)
  int speed_mbps = 0;        // PortSpeedMbps(active_speed, active_width)
  uint16_t lid = 0;
  int gid_tbl_len = 0;
  std::vector<VerbsGid> gids;  // populated (non-zero) entries only, by index
};

// What one device can do with GPU memory (gpu_mem.h), with the reasons for the log line.
struct GpuMemSupport {
  bool dmabuf = false;
  bool peermem = false;
  std::string dmabuf_why;   // "ibv_reg_dmabuf_mr(fd -1): Bad file descriptor", "libibverbs has no ..."
  std::string peermem_why;  // the sysfs entry found, or "nvidia-peermem not loaded"
};

struct VerbsDevice {
  std::string name;
  uint64_t node_guid = 0;       // network byte order as verbs reports it
  uint64_t sys_image_guid = 0;  // what NCCL reports as the properties' guid
  std::string pci_path;         // realpath of <sysfs>/class/infiniband/<dev>/device; empty if none
  int numa_node = -1;
  uint32_t vendor_id = 0;
  uint32_t vendor_part_id = 0;
  int max_qp = 0;
  int max_qp_wr = 0;
  int node_type = 0;       // enum ibv_node_type
  int transport_type = 0;  // enum ibv_transport_type
  bool supports_rc = false;
  std::string decline_reason;  // why the whole device is unusable; empty when usable
  std::vector<VerbsPort> ports;
  GpuMemSupport gpu;  // probed while the device is open (EnumerateDevices)
};

// Mbps of a port from its speed and width bits, with NCCL's table (net_ib/init.cc): the lowest set bit
// picks the lane rate (2.5, 5, 10, 10, 14, 25, 50, 100, 200 Gb/s) and the lane count (1, 4, 8, 12, 2).
// A port that reports no bits gets 0 (unknown) rather than NCCL's accidental top-of-table value.
int PortSpeedMbps(int active_speed, int active_width);

// RC support from the node and transport types: IB CAs (including RoCE and soft-RoCE) do RC; iWARP
// needs rdma_cm to connect; EFA-like (unspecified) and usNIC devices have no RC QPs. Empty = usable.
std::string RcDeclineReason(int node_type, int transport_type);

// --- sysfs (pure file reads under `sysfs_root`, normally "/sys") ---
std::string SysfsPciPath(const std::string& sysfs_root, const std::string& dev);
int SysfsNumaNode(const std::string& sysfs_root, const std::string& dev);
GidType SysfsGidType(const std::string& sysfs_root, const std::string& dev, int port, int index);
std::string SysfsGidNetdev(const std::string& sysfs_root, const std::string& dev, int port, int index);
// The GID table as sysfs shows it (ports/<p>/gids/<i>, "fe80:0000:...:0001"), zero entries dropped.
// Used by tests and as a fallback where ibv_query_gid is unavailable.
std::vector<VerbsGid> SysfsGids(const std::string& sysfs_root, const std::string& dev, int port, int max_index);

// PCI path as NCCL reports it to the topology: the function digit and (VFs merged) the device
// digits of a trailing bus:device.function component zeroed, so every port and VF of one NIC
// lands on one PCI node. Paths whose last component is not a PCI address are returned unchanged.
std::string NcclPciPath(const std::string& full_path);

// Opens every device through `api` and fills the structs; devices that fail to open are returned
// with a decline reason. An empty list is not an error (a host without RDMA devices).
Result<std::vector<VerbsDevice>> EnumerateDevices(const IbvApi& api, const std::string& sysfs_root);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_DEVICES_H_

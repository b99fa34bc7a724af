#include "net/verbs/devices.h"

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "net/verbs/gpu_mem.h"
#include "net/verbs/ibv_api.h"

namespace ncclscope::net::verbs {
namespace {

// NCCL's tables (net_ib/init.cc), indexed by the lowest set bit.
constexpr int kLaneMbps[] = {2500, 5000, 10000, 10000, 14000, 25000, 50000, 100000, 200000};
constexpr int kLanes[] = {1, 4, 8, 12, 2};

template <size_t N>
int ByLowestBit(int bits, const int (&table)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (bits & (1 << i)) return table[i];
  }
  return 0;
}

LinkLayer ToLinkLayer(uint8_t ll) {
  switch (ll) {
    case IBV_LINK_LAYER_INFINIBAND: return LinkLayer::kInfiniBand;
    case IBV_LINK_LAYER_ETHERNET: return LinkLayer::kEthernet;
    // IBV_LINK_LAYER_UNSPECIFIED is what old IB drivers report: verbs documents it as InfiniBand.
    case IBV_LINK_LAYER_UNSPECIFIED: return LinkLayer::kInfiniBand;
    default: return LinkLayer::kUnknown;
  }
}

bool IsZero(const ibv_gid& gid) {
  for (uint8_t b : gid.raw) {
    if (b != 0) return false;
  }
  return true;
}

// Queries one port and its populated GIDs. A large table (soft-RoCE has 1024 entries) costs one
// ioctl per entry, once per process.
VerbsPort QueryOnePort(const IbvApi& api, ibv_context* ctx, const std::string& dev, int port_num,
                       const std::string& sysfs_root) {
  VerbsPort port;
  port.port_num = port_num;
  ibv_port_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  if (int rc = api.QueryPort(ctx, static_cast<uint8_t>(port_num), &attr); rc != 0) {
    NCCLSCOPE_WARN(subsys::kNet, "NET/verbs: %s:%d: ibv_query_port failed (%d)", dev.c_str(), port_num, rc);
    port.state = IBV_PORT_NOP;
    return port;
  }
  port.state = attr.state;
  port.link_layer = ToLinkLayer(attr.link_layer);
  port.active_mtu = attr.active_mtu;
  port.active_speed = attr.active_speed;
  port.active_width = attr.active_width;
  port.speed_mbps = PortSpeedMbps(attr.active_speed, attr.active_width);
  port.lid = attr.lid;
  port.gid_tbl_len = attr.gid_tbl_len;
  for (int i = 0; i < attr.gid_tbl_len; ++i) {
    ibv_gid gid;
    if (api.query_gid(ctx, static_cast<uint8_t>(port_num), i, &gid) != 0 || IsZero(gid)) continue;
    VerbsGid g;
    g.index = i;
    std::memcpy(g.raw.data(), gid.raw, 16);
    g.type = SysfsGidType(sysfs_root, dev, port_num, i);
    g.netdev = SysfsGidNetdev(sysfs_root, dev, port_num, i);
    port.gids.push_back(std::move(g));
  }
  return port;
}

}  // namespace

const char* LinkLayerName(LinkLayer l) {
  switch (l) {
    case LinkLayer::kInfiniBand: return "IB";
    case LinkLayer::kEthernet: return "Ethernet";
    case LinkLayer::kUnknown: break;
  }
  return "unknown";
}

int PortSpeedMbps(int active_speed, int active_width) {
  return ByLowestBit(active_speed, kLaneMbps) * ByLowestBit(active_width, kLanes);
}

std::string RcDeclineReason(int node_type, int transport_type) {
  if (node_type == IBV_NODE_CA && transport_type == IBV_TRANSPORT_IB) return "";
  if (node_type == IBV_NODE_RNIC || transport_type == IBV_TRANSPORT_IWARP) {
    return "iWARP needs rdma_cm to connect (not supported)";
  }
  if (node_type == IBV_NODE_USNIC || node_type == IBV_NODE_USNIC_UDP) return "usNIC: no RC QPs";
  if (node_type == IBV_NODE_SWITCH || node_type == IBV_NODE_ROUTER) return "a switch/router, not a channel adapter";
  return "no RC QPs";  // EFA and other IBV_NODE_UNSPECIFIED devices
}

Result<std::vector<VerbsDevice>> EnumerateDevices(const IbvApi& api, const std::string& sysfs_root) {
  std::vector<VerbsDevice> out;
  int n = 0;
  ibv_device** list = api.get_device_list(&n);
  if (list == nullptr) {
    // ENOSYS: the kernel has no RDMA subsystem; that is a host without devices, not an error.
    if (errno == ENOSYS || errno == ENODEV || errno == ENOENT) return out;
    return SystemError(std::string("ibv_get_device_list failed: ") + std::strerror(errno));
  }
  for (int d = 0; d < n; ++d) {
    VerbsDevice dev;
    dev.name = api.get_device_name(list[d]);
    dev.node_type = list[d]->node_type;
    dev.transport_type = list[d]->transport_type;
    dev.pci_path = SysfsPciPath(sysfs_root, dev.name);
    dev.numa_node = SysfsNumaNode(sysfs_root, dev.name);
    dev.decline_reason = RcDeclineReason(dev.node_type, dev.transport_type);
    dev.supports_rc = dev.decline_reason.empty();
    ibv_context* ctx = api.open_device(list[d]);
    if (ctx == nullptr) {
      dev.supports_rc = false;
      dev.decline_reason = std::string("cannot open (") + std::strerror(errno) + ")";
      out.push_back(std::move(dev));
      continue;
    }
    ibv_device_attr attr;
    std::memset(&attr, 0, sizeof(attr));
    if (api.query_device(ctx, &attr) != 0) {
      dev.decline_reason = "ibv_query_device failed";
      dev.supports_rc = false;
    } else {
      dev.node_guid = attr.node_guid;
      dev.sys_image_guid = attr.sys_image_guid;
      dev.vendor_id = attr.vendor_id;
      dev.vendor_part_id = attr.vendor_part_id;
      dev.max_qp = attr.max_qp;
      dev.max_qp_wr = attr.max_qp_wr;
      for (int p = 1; p <= attr.phys_port_cnt; ++p) {
        dev.ports.push_back(QueryOnePort(api, ctx, dev.name, p, sysfs_root));
      }
    }
    // GPU memory paths (gpu_mem.h): the DMA-BUF probe needs the open device; once per device name.
    dev.gpu = ProbeGpuMem(api, ctx, dev.name, sysfs_root);
    // The transport reopens the devices it uses; discovery holds no verbs resources.
    api.close_device(ctx);
    out.push_back(std::move(dev));
  }
  api.free_device_list(list);
  return out;
}

}  // namespace ncclscope::net::verbs

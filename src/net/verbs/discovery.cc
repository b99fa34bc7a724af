#include "net/verbs/discovery.h"

#include <algorithm>
#include <optional>

#include "common/log.h"
#include "net/verbs/gpu_mem.h"
#include "net/verbs/ibv_api.h"

namespace ncclscope::net::verbs {
namespace {

constexpr int kIbvPortActive = 4;  // IBV_PORT_ACTIVE
constexpr int kIbvPortDown = 1;    // IBV_PORT_DOWN
// NCCL reports a port's speed as is; a port whose speed bits mean nothing would tell NCCL's topology
// it has no bandwidth, so we report what the TCP transport assumes for an unknown link.
constexpr int kUnknownSpeedMbps = 10000;

std::string PortLabel(const VerbsDevice& d, const VerbsPort& p) { return d.name + ":" + std::to_string(p.port_num); }

const char* PortStateName(int state) {
  static constexpr const char* kNames[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  return state >= 0 && state < 6 ? kNames[state] : "unknown";
}

// NCCL orders its devices by the bus address in the PCI path (pciPathToInt64 of the last
// component); devices without a path go last. Ties keep enumeration order.
std::string SortKey(const VerbsNetDevice& d) {
  size_t slash = d.full_pci_path.rfind('/');
  return slash == std::string::npos ? d.full_pci_path : d.full_pci_path.substr(slash + 1);
}

// NCCL numbers the ports of one physical NIC apart (ncclIbGetRealPort): port + the number of earlier
// devices whose merged PCI path matches up to the device/function digits.
void AssignRealPorts(std::vector<VerbsNetDevice>* devs) {
  for (size_t i = 0; i < devs->size(); ++i) {
    const std::string& path = (*devs)[i].props.pci_path;
    int real_port = 0;
    if (!path.empty()) {
      for (size_t j = 0; j < i; ++j) {
        const std::string& other = (*devs)[j].props.pci_path;
        size_t n = path.size() >= 4 ? path.size() - 4 : 0;
        if (!other.empty() && path.compare(0, n, other, 0, n) == 0) ++real_port;
      }
    }
    (*devs)[i].props.port = (*devs)[i].port_num + real_port;
  }
}

std::string DescribeChosen(const VerbsNetDevice& n, bool speed_known) {
  std::string s = n.device_name + ":" + std::to_string(n.port_num) + " " + LinkLayerName(n.link_layer) + " " +
                  std::to_string(n.props.speed_mbps) + " Mbps" + (speed_known ? "" : " (speed unknown)");
  if (n.link_layer == LinkLayer::kInfiniBand) {
    s += " LID " + std::to_string(n.lid);
  } else {
    s += (n.gid.roce_version ? " RoCE v" + std::to_string(n.gid.roce_version) : std::string(" RoCE")) + " GID " +
         std::to_string(n.gid.index) + " " + GidToString(n.gid.raw);
    if (n.gid.reason.rfind("no ", 0) == 0) s += " (" + n.gid.reason + ")";
  }
  if (n.props.rail_id >= 0) s += " rail " + std::to_string(n.props.rail_id);
  if (n.props.plane_id >= 0) s += " plane " + std::to_string(n.props.plane_id);
  return s + ": chosen";
}

}  // namespace

DiscoveryOptions DiscoveryOptions::FromParams(const ParamValues& params) {
  DiscoveryOptions o;
  o.disabled = params.Bool(ParamId::kIbDisable);
  o.hca = params.Str(ParamId::kIbHca);
  o.gid.gid_index = static_cast<int>(params.Int(ParamId::kIbGidIndex));
  o.gid.roce_version = static_cast<int>(params.Int(ParamId::kIbRoceVersionNum));
  o.gid.family = params.Str(ParamId::kIbAddrFamily) == "AF_INET6" ? AF_INET6 : AF_INET;
  const std::string& range = params.Str(ParamId::kIbAddrRange);
  if (!range.empty()) {
    std::string why;
    o.gid.range = ParseAddrRange(range, o.gid.family, &why);
    if (!o.gid.range) {
      NCCLSCOPE_WARN(subsys::kEnv | subsys::kNet, "NCCLSCOPE_IB_ADDR_RANGE/NCCL_IB_ADDR_RANGE='%s': %s; ignoring it",
                     range.c_str(), why.c_str());
    }
  }
  return o;
}

DiscoveryReport SelectNetDevices(const std::vector<VerbsDevice>& devices, const DiscoveryOptions& options) {
  DiscoveryReport report;
  HcaFilter filter = HcaFilter::Parse(options.hca, nullptr, "NCCLSCOPE_IB_HCA (or NCCL_IB_HCA)");
  for (const VerbsDevice& d : devices) {
    if (!d.supports_rc || !d.decline_reason.empty()) {
      report.lines.push_back(d.name + ": " + (d.decline_reason.empty() ? "no RC QPs" : d.decline_reason) +
                             ": declined");
      continue;
    }
    if (d.ports.empty()) report.lines.push_back(d.name + ": no ports: declined");
    for (const VerbsPort& p : d.ports) {
      const std::string label = PortLabel(d, p);
      if (p.state != kIbvPortActive) {
        report.lines.push_back(label + (p.state == kIbvPortDown ? " port down" : std::string(" port ") +
                                        PortStateName(p.state)) + ": skipped");
        continue;
      }
      if (p.link_layer == LinkLayer::kUnknown) {
        report.lines.push_back(label + " link layer neither IB nor Ethernet: skipped");
        continue;
      }
      std::optional<HcaMatch> match = filter.Match(d.name, p.port_num);
      if (!match) {
        report.lines.push_back(label + " not selected by NCCL_IB_HCA='" + options.hca + "': skipped");
        continue;
      }
      GidChoice gid = SelectGid(p, options.gid);
      if (gid.index < 0) {
        report.lines.push_back(label + " " + LinkLayerName(p.link_layer) + ": " + gid.reason + ": skipped");
        continue;
      }
      VerbsNetDevice n;
      n.device_name = d.name;
      n.port_num = p.port_num;
      n.link_layer = p.link_layer;
      n.active_mtu = p.active_mtu;
      n.lid = p.lid;
      n.gid = std::move(gid);
      n.max_qp_wr = d.max_qp_wr;
      n.full_pci_path = d.pci_path;
      NetProperties& props = n.props;
      props.name = d.name;
      props.pci_path = NcclPciPath(d.pci_path);
      props.guid = d.sys_image_guid;
      n.gpu = d.gpu;
      props.ptr_support = PtrSupportFor(d.gpu.dmabuf, d.gpu.peermem);
      props.reg_is_global = true;
      props.speed_mbps = p.speed_mbps > 0 ? p.speed_mbps : kUnknownSpeedMbps;
      props.latency_us = 0;
      if (d.max_qp > 0) props.max_comms = d.max_qp;
      props.max_recvs = kMaxRecvs;
      props.rail_id = match->rail;
      props.plane_id = match->plane;
      props.numa_node = d.numa_node;
      n.reason = DescribeChosen(n, p.speed_mbps > 0);
      report.lines.push_back(n.reason);
      report.devices.push_back(std::move(n));
    }
  }
  std::stable_sort(report.devices.begin(), report.devices.end(), [](const VerbsNetDevice& a, const VerbsNetDevice& b) {
    if (a.full_pci_path.empty() != b.full_pci_path.empty()) return b.full_pci_path.empty();
    return SortKey(a) < SortKey(b);
  });
  AssignRealPorts(&report.devices);
  return report;
}

Result<DiscoveryReport> DiscoverVerbsDevices(const DiscoveryOptions& options) {
  if (options.disabled) {
    DiscoveryReport r;
    r.lines.push_back("verbs transport disabled by NCCL_IB_DISABLE / NCCLSCOPE_IB_DISABLE");
    NCCLSCOPE_INFO(subsys::kNet, "NET/verbs: %s", r.lines.back().c_str());
    return r;
  }
  const IbvApi* api = nullptr;
  std::optional<IbvApi> own;  // keeps a test-hook table alive for this call
  if (!options.ibverbs_soname.empty()) {
    Result<IbvApi> loaded = LoadIbvApiFrom(options.ibverbs_soname.c_str());
    if (!loaded.ok()) return loaded.status();
    own = std::move(loaded.value());
    api = &*own;
  } else {
    Result<const IbvApi*> loaded = LoadIbvApi();
    if (!loaded.ok()) return loaded.status();
    api = loaded.value();
  }
  Result<std::vector<VerbsDevice>> devices = EnumerateDevices(*api, options.sysfs_root);
  if (!devices.ok()) return devices.status();
  DiscoveryReport report = SelectNetDevices(devices.value(), options);
  if (devices.value().empty()) report.lines.push_back("no verbs device found");
  for (const std::string& line : report.lines) NCCLSCOPE_INFO(subsys::kNet, "NET/verbs: %s", line.c_str());
  return report;
}

}  // namespace ncclscope::net::verbs

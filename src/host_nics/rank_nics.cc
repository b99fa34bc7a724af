#include "host_nics/rank_nics.h"

#include <algorithm>
#include <cstdlib>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/params.h"
#include "common/process_identity.h"
#include "common/tsan_lock.h"

namespace ncclscope {
namespace {

RankNic FromPort(const RdmaPort& p, const SysfsDeviceLocation& gpu) {
  return {p.device, p.port, p.netdev, PciDistanceBetween(gpu, p.location)};
}

// NCCL's IB transport takes the active ports of InfiniBand and Ethernet (RoCE) link layers NCCL_IB_HCA leaves.
std::vector<const RdmaPort*> IbCandidates(const RankNicInputs& in) {
  std::vector<const RdmaPort*> out;
  if (in.ib_disabled) return out;
  for (const RdmaPort& p : in.ports) {
    if (p.active && in.ib_hca.Match(p.device, p.port)) out.push_back(&p);
  }
  return out;
}

// The NICs that carried this rank's traffic, by the names the transports gave them: an RDMA device (every active
// port of it) or an interface (and the RDMA port over it, if any).
std::vector<RankNic> Carried(const RankNicInputs& in) {
  std::vector<RankNic> out;
  auto add = [&](RankNic n) {
    auto same = [&](const RankNic& o) { return o.device == n.device && o.port == n.port && o.netdev == n.netdev; };
    if (std::none_of(out.begin(), out.end(), same)) out.push_back(std::move(n));
  };
  for (const std::string& fused : in.carried) {
    size_t start = 0;
    while (start <= fused.size()) {
      const size_t plus = std::min(fused.find('+', start), fused.size());
      const std::string name = fused.substr(start, plus - start);
      start = plus + 1;
      bool found = false;
      for (const RdmaPort& p : in.ports) {
        if (p.device != name && p.netdev != name) continue;
        if (p.device == name && !p.active) continue;
        add(FromPort(p, in.gpu));
        found = true;
      }
      if (found || name.empty()) continue;
      RankNic n{"", 0, name, std::nullopt};
      for (const Netdev& d : in.netdevs) {
        if (d.name == name) n.from_gpu = PciDistanceBetween(in.gpu, d.location);
      }
      add(std::move(n));
    }
  }
  return out;
}

}  // namespace

const char* NicMappingName(NicMapping mapping) {
  switch (mapping) {
    case NicMapping::kExact: return "exact";
    case NicMapping::kNcclIbQp: return "nccl_ib_qp";
    case NicMapping::kNearestGpu: return "nearest_gpu";
    case NicMapping::kIbHca: return "ib_hca";
    case NicMapping::kSocketIfname: return "socket_ifname";
    case NicMapping::kHost: return "host";
  }
  return "host";
}

RankNics InferRankNics(const RankNicInputs& in) {
  RankNics out;
  out.nics = Carried(in);
  if (!out.nics.empty()) {
    out.mapping = NicMapping::kExact;
    return out;
  }
  const std::vector<const RdmaPort*> candidates = IbCandidates(in);
  if (!in.nccl_ib_devices.empty() && !candidates.empty()) {
    out.mapping = NicMapping::kNcclIbQp;
    for (int n : in.nccl_ib_devices) {
      if (n >= 0 && n < static_cast<int>(candidates.size())) out.nics.push_back(FromPort(*candidates[n], in.gpu));
    }
    if (!out.nics.empty()) return out;
  }
  if (!candidates.empty()) {
    for (const RdmaPort* p : candidates) out.nics.push_back(FromPort(*p, in.gpu));
    // The nearest, where the GPU and every candidate are placed on the PCI tree; all of them otherwise.
    const bool placed = std::all_of(out.nics.begin(), out.nics.end(), [](const RankNic& n) { return n.from_gpu; });
    if (placed) {
      const PciDistance best =
          *std::min_element(out.nics.begin(), out.nics.end(),
                            [](const RankNic& a, const RankNic& b) { return *a.from_gpu < *b.from_gpu; })->from_gpu;
      out.nics.erase(std::remove_if(out.nics.begin(), out.nics.end(),
                                    [&](const RankNic& n) { return !(*n.from_gpu == best); }),
                     out.nics.end());
      out.mapping = NicMapping::kNearestGpu;
    } else {
      out.mapping = in.ib_hca.selects_all() ? NicMapping::kHost : NicMapping::kIbHca;
    }
    return out;
  }
  for (const Netdev& d : in.netdevs) {
    if (d.up && in.socket_ifname.Match(d.name, -1)) {
      out.nics.push_back({"", 0, d.name, PciDistanceBetween(in.gpu, d.location)});
    }
  }
  out.mapping = in.socket_ifname.selects_all() ? NicMapping::kHost : NicMapping::kSocketIfname;
  return out;
}

std::vector<std::vector<std::string>> GpusNearestEachPort(const std::vector<RdmaPort>& ports,
                                                          const std::vector<SysfsDeviceLocation>& gpus) {
  std::vector<std::vector<std::string>> out(ports.size());
  for (const SysfsDeviceLocation& gpu : gpus) {
    std::vector<std::optional<PciDistance>> d(ports.size());
    std::optional<PciDistance> best;
    for (size_t i = 0; i < ports.size(); ++i) {
      if (ports[i].active) d[i] = PciDistanceBetween(gpu, ports[i].location);
      if (d[i] && (!best || *d[i] < *best)) best = d[i];
    }
    for (size_t i = 0; i < ports.size(); ++i) {
      if (d[i] && *d[i] == *best) out[i].push_back(gpu.pci);
    }
  }
  return out;
}

std::string RankNicsLabel(const RankNics& nics) {
  std::string out;
  for (const RankNic& n : nics.nics) {
    if (!out.empty()) out += ',';
    out += n.device.empty() ? n.netdev : n.device + ":" + std::to_string(n.port);
  }
  return out;
}

namespace {

ABSL_CONST_INIT absl::Mutex topology_mu(absl::kConstInit);
RankNicInputs* topology ABSL_GUARDED_BY(topology_mu) = nullptr;  // never freed: exporters run at exit
uint64_t topology_read_ns ABSL_GUARDED_BY(topology_mu) = 0;
constexpr uint64_t kTopologyReuseNs = 60ull * 1000000000;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace

RankNics CurrentRankNics(const std::vector<std::string>& carried, const std::vector<int>& nccl_ib_devices) {
  RankNicInputs in;
  {
    AnnotatedLock lock(&topology_mu);
    const uint64_t now = MonotonicNs();
    if (topology == nullptr || now - topology_read_ns >= kTopologyReuseNs) {
      if (topology == nullptr) topology = new RankNicInputs();
      // NCCLSCOPE_HOST_NICS=off: no sysfs reads; only the NICs our transports name.
      const bool off = Params().Str(ParamId::kHostNics) == "off";
      topology->ports = off ? std::vector<RdmaPort>() : ReadRdmaPorts("/sys", /*counters=*/false);
      topology->netdevs = off ? std::vector<Netdev>() : ReadNetdevs("/sys", {}, {});
      topology->gpu = off ? SysfsDeviceLocation() : PciFunctionLocation("/sys", Identity().gpu_pci);
      // Parsed once (a bad value warns once): the job's environment does not change.
      static const HcaFilter* const ib_hca =
          new HcaFilter(HcaFilter::Parse(Env("NCCL_IB_HCA"), nullptr, "NCCL_IB_HCA"));
      static const HcaFilter* const socket_ifname =
          new HcaFilter(HcaFilter::Parse(Env("NCCL_SOCKET_IFNAME"), nullptr, "NCCL_SOCKET_IFNAME"));
      topology->ib_hca = *ib_hca;
      topology->socket_ifname = *socket_ifname;
      topology->ib_disabled = Env("NCCL_IB_DISABLE") == "1";
      topology_read_ns = now;
    }
    in = *topology;
  }
  in.carried = carried;
  in.nccl_ib_devices = nccl_ib_devices;
  return InferRankNics(in);
}

}  // namespace ncclscope

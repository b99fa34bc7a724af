#include "host_nics/pci_distance.h"

#include <algorithm>

namespace ncclscope {
namespace {

// The path's components from its root complex ("pci0000:00") down: {root, bridge, …, device}. Empty when the
// path has no root complex.
std::vector<std::string> PciChain(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  auto root = std::find_if(parts.begin(), parts.end(), [](const std::string& p) { return p.rfind("pci", 0) == 0; });
  return root == parts.end() ? std::vector<std::string>() : std::vector<std::string>(root, parts.end());
}

// A switch's downstream port and the device under it are two links on each side: one switch between them.
constexpr int kOneSwitchHops = 4;

}  // namespace

const char* PciPathTypeName(PciPathType type) {
  switch (type) {
    case PciPathType::kPix: return "PIX";
    case PciPathType::kPxb: return "PXB";
    case PciPathType::kPhb: return "PHB";
    case PciPathType::kNode: return "NODE";
    case PciPathType::kSys: return "SYS";
  }
  return "SYS";
}

std::optional<PciDistance> PciDistanceBetween(const SysfsDeviceLocation& a, const SysfsDeviceLocation& b) {
  const std::vector<std::string> x = PciChain(a.path), y = PciChain(b.path);
  if (x.size() < 2 || y.size() < 2) return std::nullopt;
  if (x[0] != y[0]) {
    const bool same_node = a.numa_node >= 0 && a.numa_node == b.numa_node;
    return PciDistance{same_node ? PciPathType::kNode : PciPathType::kSys, static_cast<int>(x.size() + y.size())};
  }
  size_t common = 1;  // the root complex
  while (common < x.size() && common < y.size() && x[common] == y[common]) ++common;
  const int hops = static_cast<int>((x.size() - common) + (y.size() - common));
  if (common == 1) return PciDistance{PciPathType::kPhb, hops};
  return PciDistance{hops <= kOneSwitchHops ? PciPathType::kPix : PciPathType::kPxb, hops};
}

SysfsDeviceLocation PciFunctionLocation(const std::string& sysfs, const std::string& bus_id) {
  if (bus_id.empty()) return {};
  return ReadDeviceLocation(sysfs + "/bus/pci/devices/" + bus_id);
}

std::vector<SysfsDeviceLocation> ReadHostGpus(const std::string& sysfs) {
  std::vector<SysfsDeviceLocation> gpus;
  const std::string root = sysfs + "/bus/pci/devices/";
  for (const std::string& addr : ListSysfsDir(root)) {
    if (ReadSysfsLine(root + addr + "/vendor").value_or("") != "0x10de") continue;
    // 0x0300xx: VGA controller, 0x0302xx: 3D controller (every data-centre GPU).
    const std::string cls = ReadSysfsLine(root + addr + "/class").value_or("");
    if (cls.rfind("0x0300", 0) != 0 && cls.rfind("0x0302", 0) != 0) continue;
    SysfsDeviceLocation gpu = PciFunctionLocation(sysfs, addr);
    if (!gpu.pci.empty()) gpus.push_back(std::move(gpu));
  }
  return gpus;
}

}  // namespace ncclscope

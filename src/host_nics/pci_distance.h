// How far apart two PCI devices are, in the terms of `nvidia-smi topo -m` and of NCCL's topology: PIX (through
// at most one PCIe switch), PXB (through several switches, not the host bridge), PHB (through a CPU's host
// bridge), NODE (between host bridges of one NUMA node), SYS (across the CPUs' interconnect). NCCL's IB transport
// gives each GPU the NICs nearest it, which is how ncclscope infers a rank's NIC when NCCL's own transport carries
// the data (rank_nics.h). Read from the sysfs paths alone: each PCI function's path lists the bridges above it.
#ifndef NCCLSCOPE_HOST_NICS_PCI_DISTANCE_H_
#define NCCLSCOPE_HOST_NICS_PCI_DISTANCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "host_nics/sysfs_files.h"

namespace ncclscope {

enum class PciPathType : uint8_t { kPix, kPxb, kPhb, kNode, kSys };
const char* PciPathTypeName(PciPathType type);  // "PIX" … "SYS"

struct PciDistance {
  PciPathType type = PciPathType::kSys;
  int hops = 0;  // links from one device up to the nearest common bridge and down to the other
  bool operator<(const PciDistance& o) const { return std::tie(type, hops) < std::tie(o.type, o.hops); }
  bool operator==(const PciDistance& o) const { return type == o.type && hops == o.hops; }
};

// nullopt when either is not a PCI function with a sysfs path.
std::optional<PciDistance> PciDistanceBetween(const SysfsDeviceLocation& a, const SysfsDeviceLocation& b);

// The PCI function `bus_id` (sysfs's spelling) under `sysfs`/bus/pci/devices; pci "" when there is none.
SysfsDeviceLocation PciFunctionLocation(const std::string& sysfs, const std::string& bus_id);

// The host's NVIDIA GPUs (vendor 0x10de, display or 3D controller class) under `sysfs`, by PCI address.
std::vector<SysfsDeviceLocation> ReadHostGpus(const std::string& sysfs);

}  // namespace ncclscope

#endif  // NCCLSCOPE_HOST_NICS_PCI_DISTANCE_H_

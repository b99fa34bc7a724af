// Small, bounded reads of sysfs attribute files, for the host NIC counters (rdma_ports.h, netdevs.h). Every
// read is one open/read/close of a file the kernel formats on demand; a missing or unreadable file is "absent",
// never an error: devices come and go, and drivers expose different sets of attributes.
#ifndef NCCLSCOPE_HOST_NICS_SYSFS_FILES_H_
#define NCCLSCOPE_HOST_NICS_SYSFS_FILES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ncclscope {

// The file's first line without its newline (at most 255 bytes); nullopt when it cannot be read.
std::optional<std::string> ReadSysfsLine(const std::string& path);
// The file as an unsigned decimal counter; nullopt when absent or not a number.
std::optional<uint64_t> ReadSysfsCounter(const std::string& path);
// The entries of a folder (no "." or ".."), sorted; empty when it cannot be read.
std::vector<std::string> ListSysfsDir(const std::string& path);
// The last component of a link's target (a device's PCI address from .../device); "" when not a link.
std::string SysfsLinkName(const std::string& path);

// Where a device sits on the host: what `device_link` (a class entry's .../device, or /sys/bus/pci/devices/<addr>)
// points at.
struct SysfsDeviceLocation {
  std::string pci;   // the PCI address (0000:17:00.0); "" when the device is not a PCI function (soft-RoCE, veth)
  std::string path;  // the resolved sysfs path (.../pci0000:00/0000:00:01.0/.../0000:17:00.0): the bridges above it
  int numa_node = -1;  // -1: unknown
};
SysfsDeviceLocation ReadDeviceLocation(const std::string& device_link);

}  // namespace ncclscope

#endif  // NCCLSCOPE_HOST_NICS_SYSFS_FILES_H_

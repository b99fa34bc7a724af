#include "host_nics/netdevs.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "host_nics/sysfs_files.h"

namespace ncclscope {
namespace {

bool Matches(const std::string& name, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return !p.empty() && name.compare(0, p.size(), p) == 0; });
}

// A device of its own (PCI, virtio, platform): what a job's traffic leaves the host through.
bool HasDevice(const std::string& dir) { return ::access((dir + "/device").c_str(), F_OK) == 0; }

Netdev ReadOne(const std::string& dir, const std::string& name) {
  Netdev d;
  d.name = name;
  const std::string state = ReadSysfsLine(dir + "/operstate").value_or("");
  d.up = state == "up" || (state == "unknown" && ReadSysfsLine(dir + "/carrier").value_or("0") == "1");
  // speed is in Mb/s, -1 (or an error) when unknown.
  const long mbits = std::strtol(ReadSysfsLine(dir + "/speed").value_or("-1").c_str(), nullptr, 10);
  d.speed_bytes_per_s = mbits > 0 ? static_cast<double>(mbits) * 1e6 / 8 : 0;
  d.location = ReadDeviceLocation(dir + "/device");
  const std::string stats = dir + "/statistics/";
  auto counter = [&](const char* file) { return ReadSysfsCounter(stats + file).value_or(0); };
  d.rx_bytes = counter("rx_bytes");
  d.tx_bytes = counter("tx_bytes");
  d.rx_packets = counter("rx_packets");
  d.tx_packets = counter("tx_packets");
  d.rx_errors = counter("rx_errors");
  d.tx_errors = counter("tx_errors");
  d.rx_dropped = counter("rx_dropped");
  d.tx_dropped = counter("tx_dropped");
  d.carrier_changes = ReadSysfsCounter(dir + "/carrier_changes").value_or(0);
  return d;
}

}  // namespace

std::vector<Netdev> ReadNetdevs(const std::string& sysfs, const std::vector<std::string>& wanted,
                                const std::vector<std::string>& also) {
  std::vector<Netdev> out;
  const std::string root = sysfs + "/class/net";
  for (const std::string& name : ListSysfsDir(root)) {
    if (out.size() >= kMaxNetdevs) break;
    const std::string dir = root + "/" + name;
    const bool by_default = (name != "lo" && HasDevice(dir)) || std::count(also.begin(), also.end(), name) > 0;
    const bool chosen = wanted.empty() ? by_default : Matches(name, wanted);
    if (chosen) out.push_back(ReadOne(dir, name));
  }
  return out;
}

std::vector<std::pair<std::string, uint64_t>> ReadCarrierChanges(const std::string& sysfs) {
  std::vector<std::pair<std::string, uint64_t>> out;
  const std::string root = sysfs + "/class/net";
  for (const std::string& name : ListSysfsDir(root)) {
    if (out.size() >= kMaxCarrierNetdevs) break;
    if (name == "lo") continue;
    if (const auto changes = ReadSysfsCounter(root + "/" + name + "/carrier_changes")) out.emplace_back(name, *changes);
  }
  return out;
}

std::vector<std::string> SplitNetdevList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    while (!item.empty() && (item.front() == ' ' || item.front() == '=')) item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    // An exclusion (^name) picks nothing here: the default set already leaves virtual interfaces out.
    if (!item.empty() && item.front() != '^') out.push_back(item);
    start = comma + 1;
  }
  return out;
}

}  // namespace ncclscope

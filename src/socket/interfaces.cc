#include "socket/interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>

#include <algorithm>
#include <climits>
#include <fstream>

#include "absl/strings/str_split.h"

namespace ncclscope::sock {
namespace {

int ReadIntFile(const std::string& path, int fallback) {
  std::ifstream in(path);
  long v;
  if (in >> v) return static_cast<int>(v);
  return fallback;
}

}  // namespace

bool InterfaceMatches(const std::string& spec_in, const std::string& ifname, bool loopback) {
  std::string spec = spec_in;
  if (spec.empty()) return !loopback && ifname.rfind("docker", 0) != 0;
  bool exclude = false;
  if (spec[0] == '^') {
    exclude = true;
    spec.erase(0, 1);
  }
  bool exact = false;
  if (!spec.empty() && spec[0] == '=') {
    exact = true;
    spec.erase(0, 1);
  }
  bool listed = false;
  for (absl::string_view item : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    std::string s(item);
    if (exact ? ifname == s : ifname.rfind(s, 0) == 0) listed = true;
  }
  if (exclude) return !listed && !loopback;  // "^eth" still means "no loopback unless named"
  return listed;
}

std::vector<Interface> DiscoverInterfaces(const std::string& spec) {
  std::vector<Interface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || !(ifa->ifa_flags & IFF_UP)) continue;
    int family = ifa->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (family == AF_INET6) {
      auto* a6 = reinterpret_cast<sockaddr_in6*>(ifa->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&a6->sin6_addr)) continue;  // needs a scope id; not worth it
    }
    bool loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
    std::string name = ifa->ifa_name;
    if (!InterfaceMatches(spec, name, loopback)) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const Interface& i) { return i.name == name; });
    if (it != out.end()) {
      if (it->addr.sa.sa_family == AF_INET || family == AF_INET6) continue;  // keep IPv4
    } else {
      out.emplace_back();
      it = out.end() - 1;
    }
    it->name = name;
    it->loopback = loopback;
    if (family == AF_INET) {
      it->addr.in4 = *reinterpret_cast<sockaddr_in*>(ifa->ifa_addr);
    } else {
      it->addr.in6 = *reinterpret_cast<sockaddr_in6*>(ifa->ifa_addr);
    }
  }
  freeifaddrs(list);
  for (Interface& i : out) {
    std::string base = "/sys/class/net/" + i.name;
    int speed = ReadIntFile(base + "/speed", -1);
    i.speed_mbps = speed > 0 ? speed : 10000;
    char resolved[PATH_MAX];
    if (!i.loopback && realpath((base + "/device").c_str(), resolved) != nullptr) {
      i.pci_path = resolved;
      i.numa_node = ReadIntFile(base + "/device/numa_node", -1);
    }
  }
  std::sort(out.begin(), out.end(), [](const Interface& a, const Interface& b) { return a.name < b.name; });
  return out;
}

}  // namespace ncclscope::sock

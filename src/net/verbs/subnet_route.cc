#include "net/verbs/subnet_route.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "net/verbs/gid_select.h"

namespace ncclscope::net::verbs {
namespace {

bool IsZero(const RawGid& g) {
  return std::all_of(g.begin(), g.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace

RawGid MappedGid(uint32_t ipv4_net) {
  RawGid g{};
  g[10] = g[11] = 0xff;
  std::memcpy(g.data() + 12, &ipv4_net, 4);
  return g;
}

bool GidsShareSubnet(const RawGid& a, const RawGid& b, int prefix_len) {
  if (IsZero(a) || IsZero(b)) return false;
  const sa_family_t fa = GidFamily(a);
  if (fa != GidFamily(b)) return false;
  if (fa == AF_INET) {
    const int len = std::clamp(prefix_len, 1, 32);
    const uint32_t mask = len == 32 ? ~0u : ~((1u << (32 - len)) - 1);
    return (ntohl(GidIpv4(a)) & mask) == (ntohl(GidIpv4(b)) & mask);
  }
  return std::memcmp(a.data(), b.data(), 8) == 0;
}

bool PortReaches(const VerbsNetDevice& dev, const std::vector<RawGid>& peer_gids, int prefix_len) {
  if (dev.link_layer != LinkLayer::kEthernet) return false;
  return std::any_of(peer_gids.begin(), peer_gids.end(),
                     [&](const RawGid& g) { return GidsShareSubnet(dev.gid.raw, g, prefix_len); });
}

int ChoosePortBySubnet(const std::vector<VerbsNetDevice>& ports, int preferred, const std::vector<RawGid>& peer_gids,
                       int prefix_len) {
  if (std::all_of(peer_gids.begin(), peer_gids.end(), IsZero)) return preferred;
  if (preferred >= 0 && preferred < static_cast<int>(ports.size()) &&
      PortReaches(ports[preferred], peer_gids, prefix_len)) {
    return preferred;
  }
  for (int i = 0; i < static_cast<int>(ports.size()); ++i) {
    if (i != preferred && PortReaches(ports[i], peer_gids, prefix_len)) return i;
  }
  return preferred;
}

uint32_t GidIpv4(const RawGid& gid) {
  if (GidFamily(gid) != AF_INET) return 0;
  uint32_t a;
  std::memcpy(&a, gid.data() + 12, 4);
  return a;
}

uint32_t ChooseListenerAddress(const std::vector<uint32_t>& listener_addrs, const std::vector<VerbsNetDevice>& ports,
                               int prefix_len) {
  for (uint32_t a : listener_addrs) {
    const std::vector<RawGid> peer{MappedGid(a)};
    for (const VerbsNetDevice& p : ports) {
      if (PortReaches(p, peer, prefix_len)) return a;
    }
  }
  return listener_addrs.empty() ? 0 : listener_addrs.front();
}

std::string PortLabel(const VerbsNetDevice& dev) {
  std::string s = dev.device_name + ":" + std::to_string(dev.port_num);
  const uint32_t a = GidIpv4(dev.gid.raw);
  char text[INET6_ADDRSTRLEN] = "";
  if (a != 0) {
    inet_ntop(AF_INET, &a, text, sizeof text);
  } else if (!IsZero(dev.gid.raw)) {
    inet_ntop(AF_INET6, dev.gid.raw.data(), text, sizeof text);
  }
  return text[0] != '\0' ? s + " (" + text + ")" : s;
}

}  // namespace ncclscope::net::verbs

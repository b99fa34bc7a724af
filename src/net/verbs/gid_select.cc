#include "net/verbs/gid_select.h"

#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>

namespace ncclscope::net::verbs {
namespace {

bool IsV4Mapped(const std::array<uint8_t, 16>& r) {
  for (int i = 0; i < 10; ++i) {
    if (r[i] != 0) return false;
  }
  return r[10] == 0xff && r[11] == 0xff;
}

bool IsV4MappedMulticast(const std::array<uint8_t, 16>& r) {
  static constexpr uint8_t kPrefix[12] = {0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(r.data(), kPrefix, sizeof(kPrefix)) == 0;
}

bool PrefixMatches(const uint8_t* a, const uint8_t* b, int bits) {
  int full = bits / 8;
  if (std::memcmp(a, b, full) != 0) return false;
  int rest = bits % 8;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[full] & mask) == (b[full] & mask);
}

int RoceVersion(GidType t) {
  switch (t) {
    case GidType::kIbOrRoceV1: return 1;
    case GidType::kRoceV2: return 2;
    case GidType::kUnknown: break;
  }
  return 0;
}

const char* FamilyName(sa_family_t f) { return f == AF_INET6 ? "AF_INET6" : "AF_INET"; }

GidChoice Chosen(const VerbsGid& g, std::string reason) {
  GidChoice c;
  c.index = g.index;
  c.raw = g.raw;
  c.roce_version = RoceVersion(g.type);
  c.reason = std::move(reason);
  return c;
}

const VerbsGid* FindIndex(const VerbsPort& port, int index) {
  for (const VerbsGid& g : port.gids) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

}  // namespace

std::optional<AddrRange> ParseAddrRange(const std::string& text, sa_family_t family, std::string* error) {
  size_t slash = text.find('/');
  if (slash == std::string::npos) {
    *error = "'" + text + "' has no /prefix-length";
    return std::nullopt;
  }
  AddrRange r;
  r.family = family;
  std::string addr = text.substr(0, slash);
  if (inet_pton(family, addr.c_str(), r.addr.data()) != 1) {
    *error = "'" + addr + "' is not an " + FamilyName(family) + " address";
    return std::nullopt;
  }
  char* end = nullptr;
  long len = std::strtol(text.c_str() + slash + 1, &end, 10);
  int max = family == AF_INET ? 32 : 128;
  if (end == text.c_str() + slash + 1 || *end != '\0' || len < 0 || len > max) {
    *error = "prefix length '" + text.substr(slash + 1) + "' is not in [0, " + std::to_string(max) + "]";
    return std::nullopt;
  }
  r.prefix_len = static_cast<int>(len);
  return r;
}

sa_family_t GidFamily(const std::array<uint8_t, 16>& raw) {
  return IsV4Mapped(raw) || IsV4MappedMulticast(raw) ? AF_INET : AF_INET6;
}

bool GidIsValid(const std::array<uint8_t, 16>& raw) {
  bool zero_tail = true;
  for (int i = 4; i < 16; ++i) zero_tail = zero_tail && raw[i] == 0;
  bool fe80 = raw[0] == 0xfe && raw[1] == 0x80 && raw[2] == 0 && raw[3] == 0;
  bool zero_head = raw[0] == 0 && raw[1] == 0 && raw[2] == 0 && raw[3] == 0;
  if (zero_tail && (zero_head || fe80)) return false;  // unconfigured entry
  bool link_local = fe80 && raw[4] == 0 && raw[5] == 0 && raw[6] == 0 && raw[7] == 0;
  return !link_local;
}

bool GidInRange(const std::array<uint8_t, 16>& raw, const AddrRange& range) {
  if (range.family == AF_INET) return PrefixMatches(raw.data() + 12, range.addr.data(), range.prefix_len);
  return PrefixMatches(raw.data(), range.addr.data(), range.prefix_len);
}

std::string GidToString(const std::array<uint8_t, 16>& raw) {
  char buf[INET6_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET6, raw.data(), buf, sizeof(buf));
  return buf;
}

GidChoice SelectGid(const VerbsPort& port, const GidPolicy& policy) {
  if (port.link_layer == LinkLayer::kInfiniBand) {
    GidChoice c;
    c.index = 0;
    if (const VerbsGid* g = FindIndex(port, 0)) c.raw = g->raw;
    c.reason = "IB: GID 0, LID " + std::to_string(port.lid);
    return c;
  }
  if (policy.gid_index >= 0) {
    if (const VerbsGid* g = FindIndex(port, policy.gid_index)) return Chosen(*g, "NCCL_IB_GID_INDEX");
    GidChoice none;
    none.reason = "NCCL_IB_GID_INDEX=" + std::to_string(policy.gid_index) + " is not a populated GID";
    return none;
  }
  const VerbsGid* any_version = nullptr;
  for (const VerbsGid& g : port.gids) {
    if (!GidIsValid(g.raw) || GidFamily(g.raw) != policy.family) continue;
    if (policy.range && !GidInRange(g.raw, *policy.range)) continue;
    if (RoceVersion(g.type) == policy.roce_version) {
      return Chosen(g, "RoCE v" + std::to_string(policy.roce_version) + " " + FamilyName(policy.family));
    }
    if (any_version == nullptr) any_version = &g;
  }
  std::string wanted = std::string(FamilyName(policy.family)) + " RoCE v" + std::to_string(policy.roce_version) +
                       (policy.range ? " GID in NCCL_IB_ADDR_RANGE" : " GID");
  if (any_version != nullptr) return Chosen(*any_version, "no " + wanted + "; using another RoCE version");
  if (const VerbsGid* g0 = FindIndex(port, 0)) {
    return Chosen(*g0, "no " + wanted + "; falling back to GID 0 as NCCL does");
  }
  GidChoice none;
  none.reason = "no " + wanted + " and no GID 0";
  return none;
}

}  // namespace ncclscope::net::verbs

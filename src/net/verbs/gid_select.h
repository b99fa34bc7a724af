// Which GID a port's queue pairs use, decided from the port's struct alone (so it is unit-testable):
// - InfiniBand link layer: GID index 0; the peer is addressed by LID.
// - RoCE with NCCL_IB_GID_INDEX >= 0: that index, provided the entry is populated.
// - RoCE otherwise (NCCL's automatic choice, net_ib/connect.cc ncclIbGetGidIndex): among populated,
//   non-link-local GIDs of the wanted address family (NCCL_IB_ADDR_FAMILY, IPv4-mapped GIDs count as
//   AF_INET) inside NCCL_IB_ADDR_RANGE, the lowest index of the wanted RoCE version
//   (NCCL_IB_ROCE_VERSION_NUM), else the lowest index of any version. With no such GID NCCL keeps
//   index 0; we do the same when index 0 is populated and say so in the reason, else decline the port.
// The default thus picks the RoCE v2 IPv4-mapped GID (::ffff:a.b.c.d) of the port's netdev address.
// Pure functions; thread-safe.
#ifndef NCCLSCOPE_NET_VERBS_GID_SELECT_H_
#define NCCLSCOPE_NET_VERBS_GID_SELECT_H_

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "net/verbs/devices.h"

namespace ncclscope::net::verbs {

struct AddrRange {
  sa_family_t family = AF_INET;
  std::array<uint8_t, 16> addr{};  // AF_INET: the first 4 bytes
  int prefix_len = 0;
};

struct GidPolicy {
  int gid_index = -1;         // NCCL_IB_GID_INDEX; -1 = automatic
  int roce_version = 2;       // NCCL_IB_ROCE_VERSION_NUM
  sa_family_t family = AF_INET;  // NCCL_IB_ADDR_FAMILY
  std::optional<AddrRange> range;  // NCCL_IB_ADDR_RANGE
};

struct GidChoice {
  int index = -1;             // -1: no usable GID
  std::array<uint8_t, 16> raw{};
  int roce_version = 0;       // 1, 2, or 0 (IB / unknown)
  std::string reason;         // why this one, or why none
};

// Parses "a.b.c.d/n" (AF_INET) or "x:y::/n" (AF_INET6) for `family`; nullopt and `*error` set when
// the text does not parse (NCCL then ignores the range, and so do we, with a warning).
std::optional<AddrRange> ParseAddrRange(const std::string& text, sa_family_t family, std::string* error);

// AF_INET for IPv4-mapped (::ffff:a.b.c.d) and IPv4-mapped multicast GIDs, else AF_INET6.
sa_family_t GidFamily(const std::array<uint8_t, 16>& raw);
// Not all-zero, not an unconfigured fe80:: entry, not link-local.
bool GidIsValid(const std::array<uint8_t, 16>& raw);
bool GidInRange(const std::array<uint8_t, 16>& raw, const AddrRange& range);
// "::ffff:198.51.100.1", "fe80::5054:ff:fe12:3456".
std::string GidToString(const std::array<uint8_t, 16>& raw);

GidChoice SelectGid(const VerbsPort& port, const GidPolicy& policy);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_GID_SELECT_H_

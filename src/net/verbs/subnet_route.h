// Subnet-aware port choice (NCCL_IB_SUBNET_AWARE_ROUTING, with the meaning NCCL 2.30 gave it). In a
// direct-connect topology every pair of hosts shares a subnet on one link only, so the port NCCL pairs
// by index may not reach the peer at all. With the knob on, the listener puts its port's GID and the
// IPv4 addresses of all its host's RoCE ports into the handle; the connector keeps NCCL's port when it
// shares a subnet with the listener's, else takes the first that does, and reaches the listener's
// socket through an address on a subnet it has; the acceptor does the same with the connector's GID
// from the handshake. Off (NCCL's default), nothing changes: a port that cannot reach the peer only
// earns a warning that says which knob helps.
// Pure functions over the discovered ports; the connect code logs and counts the choice.
#ifndef NCCLSCOPE_NET_VERBS_SUBNET_ROUTE_H_
#define NCCLSCOPE_NET_VERBS_SUBNET_ROUTE_H_

#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "net/verbs/discovery.h"

namespace ncclscope::net::verbs {

using RawGid = std::array<uint8_t, 16>;

// IPv4-mapped GIDs compare their addresses under `prefix_len` (1..32); IPv6 GIDs their 64-bit subnet
// prefix; a zero GID or mixed families never match.
bool GidsShareSubnet(const RawGid& a, const RawGid& b, int prefix_len);

// Whether port `dev` can reach one of `peer_gids`: a RoCE port whose GID shares a subnet with one of them.
bool PortReaches(const VerbsNetDevice& dev, const std::vector<RawGid>& peer_gids, int prefix_len);

// The port to use instead of `preferred` (NCCL's): `preferred` if it reaches the peer, or if no peer GID
// is usable (IB, unknown); else the first port that reaches it; else `preferred` (the caller warns).
int ChoosePortBySubnet(const std::vector<VerbsNetDevice>& ports, int preferred, const std::vector<RawGid>& peer_gids,
                       int prefix_len);

// The IPv4 address (network order) inside a RoCE v2 IPv4-mapped GID, or 0; and the GID of an address.
uint32_t GidIpv4(const RawGid& gid);
RawGid MappedGid(uint32_t ipv4_net);

// Which of the listener's addresses (network order; the first is its port's own) the connector should
// dial: the first on a subnet one of `ports` has, else the first.
uint32_t ChooseListenerAddress(const std::vector<uint32_t>& listener_addrs, const std::vector<VerbsNetDevice>& ports,
                               int prefix_len);

// "rxe1 (198.51.100.2)": a port and its GID's address, for the log.
std::string PortLabel(const VerbsNetDevice& dev);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_SUBNET_ROUTE_H_

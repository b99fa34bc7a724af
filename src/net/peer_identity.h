// Who is at the other end of a connection, for errors and the post-mortem net-error log: the peer's
// address and, when the handshake told us, its process's global rank, pid and host. Each transport sends
// its own process's WireIdentity during connection set-up (TCP: the listener in the handle, the connector
// in its hello; verbs: both in their ConnInfo), so a survivor's error names the rank that died.
// Plain data; thread-safe (LocalWireIdentity reads the environment and the host name, nothing cached).
#ifndef NCCLSCOPE_NET_PEER_IDENTITY_H_
#define NCCLSCOPE_NET_PEER_IDENTITY_H_

#include <cstdint>
#include <string>

namespace ncclscope::net {

inline constexpr int kWireHostBytes = 56;  // NUL included: longer host names are truncated

// On the wire, host byte order like every record of ours. All zeros (an old peer, or none sent) reads as
// unknown: pid 0 is no process, and the rank is sent plus one so that 0 means unknown too.
struct WireIdentity {
  int32_t global_rank_plus1;
  int32_t pid;
  char host[kWireHostBytes];
};
static_assert(sizeof(WireIdentity) == 64);

struct PeerInfo {
  std::string address;        // "10.0.0.1:5000"
  int global_rank = -1;       // -1: unknown
  int pid = -1;               // -1: unknown
  std::string host;           // "": unknown

  // "10.0.0.1:5000 (global rank 3, pid 1234 on hostB)"; the parts not known are left out, and the
  // address alone when nothing is known.
  std::string Describe() const;
};

// This process: the global rank from the launcher variables (GlobalRankFromEnv), getpid(), the host name.
WireIdentity LocalWireIdentity();
// The peer at `address` from what it sent; out-of-range values read as unknown and the host keeps only
// the characters a host name may hold (a confused or hostile peer must not write into our logs).
PeerInfo PeerFromWire(const std::string& address, const WireIdentity& w);

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_PEER_IDENTITY_H_

// The verbs transport's handshake checks, apart from its sockets and devices: what it makes of the bytes a
// peer controls (the connect handle NCCL carries from the listening rank, and the ConnInfo each side reads
// from the other). Pure functions, so that tests/fuzz/fuzz_verbs_handshake.cc runs the very code
// connect.cc runs, on a host without RDMA hardware. Thread-safe.
#ifndef NCCLSCOPE_NET_VERBS_HANDSHAKE_H_
#define NCCLSCOPE_NET_VERBS_HANDSHAKE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/net_types.h"
#include "net/verbs/verbs_comm.h"

namespace ncclscope::net::verbs {

inline constexpr HandleTag kVerbsHandle{2, "verbs (IB/RoCE)"};

// The listener's handle: `payload` after the common header (net/handle.h).
void EncodeVerbsHandle(void* handle, const VerbsHandlePayload& payload);
// Reads a handle of kHandleBytes and checks its header and address family.
Result<VerbsHandlePayload> DecodeVerbsHandle(const void* handle);
// "peer <address>" for the handle's listener, or "an unknown peer" when the address is none.
std::string HandlePeer(const VerbsHandlePayload& payload);
// The listener host's IPv4 addresses the handle lists (network order): its own first, then the others.
std::vector<uint32_t> ListenerHostAddresses(const VerbsHandlePayload& payload);

// Whether `moved` bytes of a peer's ConnInfo are enough to judge it: all of it, or, from an older build
// (whose ConnInfo is shorter), as soon as magic and version are in, so that its connector meets the
// version error instead of a wait for bytes that never come.
bool ConnInfoReadyToJudge(const ConnInfo& in, size_t moved);
// Magic, version, QP count, MTU and listener id: what both sides check before using a peer's ConnInfo.
Status CheckConnInfo(const ConnInfo& in, uint32_t listener_id, const std::string& from);
// The acceptor's further check: a fused member's index within its count, the count within a device's.
Status CheckFuseMember(const ConnInfo& in, const std::string& from);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_HANDSHAKE_H_

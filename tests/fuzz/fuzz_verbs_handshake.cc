// The verbs transport's handshake (src/net/verbs/handshake.h) on bytes a peer controls. Input: the
// 128-byte connect handle NCCL hands the connector (zero-padded when shorter), then the ConnInfo read from
// the other side. The acceptor judges it after every byte, as its non-blocking reads may stop anywhere;
// the connector only once all of it is in. No RDMA device is touched.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "net/net_types.h"
#include "net/peer_identity.h"
#include "net/verbs/handshake.h"

namespace {

using ncclscope::Status;
using ncclscope::net::kHandleBytes;
using namespace ncclscope::net::verbs;

// What the transport relies on once a ConnInfo has passed its checks.
void CheckAccepted(const ConnInfo& in, bool acceptor) {
  if (in.nqps < 1 || in.nqps > kMaxQps || in.mtu < IBV_MTU_256 || in.mtu > IBV_MTU_4096) abort();
  if (acceptor && (in.fuse_count < 1 || in.fuse_count > ncclscope::net::kMaxDevsPerVNic ||
                   in.fuse_index >= in.fuse_count)) {
    abort();  // Gather indexes a vector of fuse_count members with fuse_index
  }
  (void)ncclscope::net::PeerFromWire("192.0.2.1:40000", in.identity).Describe();
}

void AcceptorReads(const uint8_t* bytes, size_t size, uint32_t listener_id) {
  for (size_t moved = 1; moved <= size && moved <= sizeof(ConnInfo); ++moved) {
    ConnInfo in{};
    memcpy(&in, bytes, moved);
    if (!ConnInfoReadyToJudge(in, moved)) continue;
    Status s = CheckConnInfo(in, listener_id, "peer 192.0.2.1:40000");
    if (s.ok()) s = CheckFuseMember(in, "peer 192.0.2.1:40000");
    if (s.ok()) CheckAccepted(in, /*acceptor=*/true);
    return;
  }
}

void ConnectorReads(const uint8_t* bytes, size_t size, uint32_t listener_id) {
  if (size < sizeof(ConnInfo)) return;
  ConnInfo in;
  memcpy(&in, bytes, sizeof(in));
  if (CheckConnInfo(in, listener_id, "peer 192.0.2.1:5000").ok()) CheckAccepted(in, /*acceptor=*/false);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t handle[kHandleBytes] = {};
  memcpy(handle, data, size < sizeof(handle) ? size : sizeof(handle));
  uint32_t listener_id = 0x1234abcd;
  ncclscope::Result<VerbsHandlePayload> decoded = DecodeVerbsHandle(handle);
  if (decoded.ok()) {
    (void)HandlePeer(*decoded);
    const std::vector<uint32_t> addrs = ListenerHostAddresses(*decoded);
    if (addrs.empty() || addrs.size() > 1 + kHandleAltAddrs) abort();
    listener_id = decoded->listener_id;
  } else {
    (void)decoded.status().message();
  }
  if (size > sizeof(handle)) {
    AcceptorReads(data + sizeof(handle), size - sizeof(handle), listener_id);
    ConnectorReads(data + sizeof(handle), size - sizeof(handle), listener_id);
  }
  return 0;
}

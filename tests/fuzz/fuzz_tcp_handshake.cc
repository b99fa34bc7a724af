// The TCP transport's handshake (src/net/tcp/handshake.h) on bytes a peer controls. Input: the 128-byte
// connect handle NCCL hands the connector (zero-padded when shorter), then the Hello an accepted socket
// reads. The hello is judged after every byte, as Accept may see any prefix of it; the listener expects the
// decoded handle's id and socket count (the seeds' values when the handle is refused).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "net/net_types.h"
#include "net/peer_identity.h"
#include "net/tcp/handshake.h"

namespace {

using ncclscope::net::PeerFromWire;
using ncclscope::net::PeerInfo;
using ncclscope::net::kHandleBytes;
using namespace ncclscope::net::tcp;

// The host name a peer sent may hold only host-name characters and '?' once it reaches our logs.
void CheckPeer(const PeerInfo& p) {
  if (p.host.size() >= ncclscope::net::kWireHostBytes + 1) abort();
  for (char c : p.host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '.' || c == '_' || c == '?';
    if (!ok) abort();
  }
  (void)p.Describe();
}

void JudgeEveryPrefix(const uint8_t* bytes, size_t size, uint32_t listener_id, int nsocks) {
  for (size_t got = 1; got <= size && got <= sizeof(Hello); ++got) {
    Hello h{};
    memcpy(&h, bytes, got);
    const HelloVerdict verdict = JudgeHello(h, got, listener_id, nsocks);
    if (verdict == HelloVerdict::kIncomplete) continue;
    if (verdict == HelloVerdict::kMalformed) {
      (void)MalformedHelloError(h, "192.0.2.1:40000", "192.0.2.2:5000", nsocks).message();
      return;
    }
    // Accept files the socket at fds[index] of a vector of nsocks.
    if (got != sizeof(Hello) || h.index >= nsocks) abort();
    CheckPeer(PeerFromWire("192.0.2.1:40000", h.identity));
    return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t handle[kHandleBytes] = {};
  memcpy(handle, data, size < sizeof(handle) ? size : sizeof(handle));
  uint32_t listener_id = 0x1234abcd;
  int nsocks = 2;
  ncclscope::Result<TcpHandlePayload> decoded = DecodeTcpHandle(handle);
  if (decoded.ok()) {
    if (decoded->nsocks < 1 || decoded->nsocks > kMaxSockets) abort();
    CheckPeer(ListenerOf(*decoded));
    listener_id = decoded->listener_id;
    nsocks = decoded->nsocks;
  } else {
    (void)decoded.status().message();
  }
  if (size > sizeof(handle)) JudgeEveryPrefix(data + sizeof(handle), size - sizeof(handle), listener_id, nsocks);
  return 0;
}

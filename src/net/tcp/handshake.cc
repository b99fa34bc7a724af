#include "net/tcp/handshake.h"

#include <sys/socket.h>

#include "net/handle.h"
#include "socket/sock_addr.h"

namespace ncclscope::net::tcp {

void EncodeTcpHandle(void* handle, const TcpHandlePayload& payload) {
  WriteHandle(handle, kTcpHandle, &payload, sizeof(payload));
}

Result<TcpHandlePayload> DecodeTcpHandle(const void* handle) {
  HandleHeader hh;
  TcpHandlePayload h;
  ReadHandle(handle, &hh, &h, sizeof(h));
  // Only an address we could connect to is worth printing: anything else is bytes from a confused peer.
  const std::string from = sock::IsInet(h.addr) ? "peer " + sock::SockAddrToString(h.addr) : "an unknown peer";
  NCCLSCOPE_RETURN_IF_ERROR(CheckHandleHeader(hh, kTcpHandle, from));
  if (!sock::IsInet(h.addr) || h.nsocks < 1 || h.nsocks > kMaxSockets) {
    return SystemError("malformed connect handle from " + from + " (address family " +
                       std::to_string(h.addr.sa.sa_family) + ", " + std::to_string(h.nsocks) + " sockets)");
  }
  return h;
}

PeerInfo ListenerOf(const TcpHandlePayload& h) {
  return h.wire_version == kWireVersion ? PeerFromWire(sock::SockAddrToString(h.addr), h.identity)
                                        : PeerInfo{sock::SockAddrToString(h.addr)};
}

Hello MakeHello(int nsocks, uint32_t listener_id, int index, uint64_t conn_id, const WireIdentity& identity) {
  return Hello{kHelloMagic, kWireVersion, static_cast<uint16_t>(nsocks), listener_id, static_cast<uint16_t>(index), 0,
               conn_id, identity};
}

HelloVerdict JudgeHello(const Hello& h, size_t got, uint32_t listener_id, int nsocks) {
  // An older build's hello is shorter: judge magic and version as soon as they are in, so that its
  // connector meets the version error instead of a wait for bytes that never come.
  if (got < offsetof(Hello, nsocks)) return HelloVerdict::kIncomplete;
  const bool same_build = h.magic == kHelloMagic && h.version == kWireVersion;
  if (same_build && got < sizeof(Hello)) return HelloVerdict::kIncomplete;
  if (!same_build || h.listener_id != listener_id || h.nsocks != nsocks || h.index >= nsocks) {
    return HelloVerdict::kMalformed;
  }
  return HelloVerdict::kComplete;
}

Status MalformedHelloError(const Hello& h, const std::string& peer, const std::string& addr, int nsocks) {
  return SystemError("malformed hello from peer " + peer + " on " + addr + " (magic " + std::to_string(h.magic) +
                     ", version " + std::to_string(h.version) + ", sockets " + std::to_string(h.nsocks) +
                     "; expected version " + std::to_string(kWireVersion) + " and " + std::to_string(nsocks) +
                     " sockets)");
}

}  // namespace ncclscope::net::tcp

// The TCP transport's handshake checks, apart from its sockets: what it makes of the bytes a peer controls
// (the 128-byte connect handle NCCL carries from the listening rank, and the Hello that opens every
// accepted socket). Pure functions, so that tests/fuzz/fuzz_tcp_handshake.cc runs the very code the
// transport runs. Thread-safe.
#ifndef NCCLSCOPE_NET_TCP_HANDSHAKE_H_
#define NCCLSCOPE_NET_TCP_HANDSHAKE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "net/net_types.h"
#include "net/peer_identity.h"
#include "net/tcp/wire.h"

namespace ncclscope::net::tcp {

inline constexpr HandleTag kTcpHandle{1, "TCP"};

// The listener's handle: `payload` after the common header (net/handle.h).
void EncodeTcpHandle(void* handle, const TcpHandlePayload& payload);
// Reads a handle of kHandleBytes and checks its header, address family and socket count; the error names
// the peer when the address is one.
Result<TcpHandlePayload> DecodeTcpHandle(const void* handle);
// Who listens at the handle's address: its identity as it sent it, or the address alone from a listener
// of an older build (zeros; its hello check will refuse us anyway).
PeerInfo ListenerOf(const TcpHandlePayload& h);

// The first record on each data socket of a connection.
Hello MakeHello(int nsocks, uint32_t listener_id, int index, uint64_t conn_id, const WireIdentity& identity);

// What the accepting side can say of a hello of which `got` bytes have arrived (the rest of `h` zeros).
enum class HelloVerdict {
  kIncomplete,  // wait for more bytes
  kComplete,    // all of it, and it belongs to this listener
  kMalformed,   // not ours: another build, another listener, or a bad socket count or index
};
HelloVerdict JudgeHello(const Hello& h, size_t got, uint32_t listener_id, int nsocks);
// The error for a kMalformed hello from `peer` on the listener at `addr`.
Status MalformedHelloError(const Hello& h, const std::string& peer, const std::string& addr, int nsocks);

}  // namespace ncclscope::net::tcp

#endif  // NCCLSCOPE_NET_TCP_HANDSHAKE_H_

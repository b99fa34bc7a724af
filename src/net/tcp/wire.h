// The TCP transport's wire formats and the slicing rule both ends compute identically. All records are
// fixed-size, host byte order (both ends run the same build on the same architecture; the handle's
// version guards against mixing). Plain data; no state.
#ifndef NCCLSCOPE_NET_TCP_WIRE_H_
#define NCCLSCOPE_NET_TCP_WIRE_H_

#include <cstddef>
#include <cstdint>

#include "net/net_types.h"
#include "net/peer_identity.h"
#include "socket/sock_addr.h"

namespace ncclscope::net::tcp {

inline constexpr int kMaxSockets = 16;
inline constexpr uint32_t kHelloMagic = 0x6f6c6548;  // "Helo"
inline constexpr uint16_t kWireVersion = 2;  // 2: the processes' identities in the handle and Hello

// Handle payload after HandleHeader (112 bytes available).
struct TcpHandlePayload {
  sock::SockAddr addr;    // the listener (28 bytes, IPv4 or IPv6)
  uint16_t nsocks;        // sockets per connection the listener expects
  uint16_t wire_version;  // the listener's kWireVersion (0 from builds before 2: `identity` is zeros)
  uint32_t listener_id;   // random, to detect a handle aimed at the wrong listener
  WireIdentity identity;  // the listener's process, so the sending side's errors name it
};
static_assert(sizeof(sock::SockAddr) == 28 && sizeof(TcpHandlePayload) == 100);
static_assert(sizeof(TcpHandlePayload) <= kHandlePayloadBytes);

// First bytes on every data socket, connector -> listener.
struct Hello {
  uint32_t magic;
  uint16_t version;
  uint16_t nsocks;
  uint32_t listener_id;
  uint16_t index;   // which socket of the connection this is
  uint16_t reserved;
  uint64_t conn_id;  // groups the sockets of one connection
  WireIdentity identity;  // the connector's process, so the receiving side's errors name it
};
static_assert(sizeof(Hello) == 88);

// Clear-to-send, receiver -> sender on socket 0: one per irecv, in posting order.
struct Cts {
  uint32_t seq;
  int32_t n;
  uint64_t sizes[kMaxRecvs];
  int32_t tags[kMaxRecvs];
};
static_assert(sizeof(Cts) == 8 + 8 * kMaxRecvs + 4 * kMaxRecvs);

// Precedes each slice on a data socket, sender -> receiver.
struct ChunkHeader {
  uint32_t slot_seq;  // the Cts seq this message answers
  uint16_t index;     // buffer within that multi-receive
  uint16_t slice;     // which slice of the message follows
  uint64_t size;      // whole message size
};
static_assert(sizeof(ChunkHeader) == 16);

// Messages are cut into at most `nsocks` slices of at least `min_slice` bytes (4 KiB aligned); slice i
// of message `seq` travels on socket (seq + i) % nsocks, so small messages rotate over the sockets.
inline int NumSlices(uint64_t size, int nsocks, uint64_t min_slice) {
  if (size == 0) return 1;
  uint64_t n = (size + min_slice - 1) / min_slice;
  if (n > static_cast<uint64_t>(nsocks)) n = nsocks;
  uint64_t per = ((size + n - 1) / n + 4095) & ~uint64_t{4095};
  return static_cast<int>((size + per - 1) / per);
}

inline void SliceRange(uint64_t size, int nslices, int slice, uint64_t* offset, uint64_t* length) {
  if (size == 0) {
    *offset = 0;
    *length = 0;
    return;
  }
  uint64_t per = ((size + nslices - 1) / nslices + 4095) & ~uint64_t{4095};
  uint64_t begin = per * slice;
  if (begin > size) begin = size;
  uint64_t end = begin + per > size ? size : begin + per;
  *offset = begin;
  *length = end - begin;
}

inline int SocketOfSlice(uint32_t seq, int slice, int nsocks) {
  return static_cast<int>((seq + static_cast<uint32_t>(slice)) % static_cast<uint32_t>(nsocks));
}

}  // namespace ncclscope::net::tcp

#endif  // NCCLSCOPE_NET_TCP_WIRE_H_

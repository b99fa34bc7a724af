// The sending side of a TCP connection: `nsocks` data sockets, served by helper threads. Isend (the
// progress thread) matches the message to a clear-to-send the receiver wrote on socket 0, fills a slot
// of a fixed ring and publishes it with one release store; each helper walks the ring in order and
// writes, for every message that has a slice on one of its sockets, a ChunkHeader plus the slice.
// Test() sees completion when all slices are written. With no helpers (inline mode, few CPUs) Isend and
// Test write on the calling thread instead. No lock and no allocation after construction;
// helpers sleep on an atomic when idle and in poll() when a socket is full. Failures (reset, broken
// pipe, TCP_USER_TIMEOUT, no progress within the timeout) are kept in the comm's error slot and
// returned by the next Isend/Test with the peer's address.
#ifndef NCCLSCOPE_NET_TCP_SEND_COMM_H_
#define NCCLSCOPE_NET_TCP_SEND_COMM_H_

#include <atomic>
#include <cstdint>

#include "net/tcp/comm_base.h"
#include "net/transport.h"

namespace ncclscope::net::tcp {

class TcpSendComm final : public SendComm, private CommBase {
 public:
  TcpSendComm(std::vector<int> fds, PeerInfo peer, const TcpConfig& cfg, const NetContext* ctx,
              const std::string& nic);
  Status Start();

  Status Isend(void* data, size_t size, int tag, void* mhandle, void* phandle, Request** request) override;
  Status RegMr(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) override;
  Status DeregMr(void* mhandle) override;
  Status Close() override;

 private:
  static constexpr int kRing = kMaxRequests * kMaxRecvs;  // NCCL: 32 x maxRecvs sends per sendComm

  struct Entry final : Request {
    TcpSendComm* comm = nullptr;
    uint32_t seq = 0;
    uint32_t slot_seq = 0;
    uint16_t index = 0;
    int nslices = 0;
    char* data = nullptr;
    uint64_t size = 0;
    uint64_t posted_ns = 0;
    std::atomic<int> slices_done{0};
    std::atomic<bool> in_use{false};
    void* prof_event = nullptr;
    ncclscope_net_sock_descr_v1_t descr{};
    Status Test(int* done, int* sizes) override;
  };

  struct Socket {
    int fd = -1;
    std::atomic<uint32_t> cursor{0};  // next ring seq this socket has not finished with
    bool in_msg = false;
    ChunkHeader header{};
    uint64_t offset = 0, length = 0;
    uint64_t header_done = 0, payload_done = 0;
    uint64_t last_progress_ns = 0;
    bool inside_message() const { return in_msg; }
  };

  enum class Progress { kIdle, kProgressed, kBlocked, kFailed };

  void HelperLoop(int t);
  void ProgressInline();  // one non-blocking pass over every socket, on the calling thread
  // Moves data on socket s until it would block or about `budget` bytes have moved (the inline path must
  // not hold NCCL's progress thread for a whole large message; helpers have no bound).
  Progress ProgressSocket(int s, int64_t budget = kUnbounded);
  Status PullCts();

  Entry ring_[kRing];
  Socket socks_[kMaxSockets];
  std::atomic<uint32_t> posted_{0};
  std::atomic<uint32_t> wake_{0};
  uint32_t next_seq_ = 0;  // progress thread only

  // Clear-to-send records from the receiver (progress thread only).
  Cts cts_[kMaxRequests];
  uint32_t cts_used_[kMaxRequests] = {0};
  uint32_t cts_received_ = 0;
  uint32_t cts_head_ = 0;
  char cts_partial_[sizeof(Cts)];
  size_t cts_partial_len_ = 0;
};

}  // namespace ncclscope::net::tcp

#endif  // NCCLSCOPE_NET_TCP_SEND_COMM_H_

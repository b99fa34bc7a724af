// The receiving side of a TCP connection. Irecv (the progress thread) fills one of 32 fixed slots and
// writes a clear-to-send for it on socket 0; helper threads read ChunkHeaders and slices from their
// sockets straight into the posted buffers, validating every header against the slot it names (a
// header for an unknown slot, a message bigger than its buffer, or a connection that ends inside a
// message is an error naming the peer). Completion is counted per buffer with atomics; Test() reads
// them. With no helpers (inline mode, few CPUs) Test reads the sockets on the calling thread. No lock and no
// allocation after construction.
#ifndef NCCLSCOPE_NET_TCP_RECV_COMM_H_
#define NCCLSCOPE_NET_TCP_RECV_COMM_H_

#include <atomic>
#include <cstdint>

#include "net/tcp/comm_base.h"
#include "net/transport.h"

namespace ncclscope::net::tcp {

class TcpRecvComm final : public RecvComm, private CommBase {
 public:
  TcpRecvComm(std::vector<int> fds, PeerInfo peer, const TcpConfig& cfg, const NetContext* ctx,
              const std::string& nic);
  Status Start();

  Status Irecv(int n, void** data, const size_t* sizes, const int* tags, void** mhandles, void** phandles,
               bool optional_completion, Request** request) override;
  Status Iflush(int n, void** data, const int* sizes, void** mhandles, Request** request) override;
  Status RegMr(void* data, size_t size, int type, int dmabuf_fd, uint64_t offset, void** mhandle) override;
  Status DeregMr(void* mhandle) override;
  Status Close() override;

 private:
  struct Slot final : Request {
    TcpRecvComm* comm = nullptr;
    std::atomic<uint32_t> seq{0xFFFFFFFFu};
    std::atomic<bool> active{false};
    int n = 0;
    char* data[kMaxRecvs] = {};
    uint64_t capacity[kMaxRecvs] = {};
    std::atomic<uint64_t> size[kMaxRecvs] = {};
    std::atomic<int> slices_done[kMaxRecvs] = {};
    std::atomic<int> nslices[kMaxRecvs] = {};  // 0 until the buffer's first header arrives
    uint32_t stall_polls = 0;                  // Test() calls, to check for a stall every kStallCheckEvery
    std::atomic<int> buffers_done{0};
    uint64_t posted_ns = 0;
    void* prof_event[kMaxRecvs] = {};
    ncclscope_net_sock_descr_v1_t descr[kMaxRecvs] = {};
    Status Test(int* done, int* sizes) override;
  };

  struct Socket {
    int fd = -1;
    bool eof = false;
    bool in_msg = false;
    ChunkHeader header{};
    uint64_t header_done = 0;
    char* dest = nullptr;
    uint64_t remaining = 0;
    Slot* slot = nullptr;
    int nslices = 0;
    uint64_t last_progress_ns = 0;
    // A header begun counts: the rest of it and its slice are owed.
    bool inside_message() const { return in_msg || header_done > 0; }
  };

  enum class Progress { kIdle, kProgressed, kEof, kFailed };

  void HelperLoop(int t);
  void ProgressInline();  // one non-blocking pass over every socket, on the calling thread
  // Moves data on socket s until it would block or about `budget` bytes have moved (the inline path must
  // not hold NCCL's progress thread for a whole large message; helpers have no bound).
  Progress ProgressSocket(int s, int64_t budget = kUnbounded);
  bool StartMessage(Socket& k);
  bool BegunMessageStalled(const Slot& slot);
  void FinishSlice(Socket& k);
  Status FlushCts();

  Slot slots_[kMaxRequests];
  Socket socks_[kMaxSockets];
  std::atomic<int> eof_sockets_{0};
  std::atomic<uint64_t> last_byte_ns_{0};  // when any socket last read a byte
  uint32_t next_seq_ = 0;  // progress thread only
  char cts_out_[kMaxRequests * sizeof(Cts)];
  size_t cts_out_len_ = 0;  // progress thread only
};

}  // namespace ncclscope::net::tcp

#endif  // NCCLSCOPE_NET_TCP_RECV_COMM_H_

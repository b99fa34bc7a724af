#include "net/tcp/send_comm.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/clock.h"
#include "common/log.h"
#include "socket/socket_io.h"

namespace ncclscope::net::tcp {
namespace {
constexpr uint64_t kMaxIo = 1 << 20;
}  // namespace

TcpSendComm::TcpSendComm(std::vector<int> fds, PeerInfo peer, const TcpConfig& cfg, const NetContext* ctx,
                         const std::string& nic)
    : CommBase(std::move(fds), std::move(peer), cfg, ctx, nic, NetDir::kSend) {
  for (int s = 0; s < nsocks_; ++s) socks_[s].fd = fds_[s];
  for (Entry& e : ring_) e.comm = this;
}

Status TcpSendComm::Start() {
  Status s = StartHelpers("tx", [this](int t) { HelperLoop(t); });
  if (!s.ok()) {  // join the helpers that did start before the comm is destroyed
    StopHelpers([this] {
      wake_.fetch_add(1, std::memory_order_release);
      wake_.notify_all();
    });
  }
  return s;
}

Status TcpSendComm::Close() {
  StopHelpers([this] {
    wake_.fetch_add(1, std::memory_order_release);
    wake_.notify_all();
  });
  for (Entry& e : ring_) {
    if (e.in_use.load(std::memory_order_acquire)) {
      acct_.Abandoned();
      ProfStop(&e.prof_event);
    }
  }
  delete this;
  return Status::Ok();
}

Status TcpSendComm::RegMr(void*, size_t, int type, int, uint64_t, void** mhandle) {
  if (type != 0x1) return InternalError("TCP transport registers host memory only (type " + std::to_string(type) + ")");
  *mhandle = this;  // nothing to pin for sockets; any non-null token works
  return Status::Ok();
}

Status TcpSendComm::DeregMr(void*) { return Status::Ok(); }

Status TcpSendComm::PullCts() {
  while (cts_received_ - cts_head_ < static_cast<uint32_t>(kMaxRequests)) {
    int err = 0;
    const sock::Io io = sock::RecvSome(fds_[0], cts_partial_, sizeof(Cts), &cts_partial_len_, &err);
    if (io == sock::Io::kDone) {
      Cts& c = cts_[cts_received_ % kMaxRequests];
      memcpy(&c, cts_partial_, sizeof(Cts));
      cts_partial_len_ = 0;
      if (c.seq != cts_received_ || c.n < 1 || c.n > kMaxRecvs) {
        return Status(StatusCode::kSystem, "malformed clear-to-send from peer " + peer_ + " (seq " +
                                               std::to_string(c.seq) + ", n " + std::to_string(c.n) + ")");
      }
      cts_used_[cts_received_ % kMaxRequests] = 0;
      ++cts_received_;
      continue;
    }
    if (io == sock::Io::kEof) return RemoteError("peer " + peer_ + " closed the connection (process gone?)");
    if (io == sock::Io::kAgain) return Status::Ok();
    NetErrorKind kind;
    return ErrnoStatus(err, "receiving clear-to-send", peer_, &kind);
  }
  return Status::Ok();
}

Status TcpSendComm::Isend(void* data, size_t size, int tag, void*, void* phandle, Request** request) {
  *request = nullptr;
  if (acct_.failed()) return acct_.error();
  uint32_t seq = next_seq_;
  Entry& e = ring_[seq % kRing];
  if (e.in_use.load(std::memory_order_acquire)) return Status::Ok();  // 32 x maxRecvs in flight
  if (seq >= static_cast<uint32_t>(kRing)) {
    // Every helper must have walked past the entry's previous use before it is rewritten.
    for (int s = 0; s < nsocks_; ++s) {
      if (socks_[s].cursor.load(std::memory_order_acquire) <= seq - kRing) return Status::Ok();
    }
  }
  Status pulled = PullCts();
  if (!pulled.ok()) {
    Fail(pulled, NetErrorKind::kRecv);
    return acct_.error();
  }
  if (cts_head_ == cts_received_) return Status::Ok();  // receiver has not posted a buffer yet
  int slot = static_cast<int>(cts_head_ % kMaxRequests);
  const Cts& c = cts_[slot];
  int index = -1;
  for (int i = 0; i < c.n; ++i) {
    if (c.tags[i] == tag && !(cts_used_[slot] & (1u << i))) {
      index = i;
      break;
    }
  }
  if (index < 0) {
    Status s = InternalError("isend tag " + std::to_string(tag) + " matches no buffer of the oldest receive "
                             "posted by peer " + peer_);
    Fail(s, NetErrorKind::kProtocol);
    return s;
  }
  if (size > c.sizes[index]) {
    Status s = InvalidUsage("isend of " + std::to_string(size) + " bytes does not fit the " +
                            std::to_string(c.sizes[index]) + "-byte buffer posted by peer " + peer_);
    Fail(s, NetErrorKind::kTruncated);
    return s;
  }
  cts_used_[slot] |= 1u << index;
  if (__builtin_popcount(cts_used_[slot]) == c.n) ++cts_head_;

  e.seq = seq;
  e.slot_seq = c.seq;
  e.index = static_cast<uint16_t>(index);
  e.data = static_cast<char*>(data);
  e.size = size;
  e.nslices = NumSlices(size, nsocks_, cfg_.min_slice);
  e.posted_ns = MonotonicNs();
  e.slices_done.store(0, std::memory_order_relaxed);
  e.in_use.store(true, std::memory_order_relaxed);
  ProfStart(phandle, &e.prof_event, &e.descr, 0, size);
  acct_.Posted(e.posted_ns);
  ++next_seq_;
  posted_.store(next_seq_, std::memory_order_release);
  *request = &e;
  if (inline_io()) {
    ProgressInline();  // start writing now: test() may not come for a while
  } else {
    wake_.fetch_add(1, std::memory_order_release);
    wake_.notify_all();
  }
  return Status::Ok();
}

Status TcpSendComm::Entry::Test(int* done, int* sizes) {
  *done = 0;
  if (comm->inline_io() && slices_done.load(std::memory_order_acquire) != nslices) comm->ProgressInline();
  if (slices_done.load(std::memory_order_acquire) == nslices) {
    comm->acct_.Sent(size, posted_ns, MonotonicNs());
    comm->ProfStop(&prof_event);
    if (sizes != nullptr) sizes[0] = static_cast<int>(size);
    in_use.store(false, std::memory_order_release);
    *done = 1;
    return Status::Ok();
  }
  if (comm->acct_.failed()) return comm->acct_.error();
  return Status::Ok();
}

TcpSendComm::Progress TcpSendComm::ProgressSocket(int s, int64_t budget) {
  Socket& k = socks_[s];
  bool progressed = false;
  for (;;) {
    uint32_t cur = k.cursor.load(std::memory_order_relaxed);
    if (cur == posted_.load(std::memory_order_acquire)) return progressed ? Progress::kProgressed : Progress::kIdle;
    Entry& e = ring_[cur % kRing];
    if (!k.in_msg) {
      int slice = static_cast<int>((static_cast<uint32_t>(s) + static_cast<uint32_t>(nsocks_) - cur % nsocks_) %
                                   static_cast<uint32_t>(nsocks_));
      if (slice >= e.nslices) {
        k.cursor.store(cur + 1, std::memory_order_release);
        continue;
      }
      k.header = ChunkHeader{e.slot_seq, e.index, static_cast<uint16_t>(slice), e.size};
      SliceRange(e.size, e.nslices, slice, &k.offset, &k.length);
      k.header_done = k.payload_done = 0;
      k.in_msg = true;
      k.last_progress_ns = MonotonicNs();
    }
    iovec iov[2];
    int niov = 0;
    if (k.header_done < sizeof(ChunkHeader)) {
      iov[niov++] = {reinterpret_cast<char*>(&k.header) + k.header_done, sizeof(ChunkHeader) - k.header_done};
    }
    if (k.payload_done < k.length) {
      // Bounded calls keep each helper's turn short, so the other sockets' helpers interleave on few cores.
      iov[niov++] = {e.data + k.offset + k.payload_done, std::min<uint64_t>(k.length - k.payload_done, kMaxIo)};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = niov;
    if (budget <= 0) return Progress::kProgressed;  // budget spent (inline): the rest on the next call
    ssize_t n = sendmsg(k.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Progress::kBlocked;
      NetErrorKind kind;
      // The status first: function arguments are evaluated in no fixed order, and it sets `kind`.
      const Status failure = ErrnoStatus(errno, "send", peer_, &kind);
      Fail(failure, kind == NetErrorKind::kRecv ? NetErrorKind::kSend : kind);
      return Progress::kFailed;
    }
    progressed = true;
    budget -= n;
    uint64_t sent = static_cast<uint64_t>(n);
    uint64_t h = std::min<uint64_t>(sent, sizeof(ChunkHeader) - k.header_done);
    k.header_done += h;
    k.payload_done += sent - h;
    k.last_progress_ns = MonotonicNs();
    if (k.header_done == sizeof(ChunkHeader) && k.payload_done == k.length) {
      k.in_msg = false;
      e.slices_done.fetch_add(1, std::memory_order_acq_rel);
      k.cursor.store(cur + 1, std::memory_order_release);
    }
  }
}

void TcpSendComm::ProgressInline() {
  bool moved = false;
  for (int s = 0; s < nsocks_; ++s) {
    Progress p = ProgressSocket(s, kInlineBytesPerSocket);
    if (p == Progress::kFailed) return;
    moved |= p == Progress::kProgressed;
  }
  if (!moved) AnyStalled(socks_, 0, 1, "send to");
}

void TcpSendComm::HelperLoop(int t) {
  pollfd pfds[kMaxSockets];
  while (!stop_.load(std::memory_order_acquire)) {
    uint32_t w = wake_.load(std::memory_order_acquire);
    bool progressed = false, failed = false;
    int nblocked = 0;
    for (int s = t; s < nsocks_; s += nthreads_) {
      Progress p = ProgressSocket(s);
      if (p == Progress::kProgressed) progressed = true;
      if (p == Progress::kFailed) failed = true;
      if (p == Progress::kBlocked) pfds[nblocked++] = {socks_[s].fd, POLLOUT, 0};
    }
    if (failed || acct_.failed()) return;  // the comm is dead; Close() joins us
    if (progressed) continue;
    if (nblocked > 0) {
      poll(pfds, nblocked, 100);
      if (AnyStalled(socks_, t, nthreads_, "send to")) return;
      continue;
    }
    wake_.wait(w, std::memory_order_acquire);
  }
}

}  // namespace ncclscope::net::tcp

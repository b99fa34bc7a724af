#include "net/tcp/recv_comm.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"
#include "common/log.h"
#include "socket/socket_io.h"

namespace ncclscope::net::tcp {
namespace {
// A pending receive looks for a begun message that stalled once per this many Test() calls: a clock read,
// never a syscall, and not on every call.
constexpr uint32_t kStallCheckEvery = 64;
}  // namespace

TcpRecvComm::TcpRecvComm(std::vector<int> fds, PeerInfo peer, const TcpConfig& cfg, const NetContext* ctx,
                         const std::string& nic)
    : CommBase(std::move(fds), std::move(peer), cfg, ctx, nic, NetDir::kRecv) {
  for (int s = 0; s < nsocks_; ++s) socks_[s].fd = fds_[s];
  for (Slot& slot : slots_) slot.comm = this;
}

Status TcpRecvComm::Start() {
  Status s = StartHelpers("rx", [this](int t) { HelperLoop(t); });
  if (!s.ok()) StopHelpers([] {});  // join the helpers that did start before the comm is destroyed
  return s;
}

Status TcpRecvComm::Close() {
  StopHelpers([] {});
  for (Slot& slot : slots_) {
    if (slot.active.load(std::memory_order_acquire)) {
      acct_.Abandoned();
      for (int i = 0; i < slot.n; ++i) ProfStop(&slot.prof_event[i]);
    }
  }
  delete this;
  return Status::Ok();
}

Status TcpRecvComm::RegMr(void*, size_t, int type, int, uint64_t, void** mhandle) {
  if (type != 0x1) return InternalError("TCP transport registers host memory only (type " + std::to_string(type) + ")");
  *mhandle = this;
  return Status::Ok();
}

Status TcpRecvComm::DeregMr(void*) { return Status::Ok(); }

Status TcpRecvComm::Iflush(int, void**, const int*, void**, Request** request) {
  *request = nullptr;  // host memory: nothing to flush, already complete
  return Status::Ok();
}

Status TcpRecvComm::FlushCts() {
  size_t off = 0;
  int err = 0;
  if (sock::SendSome(fds_[0], cts_out_, cts_out_len_, &off, &err) == sock::Io::kError) {
    NetErrorKind kind;
    Status s = ErrnoStatus(err, "sending clear-to-send", peer_, &kind);
    Fail(s, kind);
    return s;
  }
  memmove(cts_out_, cts_out_ + off, cts_out_len_ - off);
  cts_out_len_ -= off;
  return Status::Ok();
}

Status TcpRecvComm::Irecv(int n, void** data, const size_t* sizes, const int* tags, void**, void** phandles,
                          bool, Request** request) {
  // The optional-completion hint is honoured by completing normally: helpers write straight into the
  // user buffer, so completing before the last byte lands would let NCCL recycle a slot still in use.
  *request = nullptr;
  if (n < 1 || n > kMaxRecvs) {
    return InternalError("irecv with n=" + std::to_string(n) + " (maxRecvs is " + std::to_string(kMaxRecvs) + ")");
  }
  if (acct_.failed()) return acct_.error();
  if (eof_sockets_.load(std::memory_order_acquire) > 0) {
    Status s = RemoteError("peer " + peer_ + " closed the connection (process gone?)");
    Fail(s, NetErrorKind::kRecv);
    return s;
  }
  uint32_t seq = next_seq_;
  Slot& slot = slots_[seq % kMaxRequests];
  if (slot.active.load(std::memory_order_acquire)) return Status::Ok();
  if (cts_out_len_ + sizeof(Cts) > sizeof(cts_out_)) return Status::Ok();
  slot.n = n;
  Cts cts{};
  cts.seq = seq;
  cts.n = n;
  for (int i = 0; i < n; ++i) {
    slot.data[i] = static_cast<char*>(data[i]);
    slot.capacity[i] = sizes[i];
    slot.size[i].store(0, std::memory_order_relaxed);
    slot.slices_done[i].store(0, std::memory_order_relaxed);
    slot.nslices[i].store(0, std::memory_order_relaxed);
    cts.sizes[i] = sizes[i];
    cts.tags[i] = tags[i];
    ProfStart(phandles != nullptr ? phandles[i] : nullptr, &slot.prof_event[i], &slot.descr[i], 1, sizes[i]);
  }
  slot.buffers_done.store(0, std::memory_order_relaxed);
  slot.posted_ns = MonotonicNs();
  slot.active.store(true, std::memory_order_relaxed);
  slot.seq.store(seq, std::memory_order_release);
  memcpy(cts_out_ + cts_out_len_, &cts, sizeof(cts));
  cts_out_len_ += sizeof(cts);
  ++next_seq_;
  acct_.Posted(slot.posted_ns);
  *request = &slot;
  return FlushCts();
}

Status TcpRecvComm::Slot::Test(int* done, int* sizes) {
  *done = 0;
  if (comm->cts_out_len_ > 0) comm->FlushCts();
  if (comm->inline_io() && buffers_done.load(std::memory_order_acquire) != n) comm->ProgressInline();
  if (buffers_done.load(std::memory_order_acquire) == n) {
    uint64_t bytes = 0;
    for (int i = 0; i < n; ++i) {
      uint64_t s = size[i].load(std::memory_order_relaxed);
      bytes += s;
      if (sizes != nullptr) sizes[i] = static_cast<int>(s);
      comm->ProfStop(&prof_event[i]);
    }
    comm->acct_.Received(bytes, static_cast<uint64_t>(n), posted_ns, MonotonicNs());
    active.store(false, std::memory_order_release);
    *done = 1;
    return Status::Ok();
  }
  if (comm->acct_.failed()) return comm->acct_.error();
  if (++stall_polls % kStallCheckEvery == 0 && comm->BegunMessageStalled(*this)) return comm->acct_.error();
  if (comm->eof_sockets_.load(std::memory_order_acquire) == comm->nsocks_) {
    Status s = RemoteError("peer " + comm->peer_ + " closed the connection with a receive pending (process gone?)");
    comm->Fail(s, NetErrorKind::kRecv);
    return s;
  }
  return Status::Ok();
}

// Whether a buffer of `slot` has some of its slices and not all, with no byte on any socket for the timeout
// (then the comm is failed). The peer owes the rest of a message it has begun, whatever the other ranks do,
// but the sockets that owe it may be between slices, where AnyStalled does not look.
bool TcpRecvComm::BegunMessageStalled(const Slot& slot) {
  bool begun = false;
  for (int i = 0; i < slot.n && !begun; ++i) {
    const int done = slot.slices_done[i].load(std::memory_order_acquire);
    begun = done > 0 && done < slot.nslices[i].load(std::memory_order_relaxed);
  }
  return begun && StalledTooLong(last_byte_ns_.load(std::memory_order_relaxed), MonotonicNs(), "receive from");
}

// Validates a complete header and aims the socket at its destination; false = protocol error reported.
bool TcpRecvComm::StartMessage(Socket& k) {
  const ChunkHeader& h = k.header;
  Slot& slot = slots_[h.slot_seq % kMaxRequests];
  std::string why;
  if (slot.seq.load(std::memory_order_acquire) != h.slot_seq || !slot.active.load(std::memory_order_acquire)) {
    why = "data for receive #" + std::to_string(h.slot_seq) + " that is not posted";
  } else if (h.index >= slot.n) {
    why = "buffer index " + std::to_string(h.index) + " beyond the " + std::to_string(slot.n) + " posted";
  } else if (h.size > slot.capacity[h.index]) {
    Fail(Status(StatusCode::kSystem, "peer " + peer_ + " sent " + std::to_string(h.size) + " bytes into a " +
                                         std::to_string(slot.capacity[h.index]) + "-byte buffer (truncated)"),
         NetErrorKind::kTruncated);
    return false;
  }
  int nslices = why.empty() ? NumSlices(h.size, nsocks_, cfg_.min_slice) : 0;
  if (why.empty() && h.slice >= nslices) why = "slice " + std::to_string(h.slice) + " of " + std::to_string(nslices);
  if (!why.empty()) {
    Fail(Status(StatusCode::kSystem, "malformed data header from peer " + peer_ + ": " + why),
         NetErrorKind::kProtocol);
    return false;
  }
  uint64_t offset, length;
  SliceRange(h.size, nslices, h.slice, &offset, &length);
  k.slot = &slot;
  k.nslices = nslices;
  slot.nslices[h.index].store(nslices, std::memory_order_relaxed);  // before its slice counts (acq_rel)
  k.dest = slot.data[h.index] + offset;
  k.remaining = length;
  k.in_msg = true;
  return true;
}

void TcpRecvComm::FinishSlice(Socket& k) {
  Slot& slot = *k.slot;
  int idx = k.header.index;
  k.in_msg = false;
  k.header_done = 0;
  if (slot.slices_done[idx].fetch_add(1, std::memory_order_acq_rel) + 1 == k.nslices) {
    slot.size[idx].store(k.header.size, std::memory_order_relaxed);
    slot.buffers_done.fetch_add(1, std::memory_order_release);
  }
}

TcpRecvComm::Progress TcpRecvComm::ProgressSocket(int s, int64_t budget) {
  Socket& k = socks_[s];
  bool progressed = false;
  for (;;) {
    if (k.in_msg && k.remaining == 0) {
      FinishSlice(k);
      progressed = true;
      continue;
    }
    char* dst;
    size_t want;
    if (!k.in_msg) {
      dst = reinterpret_cast<char*>(&k.header) + k.header_done;
      want = sizeof(ChunkHeader) - k.header_done;
    } else {
      dst = k.dest;
      want = std::min<uint64_t>(k.remaining, 1 << 20);
    }
    if (budget <= 0) return Progress::kProgressed;  // budget spent (inline): the rest on the next call
    ssize_t n = recv(k.fd, dst, want, MSG_DONTWAIT);
    if (n > 0) {
      progressed = true;
      budget -= n;
      k.last_progress_ns = MonotonicNs();
      last_byte_ns_.store(k.last_progress_ns, std::memory_order_relaxed);
      if (!k.in_msg) {
        k.header_done += static_cast<uint64_t>(n);
        if (k.header_done == sizeof(ChunkHeader) && !StartMessage(k)) return Progress::kFailed;
      } else {
        k.dest += n;
        k.remaining -= static_cast<uint64_t>(n);
      }
      continue;
    }
    if (n == 0) {
      if (stop_.load(std::memory_order_acquire)) return Progress::kEof;
      if (k.in_msg || k.header_done > 0) {
        Fail(RemoteError("peer " + peer_ + " closed the connection in the middle of a message (truncated; "
                         "process gone?)"),
             NetErrorKind::kTruncated);
        return Progress::kFailed;
      }
      k.eof = true;
      eof_sockets_.fetch_add(1, std::memory_order_acq_rel);
      return Progress::kEof;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return progressed ? Progress::kProgressed : Progress::kIdle;
    NetErrorKind kind;
    // The status first: function arguments are evaluated in no fixed order, and it sets `kind`.
    const Status failure = ErrnoStatus(errno, "recv", peer_, &kind);
    Fail(failure, kind);
    return Progress::kFailed;
  }
}

void TcpRecvComm::ProgressInline() {
  bool moved = false;
  for (int s = 0; s < nsocks_; ++s) {
    if (socks_[s].eof) continue;
    Progress p = ProgressSocket(s, kInlineBytesPerSocket);
    if (p == Progress::kFailed) return;
    moved |= p == Progress::kProgressed;
  }
  if (!moved) AnyStalled(socks_, 0, 1, "receive from");
}

void TcpRecvComm::HelperLoop(int t) {
  pollfd pfds[kMaxSockets];
  while (!stop_.load(std::memory_order_acquire)) {
    int npoll = 0;
    bool progressed = false;
    for (int s = t; s < nsocks_; s += nthreads_) {
      if (socks_[s].eof) continue;
      Progress p = ProgressSocket(s);
      if (p == Progress::kFailed) return;
      if (p == Progress::kProgressed) progressed = true;
      if (!socks_[s].eof) pfds[npoll++] = {socks_[s].fd, POLLIN, 0};
    }
    if (progressed) continue;
    if (npoll == 0) {
      // Every socket of ours hit end-of-file: nothing can arrive any more. Wait for Close().
      while (!stop_.load(std::memory_order_acquire)) poll(nullptr, 0, 50);
      return;
    }
    poll(pfds, npoll, 100);
    if (AnyStalled(socks_, t, nthreads_, "receive from")) return;
  }
}

}  // namespace ncclscope::net::tcp

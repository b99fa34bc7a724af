// The GPU flush machinery of the verbs receive comm, on soft-RoCE in the rdma guest tier (no GPU there):
// NCCLSCOPE_IB_FORCE_FLUSH=1 makes iflush treat host receives like GPU ones, so the loopback QP, its
// 1-byte RDMA READ and the flush request's test() run for real on rxe0. Checks that
//  - after a transfer, iflush returns a request that completes (more flushes than request slots);
//  - without the knob, a host receive needs no flush (null request, no loopback QP);
//  - a READ the NIC rejects (an address outside the buffer's registration) fails test() with an error
//    naming the flush, the loopback QP and the verbs status.
// One process drives both ends through the transport (corelib). SKIP (77) on a host without a verbs
// device.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "common/clock.h"
#include "common/params.h"
#include "ncclscope/abi/net.h"
#include "net/verbs/devices.h"
#include "net/verbs/ibv_api.h"
#include "net/verbs/verbs_transport.h"
#include "temp_dir.h"

namespace ncclscope::net::verbs {
namespace {

constexpr uint64_t kDeadlineNs = 10'000'000'000;  // per wait; the guest is slow (TCG) but not this slow

struct Conn {
  VerbsTransport t;
  ListenComm* lc = nullptr;
  SendComm* sc = nullptr;
  RecvComm* rc = nullptr;
  ~Conn() {
    if (sc != nullptr) sc->Close();
    if (rc != nullptr) rc->Close();
    if (lc != nullptr) lc->Close();
  }
};

// Listen, connect and accept on device 0 (rxe0 via NCCL_IB_HCA), interleaved on this thread.
void Connect(Conn* c) {
  ASSERT_TRUE(c->t.Open().ok());
  char handle[kHandleBytes] = {};
  Status s = c->t.Listen(nullptr, 0, handle, &c->lc);
  ASSERT_TRUE(s.ok()) << s.message();
  const uint64_t end = MonotonicNs() + kDeadlineNs;
  while (c->sc == nullptr || c->rc == nullptr) {
    ASSERT_LT(MonotonicNs(), end) << "connect/accept did not finish";
    if (c->sc == nullptr) {
      ASSERT_TRUE(c->t.Connect(nullptr, 0, handle, &c->sc, nullptr).ok());
    }
    if (c->rc == nullptr) {
      ASSERT_TRUE(c->lc->Accept(&c->rc, nullptr).ok());
    }
  }
}

// Waits for `r`; returns the first error, or fails the test at the deadline.
Status Wait(Request* r) {
  const uint64_t end = MonotonicNs() + kDeadlineNs;
  for (;;) {
    int done = 0;
    Status s = r->Test(&done, nullptr);
    if (!s.ok() || done) return s;
    if (MonotonicNs() > end) return InternalError("request did not complete in 10 s");
  }
}

// One message of `n` bytes from `sbuf` into `rbuf` (both registered).
void Transfer(Conn* c, char* sbuf, void* smh, char* rbuf, void* rmh, size_t n) {
  void* data = rbuf;
  size_t size = n;
  int tag = 1;
  Request* rr = nullptr;
  ASSERT_TRUE(c->rc->Irecv(1, &data, &size, &tag, &rmh, nullptr, false, &rr).ok());
  ASSERT_NE(rr, nullptr);
  Request* sr = nullptr;
  const uint64_t end = MonotonicNs() + kDeadlineNs;
  while (sr == nullptr) {
    ASSERT_TRUE(c->sc->Isend(sbuf, n, tag, smh, nullptr, &sr).ok());
    ASSERT_LT(MonotonicNs(), end) << "no clear-to-send";
  }
  Status s = Wait(sr);
  ASSERT_TRUE(s.ok()) << s.message();
  s = Wait(rr);
  ASSERT_TRUE(s.ok()) << s.message();
}

class ForceFlush {
 public:
  explicit ForceFlush(const char* v)
      : env_("NCCLSCOPE_IB_FORCE_FLUSH", v != nullptr ? std::optional<std::string>(v) : std::nullopt) {
    ReloadParams();
  }
  ~ForceFlush() { ReloadParams(); }

 private:
  testing::ScopedEnv env_;
};

TEST(VerbsFlushGuest, FlushAfterATransferCompletes) {
  ForceFlush knob("1");
  Conn c;
  ASSERT_NO_FATAL_FAILURE(Connect(&c));
  constexpr size_t kSize = 64 << 10;
  std::vector<char> sbuf(kSize), rbuf(kSize);
  void *smh = nullptr, *rmh = nullptr;
  ASSERT_TRUE(c.sc->RegMr(sbuf.data(), kSize, NCCLSCOPE_PTR_HOST, -1, 0, &smh).ok());
  ASSERT_TRUE(c.rc->RegMr(rbuf.data(), kSize, NCCLSCOPE_PTR_HOST, -1, 0, &rmh).ok());
  // More rounds than the comm has flush slots (32), so the slots are reused.
  for (int i = 0; i < 40; ++i) {
    memset(sbuf.data(), 'a' + i % 26, kSize);
    ASSERT_NO_FATAL_FAILURE(Transfer(&c, sbuf.data(), smh, rbuf.data(), rmh, kSize));
    void* data = rbuf.data();
    int size = static_cast<int>(kSize);
    Request* fr = nullptr;
    Status s = c.rc->Iflush(1, &data, &size, &rmh, &fr);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_NE(fr, nullptr) << "round " << i << ": no flush request with NCCLSCOPE_IB_FORCE_FLUSH=1";
    s = Wait(fr);
    ASSERT_TRUE(s.ok()) << "round " << i << ": " << s.message();
    ASSERT_EQ(rbuf[kSize - 1], 'a' + i % 26);
  }
  EXPECT_TRUE(c.sc->DeregMr(smh).ok());
  EXPECT_TRUE(c.rc->DeregMr(rmh).ok());
}

TEST(VerbsFlushGuest, HostReceiveNeedsNoFlushWithoutTheKnob) {
  ForceFlush knob(nullptr);
  Conn c;
  ASSERT_NO_FATAL_FAILURE(Connect(&c));
  std::vector<char> sbuf(4096, 'x'), rbuf(4096);
  void *smh = nullptr, *rmh = nullptr;
  ASSERT_TRUE(c.sc->RegMr(sbuf.data(), sbuf.size(), NCCLSCOPE_PTR_HOST, -1, 0, &smh).ok());
  ASSERT_TRUE(c.rc->RegMr(rbuf.data(), rbuf.size(), NCCLSCOPE_PTR_HOST, -1, 0, &rmh).ok());
  ASSERT_NO_FATAL_FAILURE(Transfer(&c, sbuf.data(), smh, rbuf.data(), rmh, sbuf.size()));
  void* data = rbuf.data();
  int size = 4096;
  Request* fr = reinterpret_cast<Request*>(1);
  ASSERT_TRUE(c.rc->Iflush(1, &data, &size, &rmh, &fr).ok());
  EXPECT_EQ(fr, nullptr);
  EXPECT_TRUE(c.sc->DeregMr(smh).ok());
  EXPECT_TRUE(c.rc->DeregMr(rmh).ok());
}

TEST(VerbsFlushGuest, RejectedFlushReadFailsNamingTheFlushQpAndStatus) {
  ForceFlush knob("1");
  Conn c;
  ASSERT_NO_FATAL_FAILURE(Connect(&c));
  std::vector<char> rbuf(4096);
  void* rmh = nullptr;
  ASSERT_TRUE(c.rc->RegMr(rbuf.data(), rbuf.size(), NCCLSCOPE_PTR_HOST, -1, 0, &rmh).ok());
  // The buffer's rkey with an address 64 MiB past its registration: the responder must refuse the READ.
  void* data = rbuf.data() + (64 << 20);
  int size = 4096;
  Request* fr = nullptr;
  ASSERT_TRUE(c.rc->Iflush(1, &data, &size, &rmh, &fr).ok());
  ASSERT_NE(fr, nullptr);
  Status s = Wait(fr);
  std::printf("flush error: %s\n", s.message().c_str());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("GPU flush (loopback RDMA read) completion failed on QP"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("remote access error"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("device rxe0:1"), std::string::npos) << s.message();
  EXPECT_TRUE(c.rc->DeregMr(rmh).ok());
}

// rxe has neither GPU path (no DMA-BUF in the driver, no nvidia-peermem in the guest): ptrSupport stays
// HOST, and CUDA registrations on a real comm are refused naming the device and the cause.
TEST(VerbsFlushGuest, CudaMemoryOnRxeIsRefusedNamingTheCause) {
  ForceFlush knob(nullptr);
  Conn c;
  ASSERT_NO_FATAL_FAILURE(Connect(&c));
  ASSERT_EQ(c.t.properties(0).ptr_support, NCCLSCOPE_PTR_HOST);
  std::vector<char> buf(4096);
  void* mh = nullptr;
  Status s = c.rc->RegMr(buf.data(), buf.size(), NCCLSCOPE_PTR_CUDA, -1, 0, &mh);
  std::printf("CUDA RegMr: %s\n", s.message().c_str());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidUsage);
  EXPECT_NE(s.message().find("rxe0:1: no GPUDirect path"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("nvidia-peermem not loaded"), std::string::npos) << s.message();
  s = c.sc->RegMr(buf.data(), buf.size(), NCCLSCOPE_PTR_CUDA, 3, 0, &mh);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no DMA-BUF support"), std::string::npos) << s.message();
  EXPECT_EQ(mh, nullptr);
}

}  // namespace
}  // namespace ncclscope::net::verbs

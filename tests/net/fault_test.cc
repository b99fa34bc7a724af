// Fault tests across real processes driving the built library: a peer killed mid-transfer (either
// side), a peer stopped with SIGSTOP inside a message (error within NCCLSCOPE_NET_TIMEOUT_MS, either side)
// and between messages (left alone: it looks like a late rank), malformed or stale
// handles, and running out of file descriptors (1,000 connections under `ulimit -n 1024`). Each must
// end in a clean error naming the peer within a bounded time: never a hang, never a crash.
#include <dirent.h>
#include <gtest/gtest.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <vector>

#include "harness.h"
#include "net/net_types.h"
#include "socket/interfaces.h"
#include "net/tcp/wire.h"

namespace ncclscope::testing {
namespace {

constexpr size_t kBig = 256u << 20;

// An ABI version and the data-path mode: helper threads, or inline on the thread calling test() (the
// default below 4 CPUs); both are tested whatever this machine's CPU count.
struct FaultParam {
  int version;
  bool helpers;
};

class NetFault : public ::testing::TestWithParam<FaultParam> {
 protected:
  std::vector<std::pair<std::string, std::string>> Env() const {
    auto env = BaseEnv();
    env.push_back({"NCCLSCOPE_NET_NTHREADS", GetParam().helpers ? "2" : "-1"});
    return env;
  }
};

std::string Name(const ::testing::TestParamInfo<FaultParam>& i) {
  return "v" + std::to_string(i.param.version) + (i.param.helpers ? "_helpers" : "_inline");
}

void* Listen(PluginNet& net, int fd) {
  char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
  void* lc = nullptr;
  CHILD_CHECK(net.Listen(0, handle, &lc) == 0 && lc != nullptr);
  CHILD_CHECK(SendBytes(fd, handle, sizeof(handle)));
  return lc;
}

enum class StoppingSide { kReceiver, kSender };

// Runs a pair in `env` plus NCCLSCOPE_NET_TIMEOUT_MS=`timeout_ms`, where `stopping` ends in SIGSTOP: the other
// side's exit status, once it is reaped; the stopped one is then killed.
int RunWithOneSideStopped(const std::function<int(int)>& receiver, const std::function<int(int)>& sender,
                          StoppingSide stopping, int timeout_ms, std::vector<std::pair<std::string, std::string>> env) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return -1;
  env.push_back({"NCCLSCOPE_NET_TIMEOUT_MS", std::to_string(timeout_ms)});
  pid_t rp = Spawn([&] { close(sv[1]); return receiver(sv[0]); }, env);
  pid_t sp = Spawn([&] { close(sv[0]); return sender(sv[1]); }, env);
  close(sv[0]);
  close(sv[1]);
  const bool receiver_stops = stopping == StoppingSide::kReceiver;
  const int status = Reap(receiver_stops ? sp : rp, 60);
  const pid_t stopped = receiver_stops ? rp : sp;
  kill(stopped, SIGKILL);
  EXPECT_EQ(Reap(stopped, 10), 128 + SIGKILL);
  return status;
}

// The sender dies (SIGKILL) in the middle of a large message: the receiver's test fails, names the peer.
TEST_P(NetFault, SenderKilledMidMessage) {
  int version = GetParam().version;
  auto receiver = [=](int fd) {
    auto net = OpenAndInit(version, TableSource::kDlopen);
    void* lc = Listen(*net, fd);
    void* rc = nullptr;
    CHILD_CHECK(AcceptLoop(*net, lc, &rc) == 0);
    std::vector<char> buf(kBig);
    void* data = buf.data();
    size_t cap = kBig;
    int tag = 0;
    void* req = nullptr;
    CHILD_CHECK(net->Irecv(rc, 1, &data, &cap, &tag, nullptr, nullptr, &req) == 0 && req);
    double t0 = NowS();
    int r = WaitDone(*net, req, nullptr, 30);
    CHILD_CHECK(r != -1 && r != 0);
    CHILD_CHECK(r == NCCLSCOPE_REMOTE_ERROR || r == NCCLSCOPE_SYSTEM_ERROR);
    CHILD_CHECK(NowS() - t0 < 15);
    CHILD_CHECK(LastWarning().find("peer 127.0.0.1:") != std::string::npos);
    CHILD_CHECK(net->CloseRecv(rc) == 0 && net->CloseListen(lc) == 0);
    return 0;
  };
  auto sender = [=](int fd) {
    auto net = OpenAndInit(version, TableSource::kDlopen);
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    CHILD_CHECK(RecvBytes(fd, handle, sizeof(handle)));
    void* sc = nullptr;
    CHILD_CHECK(ConnectLoop(*net, handle, &sc) == 0);
    std::vector<char> buf(kBig, 7);
    void* req = nullptr;
    while (req == nullptr) CHILD_CHECK(net->Isend(sc, buf.data(), kBig, 0, nullptr, nullptr, &req) == 0);
    // A few polls only: inline (no helpers) each test() moves data until the socket is full, and 256 MiB
    // must still be in flight when the sender dies.
    for (int i = 0; i < 5; ++i) {
      int done = 0;
      net->Test(req, &done, nullptr);
      CHILD_CHECK(done == 0);
    }
    kill(getpid(), SIGKILL);
    return 0;
  };
  PairResult r = RunPair(receiver, sender, Env());
  EXPECT_EQ(r.recv_status, 0);
  EXPECT_EQ(r.send_status, 128 + SIGKILL);
}

// The receiver dies with a receive posted: the sender's isend/test fails and names the peer.
TEST_P(NetFault, ReceiverKilled) {
  int version = GetParam().version;
  auto receiver = [=](int fd) {
    auto net = OpenAndInit(version, TableSource::kDlopen);
    void* lc = Listen(*net, fd);
    void* rc = nullptr;
    CHILD_CHECK(AcceptLoop(*net, lc, &rc) == 0);
    std::vector<char> buf(1 << 20);
    void* data = buf.data();
    size_t cap = buf.size();
    int tag = 0;
    void* req = nullptr;
    CHILD_CHECK(net->Irecv(rc, 1, &data, &cap, &tag, nullptr, nullptr, &req) == 0 && req);
    CHILD_CHECK(WaitDone(*net, req, nullptr) == 0);
    kill(getpid(), SIGKILL);
    return 0;
  };
  auto sender = [=](int fd) {
    auto net = OpenAndInit(version, TableSource::kDlopen);
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    CHILD_CHECK(RecvBytes(fd, handle, sizeof(handle)));
    void* sc = nullptr;
    CHILD_CHECK(ConnectLoop(*net, handle, &sc) == 0);
    std::vector<char> buf(1 << 20, 3);
    void* req = nullptr;
    while (req == nullptr) CHILD_CHECK(net->Isend(sc, buf.data(), buf.size(), 0, nullptr, nullptr, &req) == 0);
    CHILD_CHECK(WaitDone(*net, req, nullptr) == 0);
    // Now the receiver is gone: keep sending until the failure surfaces (bounded).
    double t0 = NowS();
    int r = 0;
    while (r == 0 && NowS() - t0 < 15) {
      req = nullptr;
      r = net->Isend(sc, buf.data(), buf.size(), 0, nullptr, nullptr, &req);
      if (r == 0 && req != nullptr) r = WaitDone(*net, req, nullptr, 15);
    }
    CHILD_CHECK(r == NCCLSCOPE_REMOTE_ERROR || r == NCCLSCOPE_SYSTEM_ERROR);
    CHILD_CHECK(LastWarning().find("peer 127.0.0.1:") != std::string::npos);
    CHILD_CHECK(net->CloseSend(sc) == 0);
    return 0;
  };
  PairResult r = RunPair(receiver, sender, Env());
  EXPECT_EQ(r.recv_status, 128 + SIGKILL);
  EXPECT_EQ(r.send_status, 0);
}

// A receiver stopped with SIGSTOP (its kernel still ACKs, then advertises a zero window): the sender's
// test fails within the configured timeout, while the idle connection before that was left alone.
TEST_P(NetFault, ReceiverStoppedTimesOut) {
  int version = GetParam().version;
  constexpr int kTimeoutMs = 1500;
  auto receiver = [=](int fd) {
    auto net = OpenAndInit(version, TableSource::kDlopen);
    void* lc = Listen(*net, fd);
    void* rc = nullptr;
    CHILD_CHECK(AcceptLoop(*net, lc, &rc) == 0);
    std::vector<char> buf(kBig);
    void* data = buf.data();
    size_t cap = kBig;
    int tag = 0;
    void* req = nullptr;
    CHILD_CHECK(net->Irecv(rc, 1, &data, &cap, &tag, nullptr, nullptr, &req) == 0 && req);
    char go = 1;
    CHILD_CHECK(SendBytes(fd, &go, 1));
    raise(SIGSTOP);  // the whole process, helper threads included
    return 0;
  };
  auto sender = [=](int fd) {
    auto net = OpenAndInit(version, TableSource::kDlopen);
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    CHILD_CHECK(RecvBytes(fd, handle, sizeof(handle)));
    void* sc = nullptr;
    CHILD_CHECK(ConnectLoop(*net, handle, &sc) == 0);
    char go;
    CHILD_CHECK(RecvBytes(fd, &go, 1));
    usleep(2 * kTimeoutMs * 1000);  // idle longer than the timeout: must not count as a failure
    std::vector<char> buf(kBig, 5);
    void* req = nullptr;
    while (req == nullptr) CHILD_CHECK(net->Isend(sc, buf.data(), kBig, 0, nullptr, nullptr, &req) == 0);
    double t0 = NowS();
    int r = WaitDone(*net, req, nullptr, 20);
    double took = NowS() - t0;
    fprintf(stderr, "stopped peer detected after %.2f s (timeout %d ms), result %d\n", took, kTimeoutMs, r);
    CHILD_CHECK(r == NCCLSCOPE_REMOTE_ERROR);
    CHILD_CHECK(took < kTimeoutMs / 1000.0 + 3.0);
    CHILD_CHECK(LastWarning().find("send to peer 127.0.0.1:") != std::string::npos);
    CHILD_CHECK(LastWarning().find("no progress for 1500 ms") != std::string::npos);
    CHILD_CHECK(net->CloseSend(sc) == 0);
    return 0;
  };
  EXPECT_EQ(RunWithOneSideStopped(receiver, sender, StoppingSide::kReceiver, kTimeoutMs, Env()), 0);
}

// A receiver that posts one receive of `size` bytes, waits until the sender says it is stopping, and expects the
// receive to fail within about twice `timeout_ms`, naming the peer and the time without progress.
int ExpectStalledReceive(int version, int fd, size_t size, int timeout_ms, const char* what) {
  auto net = OpenAndInit(version, TableSource::kDlopen);
  void* lc = Listen(*net, fd);
  void* rc = nullptr;
  CHILD_CHECK(AcceptLoop(*net, lc, &rc) == 0);
  std::vector<char> buf(size);
  void* data = buf.data();
  size_t cap = size;
  int tag = 0;
  void* req = nullptr;
  CHILD_CHECK(net->Irecv(rc, 1, &data, &cap, &tag, nullptr, nullptr, &req) == 0 && req);
  char stopping;
  CHILD_CHECK(RecvBytes(fd, &stopping, 1));
  const double t0 = NowS();
  const int r = WaitDone(*net, req, nullptr, 4.0 * timeout_ms / 1000.0);
  const double took = NowS() - t0;
  fprintf(stderr, "sender stopped %s detected after %.2f s (timeout %d ms), result %d\n", what, took, timeout_ms, r);
  CHILD_CHECK(r == NCCLSCOPE_REMOTE_ERROR);
  CHILD_CHECK(took < 2.0 * timeout_ms / 1000.0);
  CHILD_CHECK(LastWarning().find("receive from peer 127.0.0.1:") != std::string::npos);
  CHILD_CHECK(LastWarning().find("no progress for " + std::to_string(timeout_ms) + " ms") != std::string::npos);
  CHILD_CHECK(net->CloseRecv(rc) == 0 && net->CloseListen(lc) == 0);
  return 0;
}

// A sender written by hand on the wire (tcp/wire.h), so that it stops exactly where a test wants: it connects
// both sockets, takes the clear-to-send of a receive of `size` bytes, writes the first `bytes` of slice 0 of 2
// (its ChunkHeader included) on socket 0, says so over `fd` and stops itself.
int HandWrittenSenderStoppingAfter(int fd, size_t size, size_t bytes) {
  char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
  CHILD_CHECK(RecvBytes(fd, handle, sizeof(handle)));
  net::tcp::TcpHandlePayload payload;
  memcpy(&payload, handle + sizeof(net::HandleHeader), sizeof(payload));
  CHILD_CHECK(payload.nsocks == 2);
  int socks[2];
  for (uint16_t i = 0; i < 2; ++i) {
    socks[i] = socket(payload.addr.sa.sa_family, SOCK_STREAM, 0);
    CHILD_CHECK(socks[i] >= 0 && connect(socks[i], &payload.addr.sa, sock::SockAddrLen(payload.addr)) == 0);
    const net::tcp::Hello h{net::tcp::kHelloMagic, net::tcp::kWireVersion, 2, payload.listener_id, i, 0, 77, {}};
    CHILD_CHECK(SendBytes(socks[i], &h, sizeof(h)));
  }
  net::tcp::Cts cts;
  CHILD_CHECK(RecvBytes(socks[0], &cts, sizeof(cts)));
  CHILD_CHECK(cts.n == 1 && cts.sizes[0] == size);
  const net::tcp::ChunkHeader header{cts.seq, 0, 0, size};
  std::vector<char> wire(sizeof(header) + size / 2, 4);  // slice 0 of 2
  memcpy(wire.data(), &header, sizeof(header));
  CHILD_CHECK(bytes <= wire.size() && SendBytes(socks[0], wire.data(), bytes));
  char stopping = 1;
  CHILD_CHECK(SendBytes(fd, &stopping, 1));
  raise(SIGSTOP);
  return 0;
}

// Whether a TCP socket of this process connected to `peer` has had more than `bytes` bytes acknowledged by the
// peer's kernel (TCP_INFO's bytes_acked): those bytes reach the peer's process whatever becomes of ours.
bool AckedBeyond(const sock::SockAddr& peer, uint64_t bytes) {
  const std::string want = sock::SockAddrToString(peer);
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    const int fd = atoi(e->d_name);
    sock::SockAddr addr{};
    socklen_t len = sizeof(addr);
    if (e->d_name[0] == '.' || getpeername(fd, &addr.sa, &len) != 0 || sock::SockAddrToString(addr) != want) continue;
    tcp_info info{};
    len = sizeof(info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 && info.tcpi_bytes_acked > bytes) found = true;
  }
  closedir(d);
  return found;
}

// A sender stopped with SIGSTOP in the middle of a large message (what its kernel had taken still arrives):
// the receiver's test fails within about twice the timeout, naming the peer and the time without progress.
// The sender stops only once the receiver's kernel holds a ChunkHeader and some of its slice, so that the message
// has begun from the receiver's side too: it once stopped after 20 ms of polls, and on a loaded host its helper
// threads had not run by then, so that no byte had left; a receiver that has seen nothing of a message cannot tell
// a stopped sender from a late one and rightly waits (the test's own 30 s deadline then ended it: "detected after
// 32.01 s, result -1"). The time is measured from the stop, as for the hand-written senders.
TEST_P(NetFault, SenderStoppedMidMessageTimesOut) {
  constexpr int kTimeoutMs = 2000;
  const int version = GetParam().version;
  auto receiver = [=](int fd) { return ExpectStalledReceive(version, fd, kBig, kTimeoutMs, "mid-message"); };
  auto sender = [=](int fd) {
    auto net = OpenAndInit(version, TableSource::kDlopen);
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    CHILD_CHECK(RecvBytes(fd, handle, sizeof(handle)));
    net::tcp::TcpHandlePayload payload;
    memcpy(&payload, handle + sizeof(net::HandleHeader), sizeof(payload));
    void* sc = nullptr;
    CHILD_CHECK(ConnectLoop(*net, handle, &sc) == 0);
    std::vector<char> buf(kBig, 9);
    void* req = nullptr;
    while (req == nullptr) CHILD_CHECK(net->Isend(sc, buf.data(), kBig, 0, nullptr, nullptr, &req) == 0);
    // Past a socket's Hello, a ChunkHeader and 4 KiB of its slice (a margin over any count of the SYN): most of the
    // 256 MiB is still to go. Generous deadline: a loaded host may not run the helpers for seconds.
    const uint64_t begun = sizeof(net::tcp::Hello) + sizeof(net::tcp::ChunkHeader) + 4096;
    const double deadline = NowS() + 30;
    while (!AckedBeyond(payload.addr, begun)) {
      int done = 0;
      CHILD_CHECK(net->Test(req, &done, nullptr) == 0 && done == 0);
      CHILD_CHECK(NowS() < deadline);
      sched_yield();
    }
    char stopping = 1;
    CHILD_CHECK(SendBytes(fd, &stopping, 1));
    raise(SIGSTOP);  // the whole process, helper threads included
    return 0;
  };
  EXPECT_EQ(RunWithOneSideStopped(receiver, sender, StoppingSide::kSender, kTimeoutMs, Env()), 0);
}

// A sender stopped after one slice of a two-slice message: the receiver's socket for the other slice is between
// slices, yet the rest of a begun message is owed.
TEST_P(NetFault, SenderStoppedBetweenSlicesTimesOut) {
  constexpr int kTimeoutMs = 1000;
  constexpr size_t kSize = 256 << 10;  // two slices of 128 KiB over the default 2 sockets
  const int version = GetParam().version;
  auto receiver = [=](int fd) { return ExpectStalledReceive(version, fd, kSize, kTimeoutMs, "between slices"); };
  auto sender = [=](int fd) {
    return HandWrittenSenderStoppingAfter(fd, kSize, sizeof(net::tcp::ChunkHeader) + kSize / 2);
  };
  EXPECT_EQ(RunWithOneSideStopped(receiver, sender, StoppingSide::kSender, kTimeoutMs, Env()), 0);
}

// A sender stopped 8 bytes into a 16-byte ChunkHeader: the receiving socket is not yet inside the slice, but
// the header it has begun is owed.
TEST_P(NetFault, SenderStoppedInsideAHeaderTimesOut) {
  constexpr int kTimeoutMs = 1000;
  constexpr size_t kSize = 256 << 10;
  const int version = GetParam().version;
  auto receiver = [=](int fd) { return ExpectStalledReceive(version, fd, kSize, kTimeoutMs, "inside a header"); };
  auto sender = [=](int fd) { return HandWrittenSenderStoppingAfter(fd, kSize, 8); };
  EXPECT_EQ(RunWithOneSideStopped(receiver, sender, StoppingSide::kSender, kTimeoutMs, Env()), 0);
}

// A sender stopped between messages, with a receive posted for it: left alone, on purpose. From outside it
// cannot be told from a rank that enters the collective late (its kernel ACKs and answers keep-alives
// either way; a checkpoint on one rank holds the others in their next collective for minutes), and failing
// it would fail healthy jobs: the profiler's stall check reports such a hang (NCCLSCOPE_STALL_TIMEOUT_S).
TEST_P(NetFault, SenderStoppedBetweenMessagesIsLeftAlone) {
  int version = GetParam().version;
  constexpr int kTimeoutMs = 1000;
  auto receiver = [=](int fd) {
    auto net = OpenAndInit(version, TableSource::kDlopen);
    void* lc = Listen(*net, fd);
    void* rc = nullptr;
    CHILD_CHECK(AcceptLoop(*net, lc, &rc) == 0);
    std::vector<char> buf(1 << 20);
    void* data = buf.data();
    size_t cap = buf.size();
    int tag = 0;
    void* req = nullptr;
    CHILD_CHECK(net->Irecv(rc, 1, &data, &cap, &tag, nullptr, nullptr, &req) == 0 && req);
    char stopped;
    CHILD_CHECK(RecvBytes(fd, &stopped, 1));
    CHILD_CHECK(WaitDone(*net, req, nullptr, 3.0 * kTimeoutMs / 1000.0) == -1);  // still pending, no error
    CHILD_CHECK(net->CloseRecv(rc) == 0 && net->CloseListen(lc) == 0);
    return 0;
  };
  auto sender = [=](int fd) {
    auto net = OpenAndInit(version, TableSource::kDlopen);
    char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
    CHILD_CHECK(RecvBytes(fd, handle, sizeof(handle)));
    void* sc = nullptr;
    CHILD_CHECK(ConnectLoop(*net, handle, &sc) == 0);
    char stopping = 1;
    CHILD_CHECK(SendBytes(fd, &stopping, 1));
    raise(SIGSTOP);
    return 0;
  };
  EXPECT_EQ(RunWithOneSideStopped(receiver, sender, StoppingSide::kSender, kTimeoutMs, Env()), 0);
}

// Handles that are malformed, from another version, or aimed at a listener that is gone.
TEST_P(NetFault, MalformedAndStaleHandles) {
  int version = GetParam().version;
  pid_t pid = Spawn(
      [=] {
        auto net = OpenAndInit(version, TableSource::kDlopen);
        char good[NCCLSCOPE_NET_HANDLE_MAXSIZE];
        void* lc = nullptr;
        CHILD_CHECK(net->Listen(0, good, &lc) == 0 && lc != nullptr);
        void* sc = nullptr;
        char bad[NCCLSCOPE_NET_HANDLE_MAXSIZE];
        memset(bad, 0x5a, sizeof(bad));
        CHILD_CHECK(net->Connect(0, bad, &sc) == NCCLSCOPE_SYSTEM_ERROR && sc == nullptr);
        CHILD_CHECK(LastWarning().find("malformed connect handle") != std::string::npos);
        memcpy(bad, good, sizeof(bad));
        bad[4] = 99;  // version field
        CHILD_CHECK(net->Connect(0, bad, &sc) == NCCLSCOPE_SYSTEM_ERROR && sc == nullptr);
        CHILD_CHECK(LastWarning().find("peer 127.0.0.1:") != std::string::npos);
        CHILD_CHECK(LastWarning().find("version 99") != std::string::npos);
        // The listener goes away before the connect: refused, reported as a remote error.
        char stale[NCCLSCOPE_NET_HANDLE_MAXSIZE];
        memcpy(stale, good, sizeof(stale));
        CHILD_CHECK(net->CloseListen(lc) == 0);
        int r = ConnectLoop(*net, stale, &sc, 10);
        CHILD_CHECK(r == NCCLSCOPE_REMOTE_ERROR);
        CHILD_CHECK(LastWarning().find("peer 127.0.0.1:") != std::string::npos);
        CHILD_CHECK(net->Finalize() == 0);
        return 0;
      },
      BaseEnv());
  EXPECT_EQ(Reap(pid, 30), 0);
}

INSTANTIATE_TEST_SUITE_P(Tcp, NetFault,
                         ::testing::Values(FaultParam{8, false}, FaultParam{12, false}, FaultParam{12, true}), Name);

// 1,000 connections attempted under `ulimit -n 1024`: clean errors once descriptors run out, no crash,
// and everything opened is released by closing (descriptors are usable again afterwards).
TEST(NetFaultLimits, ThousandConnectionsUnderUlimit1024) {
  pid_t pid = Spawn(
      [] {
        auto net = OpenAndInit(12, TableSource::kDlopen);
        {
          // One connection before the limit, so lazily opened descriptors of the process (sanitizer
          // runtimes open a pipe on first use) exist before descriptors run out.
          char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
          void* lc = nullptr;
          void* sc = nullptr;
          void* rc = nullptr;
          CHILD_CHECK(net->Listen(0, handle, &lc) == 0);
          while (sc == nullptr || rc == nullptr) {
            if (sc == nullptr) CHILD_CHECK(net->Connect(0, handle, &sc) == 0);
            if (rc == nullptr) CHILD_CHECK(net->Accept(lc, &rc) == 0);
          }
          CHILD_CHECK(net->CloseSend(sc) == 0 && net->CloseRecv(rc) == 0 && net->CloseListen(lc) == 0);
        }
        rlimit lim{1024, 1024};
        CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0);
        std::vector<void*> lcs, scs, rcs;
        int errors = 0, ok = 0;
        for (int i = 0; i < 1000; ++i) {
          char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
          void* lc = nullptr;
          int r = net->Listen(0, handle, &lc);
          if (r != 0) {
            CHILD_CHECK(r == NCCLSCOPE_SYSTEM_ERROR);
            ++errors;
            continue;
          }
          lcs.push_back(lc);
          void* sc = nullptr;
          void* rc = nullptr;
          double deadline = NowS() + 10;
          int rs = 0, rr = 0;
          while ((sc == nullptr || rc == nullptr) && rs == 0 && rr == 0 && NowS() < deadline) {
            if (sc == nullptr) rs = net->Connect(0, handle, &sc);
            if (rc == nullptr) rr = net->Accept(lc, &rc);
          }
          if (sc != nullptr) scs.push_back(sc);
          if (rc != nullptr) rcs.push_back(rc);
          if (rs != 0 || rr != 0) {
            CHILD_CHECK(rs == 0 || rs == NCCLSCOPE_SYSTEM_ERROR || rs == NCCLSCOPE_REMOTE_ERROR);
            CHILD_CHECK(rr == 0 || rr == NCCLSCOPE_SYSTEM_ERROR);
            ++errors;
          } else {
            CHILD_CHECK(sc != nullptr && rc != nullptr);
            ++ok;
          }
        }
        fprintf(stderr, "1000 attempts: %d connected, %d clean errors; last: %s\n", ok, errors,
                LastWarning().c_str());
        CHILD_CHECK(ok > 50 && errors > 0);
        CHILD_CHECK(LastWarning().find("file descriptors") != std::string::npos);
        for (void* c : scs) CHILD_CHECK(net->CloseSend(c) == 0);
        for (void* c : rcs) CHILD_CHECK(net->CloseRecv(c) == 0);
        for (void* c : lcs) CHILD_CHECK(net->CloseListen(c) == 0);
        // Everything was released: a fresh connection works again.
        char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
        void* lc = nullptr;
        CHILD_CHECK(net->Listen(0, handle, &lc) == 0);
        void* sc = nullptr;
        void* rc = nullptr;
        while (sc == nullptr || rc == nullptr) {
          if (sc == nullptr) CHILD_CHECK(net->Connect(0, handle, &sc) == 0);
          if (rc == nullptr) CHILD_CHECK(net->Accept(lc, &rc) == 0);
        }
        CHILD_CHECK(net->CloseSend(sc) == 0 && net->CloseRecv(rc) == 0 && net->CloseListen(lc) == 0);
        CHILD_CHECK(net->Finalize() == 0);
        return 0;
      },
      BaseEnv());
  EXPECT_EQ(Reap(pid, 120), 0);
}

}  // namespace
}  // namespace ncclscope::testing

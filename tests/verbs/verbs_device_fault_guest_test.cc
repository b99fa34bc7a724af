// Device-level failures of the verbs transport fail loudly, in the soft-RoCE guest (both
// processes on rxe0; the children use the linked core library so they can read their own error counters,
// and scrape their own Prometheus endpoint for ncclscope_nic_errors_total):
//  - rxe0's netdev taken down while messages stream: BOTH sides' next test() fails within seconds naming
//    the peer, device:port and QP (the port-error async event, or a completion error), each side counts
//    the error, and a new connection works once the netdev is back up and the port ACTIVE again;
//  - a remote access error (the receiver deregisters its posted buffer) moves the QPs to the error state:
//    the sender's test() fails naming the QP and completion status, and so does the RECEIVER's (its QP is
//    in error, its posted receives flushed) while the sender is still connected, and both count it;
//  - a peer process SIGKILLed mid-transfer, on either side: the survivor fails within seconds naming the
//    peer, device:port and QP, and counts it;
//  - the per-device event thread never holds up exit(), nor a fork()ed child's.
// On a host without a verbs device it prints SKIP and exits 77.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness.h"
#include "plugin_net.h"
#include "verbs_guest_util.h"

namespace ncclscope::testing {
namespace {

bool Has(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// Brings rxe0's netdev back up when a test ends, however it ends, and waits for the port to be ACTIVE:
// the later guest tests need rxe0.
class LinkRestorer {
 public:
  explicit LinkRestorer(std::string netdev) : netdev_(std::move(netdev)) {}
  ~LinkRestorer() {
    std::string cmd = "ip link set " + netdev_ + " up";
    EXPECT_EQ(system(cmd.c_str()), 0) << cmd;
    double deadline = NowS() + 30;
    while (!Has(Rxe0PortState(), "ACTIVE") && NowS() < deadline) usleep(50000);
    fprintf(stderr, "restore: %s up, rxe0 port 1 state '%s'\n", netdev_.c_str(), Rxe0PortState().c_str());
    EXPECT_TRUE(Has(Rxe0PortState(), "ACTIVE"));
  }

 private:
  std::string netdev_;
};

// Streams `kSize`-byte messages (tags 0, 1, …) until a call fails or `deadline_s` passes; returns the
// failing call's result (0 on deadline) and the time it failed.
constexpr size_t kStreamSize = 8u << 20;
int StreamUntilError(PluginNet& net, void* comm, bool send, double deadline_s, double* failed_at,
                     const std::function<void()>& after_first_post) {
  std::vector<char> buf(kStreamSize, 1);
  void* req = nullptr;
  int tag = 0;
  bool first = true;
  double deadline = NowS() + deadline_s;
  while (NowS() < deadline) {
    int r = 0;
    if (req == nullptr) {
      void* data = buf.data();
      size_t size = kStreamSize;
      r = send ? net.Isend(comm, data, size, tag, nullptr, nullptr, &req)
               : net.Irecv(comm, 1, &data, &size, &tag, nullptr, nullptr, &req);
    } else {
      int done = 0;
      r = net.Test(req, &done, nullptr);
      if (r == 0 && done) {
        req = nullptr;
        ++tag;
      }
    }
    if (r != 0) {
      if (failed_at != nullptr) *failed_at = NowS();
      return r;
    }
    if (req != nullptr && first) {
      first = false;
      after_first_post();
    }
  }
  return 0;
}

TEST(VerbsDeviceFaultGuest, LinkDownMidTransferFailsBothSidesNamingPeerDeviceAndQp) {
  const std::string netdev = Rxe0Netdev();
  ASSERT_FALSE(netdev.empty()) << "no netdev under rxe0";
  ASSERT_TRUE(Has(Rxe0PortState(), "ACTIVE")) << Rxe0PortState();
  {
    LinkRestorer restore(netdev);
    auto receiver = [](int fd) {
      auto net = OpenAndInit(12, TableSource::kLinked);
      void* lc = nullptr;
      void* rc = nullptr;
      CHILD_CHECK(ListenAndAccept(*net, fd, &lc, &rc));
      double failed_at = 0;
      int r = StreamUntilError(*net, rc, false, 30, &failed_at, [] {});
      double down_at = 0;
      CHILD_CHECK(RecvBytes(fd, &down_at, sizeof(down_at)));
      std::string kinds, scraped;
      uint64_t errors = Rxe0Errors(&kinds);
      double exported = ScrapeRxe0Errors(&scraped);
      fprintf(stderr, "receiver: %d, %.2f s after the link went down: %s [errors: %s] [/metrics: %s]\n", r,
              failed_at - down_at, LastWarning().c_str(), kinds.c_str(), scraped.c_str());
      CHILD_CHECK(r != 0);
      CHILD_CHECK(failed_at - down_at < 10);
      CHILD_CHECK(Has(LastWarning(), "peer") && Has(LastWarning(), "device rxe0:1") && Has(LastWarning(), "QP"));
      CHILD_CHECK(errors >= 1 && exported >= 1);
      CHILD_CHECK(SendBytes(fd, &down_at, 1));
      CHILD_CHECK(net->CloseRecv(rc) == 0);
      CHILD_CHECK(net->CloseListen(lc) == 0);
      CHILD_CHECK(net->Finalize() == 0);
      return 0;
    };
    auto sender = [netdev](int fd) {
      auto net = OpenAndInit(12, TableSource::kLinked);
      void* sc = nullptr;
      CHILD_CHECK(ConnectToPeer(*net, fd, &sc));
      double down_at = 0, failed_at = 0;
      int r = StreamUntilError(*net, sc, true, 30, &failed_at, [&] {
        std::string cmd = "ip link set " + netdev + " down";
        down_at = NowS();  // the times below include running `ip`
        CHILD_CHECK(system(cmd.c_str()) == 0);
      });
      std::string kinds, scraped;
      uint64_t errors = Rxe0Errors(&kinds);
      double exported = ScrapeRxe0Errors(&scraped);
      fprintf(stderr, "sender: %d, %.2f s after the link went down: %s [errors: %s] [/metrics: %s]\n", r,
              failed_at - down_at, LastWarning().c_str(), kinds.c_str(), scraped.c_str());
      CHILD_CHECK(SendBytes(fd, &down_at, sizeof(down_at)));
      CHILD_CHECK(r != 0);
      CHILD_CHECK(failed_at - down_at < 10);
      CHILD_CHECK(Has(LastWarning(), "peer") && Has(LastWarning(), "device rxe0:1") && Has(LastWarning(), "QP"));
      CHILD_CHECK(errors >= 1 && exported >= 1);
      char sync = 0;
      CHILD_CHECK(RecvBytes(fd, &sync, 1));  // the receiver saw its own error while we were connected
      CHILD_CHECK(net->CloseSend(sc) == 0);
      CHILD_CHECK(net->Finalize() == 0);
      return 0;
    };
    PairResult r = RunPair(receiver, sender, VerbsGuestEnvWithEndpoint(), 60);
    EXPECT_EQ(r.recv_status, 0);
    EXPECT_EQ(r.send_status, 0);
  }
  // rxe0 works again for new connections (and so for the guest tests after this one).
  auto receiver = [](int fd) {
    auto net = OpenAndInit(12, TableSource::kLinked);
    void* lc = nullptr;
    void* rc = nullptr;
    CHILD_CHECK(ListenAndAccept(*net, fd, &lc, &rc));
    std::vector<char> buf(4096, 0);
    void* data = buf.data();
    size_t cap = buf.size();
    int tag = 9;
    void* req = nullptr;
    CHILD_CHECK(net->Irecv(rc, 1, &data, &cap, &tag, nullptr, nullptr, &req) == 0 && req);
    int sizes[8];
    CHILD_CHECK(WaitDone(*net, req, sizes, 20) == 0 && sizes[0] == 4096 && buf[100] == 3);
    CHILD_CHECK(net->CloseRecv(rc) == 0 && net->CloseListen(lc) == 0 && net->Finalize() == 0);
    return 0;
  };
  auto sender = [](int fd) {
    auto net = OpenAndInit(12, TableSource::kLinked);
    void* sc = nullptr;
    CHILD_CHECK(ConnectToPeer(*net, fd, &sc));
    std::vector<char> buf(4096, 3);
    void* req = nullptr;
    double deadline = NowS() + 20;
    while (req == nullptr) {
      CHILD_CHECK(net->Isend(sc, buf.data(), buf.size(), 9, nullptr, nullptr, &req) == 0);
      CHILD_CHECK(NowS() < deadline);
    }
    CHILD_CHECK(WaitDone(*net, req, nullptr, 20) == 0);
    CHILD_CHECK(net->CloseSend(sc) == 0 && net->Finalize() == 0);
    return 0;
  };
  PairResult after = RunPair(receiver, sender, VerbsGuestEnv(), 60);
  EXPECT_EQ(after.recv_status, 0) << "a new connection on rxe0 failed after the link came back";
  EXPECT_EQ(after.send_status, 0);
}

TEST(VerbsDeviceFaultGuest, RemoteAccessErrorFailsBothSidesNamingQpAndStatus) {
  auto receiver = [](int fd) {
    auto net = OpenAndInit(12, TableSource::kLinked);
    void* lc = nullptr;
    void* rc = nullptr;
    CHILD_CHECK(ListenAndAccept(*net, fd, &lc, &rc));
    std::vector<char> buf(1 << 16, 0);
    void* data = buf.data();
    size_t cap = buf.size();
    int tag = 1;
    void* mh = nullptr;
    CHILD_CHECK(net->RegMr(rc, data, cap, &mh) == 0);
    void* req = nullptr;
    CHILD_CHECK(net->Irecv(rc, 1, &data, &cap, &tag, &mh, nullptr, &req) == 0 && req);
    CHILD_CHECK(net->DeregMr(rc, mh) == 0);
    char sync = 0;
    CHILD_CHECK(SendBytes(fd, &sync, 1));  // the buffer's registration is gone
    CHILD_CHECK(RecvBytes(fd, &sync, 1));  // the sender saw its error (and stays connected)
    double t0 = NowS();
    int r = WaitDone(*net, req, nullptr, 15);
    std::string kinds, scraped;
    uint64_t errors = Rxe0Errors(&kinds);
    double exported = ScrapeRxe0Errors(&scraped);
    fprintf(stderr, "receiver: test() returned %d after %.2f s: %s [errors: %s] [/metrics: %s]\n", r,
            NowS() - t0, LastWarning().c_str(), kinds.c_str(), scraped.c_str());
    CHILD_CHECK(r > 0);  // an error, never a hang
    CHILD_CHECK(Has(LastWarning(), "QP") && Has(LastWarning(), "peer") && Has(LastWarning(), "device rxe0:1"));
    CHILD_CHECK(!Has(LastWarning(), "peer closed"));  // our own QP's failure, not the liveness socket
    CHILD_CHECK(errors >= 1 && exported >= 1);  // counted, and on the endpoint
    CHILD_CHECK(SendBytes(fd, &sync, 1));
    CHILD_CHECK(net->CloseRecv(rc) == 0);
    CHILD_CHECK(net->CloseListen(lc) == 0);
    CHILD_CHECK(net->Finalize() == 0);
    return 0;
  };
  auto sender = [](int fd) {
    auto net = OpenAndInit(12, TableSource::kLinked);
    void* sc = nullptr;
    CHILD_CHECK(ConnectToPeer(*net, fd, &sc));
    char sync = 0;
    CHILD_CHECK(RecvBytes(fd, &sync, 1));
    std::vector<char> buf(1 << 16, 5);
    void* req = nullptr;
    double deadline = NowS() + 20;
    while (req == nullptr) {
      CHILD_CHECK(net->Isend(sc, buf.data(), buf.size(), 1, nullptr, nullptr, &req) == 0);
      CHILD_CHECK(NowS() < deadline);
    }
    int r = WaitDone(*net, req, nullptr, 15);
    std::string kinds, scraped;
    uint64_t errors = Rxe0Errors(&kinds);
    double exported = ScrapeRxe0Errors(&scraped);
    fprintf(stderr, "sender: test() returned %d: %s [errors: %s] [/metrics: %s]\n", r, LastWarning().c_str(),
            kinds.c_str(), scraped.c_str());
    CHILD_CHECK(r > 0);
    CHILD_CHECK(Has(LastWarning(), "completion failed on QP") && Has(LastWarning(), "peer"));
    CHILD_CHECK(errors >= 1 && exported >= 1);  // counted, and on the endpoint
    CHILD_CHECK(SendBytes(fd, &sync, 1));
    CHILD_CHECK(RecvBytes(fd, &sync, 1, 30));  // stay connected until the receiver saw its own failure
    CHILD_CHECK(net->CloseSend(sc) == 0);
    CHILD_CHECK(net->Finalize() == 0);
    return 0;
  };
  PairResult r = RunPair(receiver, sender, VerbsGuestEnvWithEndpoint(), 60);
  EXPECT_EQ(r.recv_status, 0);
  EXPECT_EQ(r.send_status, 0);
}

// A peer process SIGKILLed while messages stream, on either side: the survivor's next call fails within
// seconds (liveness socket or a completion error) naming the peer, device:port and QP, and counts it.
class VerbsPeerKilledGuest : public ::testing::TestWithParam<bool> {};  // true: the sender dies

TEST_P(VerbsPeerKilledGuest, TheSurvivorFailsNamingPeerDeviceAndQpAndCountsIt) {
  const bool sender_dies = GetParam();
  auto survivor = [sender_dies](PluginNet& net, void* comm, int fd) {
    double failed_at = 0;
    int r = StreamUntilError(net, comm, sender_dies ? false : true, 30, &failed_at, [fd] {
      char go = 1;
      CHILD_CHECK(SendBytes(fd, &go, 1));  // our first message is posted: the peer may die
    });
    double killed_at = 0;
    CHILD_CHECK(RecvBytes(fd, &killed_at, sizeof(killed_at)));
    std::string kinds, scraped;
    uint64_t errors = Rxe0Errors(&kinds);
    double exported = ScrapeRxe0Errors(&scraped);
    fprintf(stderr, "%s survived: %d, %.2f s after the kill: %s [errors: %s] [/metrics: %s]\n",
            sender_dies ? "receiver" : "sender", r, failed_at - killed_at, LastWarning().c_str(), kinds.c_str(),
            scraped.c_str());
    CHILD_CHECK(r != 0);
    CHILD_CHECK(failed_at - killed_at < 10);
    CHILD_CHECK(Has(LastWarning(), "peer") && Has(LastWarning(), "device rxe0:1") && Has(LastWarning(), "QP"));
    CHILD_CHECK(errors >= 1 && exported >= 1);
  };
  auto victim = [sender_dies](PluginNet& net, void* comm, int fd) {
    char go = 0;
    StreamUntilError(net, comm, sender_dies, 30, nullptr, [&] {
      CHILD_CHECK(RecvBytes(fd, &go, 1));
      const double killed_at = NowS();
      CHILD_CHECK(SendBytes(fd, &killed_at, sizeof(killed_at)));
      raise(SIGKILL);
    });
  };
  auto receiver = [&](int fd) {
    auto net = OpenAndInit(12, TableSource::kLinked);
    void* lc = nullptr;
    void* rc = nullptr;
    CHILD_CHECK(ListenAndAccept(*net, fd, &lc, &rc));
    if (sender_dies) survivor(*net, rc, fd); else victim(*net, rc, fd);
    CHILD_CHECK(net->CloseRecv(rc) == 0 && net->CloseListen(lc) == 0 && net->Finalize() == 0);
    return 0;
  };
  auto sender = [&](int fd) {
    auto net = OpenAndInit(12, TableSource::kLinked);
    void* sc = nullptr;
    CHILD_CHECK(ConnectToPeer(*net, fd, &sc));
    if (sender_dies) victim(*net, sc, fd); else survivor(*net, sc, fd);
    CHILD_CHECK(net->CloseSend(sc) == 0 && net->Finalize() == 0);
    return 0;
  };
  PairResult r = RunPair(receiver, sender, VerbsGuestEnvWithEndpoint(), 60);
  EXPECT_EQ(sender_dies ? r.recv_status : r.send_status, 0);
  EXPECT_EQ(sender_dies ? r.send_status : r.recv_status, 128 + SIGKILL);
}
INSTANTIATE_TEST_SUITE_P(EitherSide, VerbsPeerKilledGuest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "SenderKilled" : "ReceiverKilled"; });

// The per-device event thread never holds up exit: a process that opened rxe0 and calls exit() (which
// stops and joins the thread from an atexit handler) ends at once, and so does a fork()ed child of it
// calling exit() (it has the handler but not the thread).
TEST(VerbsDeviceFaultGuest, EventThreadDoesNotBlockExitNorAForkedChildsExit) {
  double t0 = NowS();
  pid_t pid = Spawn(
      []() -> int {
        auto net = OpenAndInit(12, TableSource::kLinked);
        char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
        void* lc = nullptr;
        CHILD_CHECK(net->Listen(0, handle, &lc) == 0);  // opens rxe0: its event thread runs
        CHILD_CHECK(CountThreadsNamed("ncclscope-ibev") == 1);
        pid_t child = fork();
        if (child == 0) exit(0);
        CHILD_CHECK(Reap(child, 10) == 0);
        CHILD_CHECK(net->CloseListen(lc) == 0);
        exit(0);  // not the harness's _exit: atexit handlers run
      },
      VerbsGuestEnv());
  EXPECT_EQ(Reap(pid, 20), 0);
  fprintf(stderr, "open, fork, exit: %.2f s\n", NowS() - t0);
  EXPECT_LT(NowS() - t0, 10);
}

}  // namespace
}  // namespace ncclscope::testing

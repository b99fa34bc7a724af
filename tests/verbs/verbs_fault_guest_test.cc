// Failure handling of the verbs data path, through the BUILT plugin on soft-RoCE (guest tier; both
// processes on rxe0 via NCCL_IB_HCA==rxe0, set here):
//  - a message bigger than the receive buffer fails the sender's isend with a truncation error;
//  - a garbage handle, and a well-formed handle whose listener is gone, make connect fail cleanly.
// Peers killed on either side, the link taken down and QPs in the error state are in
// verbs_device_fault_guest_test.cc. On a host without a verbs device it prints SKIP and exits 77.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "harness.h"
#include "plugin_net.h"

namespace ncclscope::testing {
namespace {

std::vector<std::pair<std::string, std::string>> VerbsEnv() {
  return {{"NCCLSCOPE_TRANSPORT", "ib"}, {"NCCL_IB_HCA", "=rxe0"}, {"NCCL_IB_TIMEOUT", "14"},
          {"NCCLSCOPE_PROM_PORT", "-1"}};
}

// A message bigger than the receive buffer: the sender's isend fails with a truncation error naming the
// peer (nothing is written), and the receiver, whose receive then never completes, fails once the sender
// has closed.
TEST(VerbsFaultGuest, TruncationFailsTheSenderNamingThePeer) {
  auto receiver = [](int fd) {
    auto net = OpenAndInit(12, TableSource::kDlopen);
    void* lc = nullptr;
    void* rc = nullptr;
    CHILD_CHECK(ListenAndAccept(*net, fd, &lc, &rc));
    std::vector<char> buf(1000, 0);
    void* data = buf.data();
    size_t cap = buf.size();
    int tag = 3;
    void* req = nullptr;
    CHILD_CHECK(net->Irecv(rc, 1, &data, &cap, &tag, nullptr, nullptr, &req) == 0 && req);
    char sync = 0;
    CHILD_CHECK(RecvBytes(fd, &sync, 1));  // the sender saw its error and closed
    int sizes[8];
    int r = WaitDone(*net, req, sizes, 10);
    CHILD_CHECK(r != -1 && r != 0);
    for (char c : buf) CHILD_CHECK(c == 0);
    CHILD_CHECK(net->CloseRecv(rc) == 0);
    CHILD_CHECK(net->CloseListen(lc) == 0);
    CHILD_CHECK(net->Finalize() == 0);
    return 0;
  };
  auto sender = [](int fd) {
    auto net = OpenAndInit(12, TableSource::kDlopen);
    void* sc = nullptr;
    CHILD_CHECK(ConnectToPeer(*net, fd, &sc));
    std::vector<char> buf(2000, 5);
    void* req = nullptr;
    int r = 0;
    double deadline = NowS() + 20;
    while (r == 0 && req == nullptr) {
      r = net->Isend(sc, buf.data(), buf.size(), 3, nullptr, nullptr, &req);
      CHILD_CHECK(NowS() < deadline);
    }
    fprintf(stderr, "sender: isend returned %d: %s\n", r, LastWarning().c_str());
    CHILD_CHECK(r != 0 && req == nullptr);
    CHILD_CHECK(LastWarning().find("truncation") != std::string::npos);
    CHILD_CHECK(LastWarning().find("peer") != std::string::npos);
    CHILD_CHECK(net->CloseSend(sc) == 0);
    char sync = 1;
    CHILD_CHECK(SendBytes(fd, &sync, 1));
    CHILD_CHECK(net->Finalize() == 0);
    return 0;
  };
  PairResult r = RunPair(receiver, sender, VerbsEnv(), 60);
  EXPECT_EQ(r.recv_status, 0);
  EXPECT_EQ(r.send_status, 0);
}

TEST(VerbsFaultGuest, GarbageAndStaleHandlesFailConnectCleanly) {
  pid_t pid = Spawn(
      [] {
        auto net = OpenAndInit(12, TableSource::kDlopen);
        char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
        for (size_t i = 0; i < sizeof(handle); ++i) handle[i] = static_cast<char>(i * 37 + 11);
        void* sc = nullptr;
        CHILD_CHECK(net->Connect(0, handle, &sc) != 0 && sc == nullptr);
        fprintf(stderr, "garbage handle: %s\n", LastWarning().c_str());
        // A real handle whose listener closed before the connect: refused, named.
        void* lc = nullptr;
        CHILD_CHECK(net->Listen(0, handle, &lc) == 0);
        CHILD_CHECK(net->CloseListen(lc) == 0);
        int r = ConnectLoop(*net, handle, &sc, 10);
        CHILD_CHECK(r != 0 && r != -1 && sc == nullptr);
        fprintf(stderr, "stale handle: %s\n", LastWarning().c_str());
        CHILD_CHECK(net->Finalize() == 0);
        return 0;
      },
      VerbsEnv());
  EXPECT_EQ(Reap(pid, 60), 0);
}

}  // namespace
}  // namespace ncclscope::testing

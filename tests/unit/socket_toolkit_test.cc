// The socket toolkit (src/socket/) on real sockets, at the edges its users rely on: accept out of file
// descriptors, signals during a wait, a peer's reset, and sends the kernel takes only in part.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "socket/sock_addr.h"
#include "socket/socket_io.h"
#include "socket/socket_util.h"

namespace ncclscope {
namespace {

using Clock = std::chrono::steady_clock;

// A non-blocking listener on 127.0.0.1 (an ephemeral port); `rcvbuf` > 0 shrinks what accepted sockets get.
int Listen(sock::SockAddr* addr, int rcvbuf = 0) {
  Result<int> fd = sock::NewSocket(AF_INET, "test listener");
  if (!fd.ok()) return -1;
  if (rcvbuf > 0) setsockopt(*fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  *addr = {};
  addr->in4.sin_family = AF_INET;
  addr->in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr->in4);
  if (bind(*fd, &addr->sa, len) != 0 || listen(*fd, 16) != 0 || getsockname(*fd, &addr->sa, &len) != 0) {
    close(*fd);
    return -1;
  }
  return *fd;
}

// A blocking client connected to `addr`; `sndbuf` > 0 shrinks its send buffer first.
int Dial(const sock::SockAddr& addr, int sndbuf = 0) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sndbuf > 0) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
  if (connect(fd, &addr.sa, sizeof(addr.in4)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Accepts one connection, waiting up to 2 s for it.
int AcceptOne(int listener, sock::SockAddr* peer) {
  if (sock::Wait(listener, POLLIN, 2000) != 1) return -1;
  int fd = -1, err = 0;
  return sock::Accept(listener, &fd, peer, &err) == sock::AcceptResult::kAccepted ? fd : -1;
}

// Child processes report the first failed check by its line, as their exit code.
#define CHILD_CHECK(c)            \
  do {                            \
    if (!(c)) {                   \
      fprintf(stderr, "%s\n", #c); \
      _exit(__LINE__ % 250 + 1);  \
    }                             \
  } while (0)

TEST(SocketToolkit, AddressesFormatAndClassify) {
  sock::SockAddr a{};
  a.in4.sin_family = AF_INET;
  a.in4.sin_port = htons(8080);
  inet_pton(AF_INET, "10.1.2.3", &a.in4.sin_addr);
  EXPECT_EQ(sock::SockAddrToString(a), "10.1.2.3:8080");
  EXPECT_EQ(sock::SockAddrLen(a), sizeof(sockaddr_in));
  EXPECT_TRUE(sock::IsInet(a));
  sock::SockAddr b{};
  b.in6.sin6_family = AF_INET6;
  b.in6.sin6_port = htons(1);
  inet_pton(AF_INET6, "::1", &b.in6.sin6_addr);
  EXPECT_EQ(sock::SockAddrToString(b), "[::1]:1");
  EXPECT_EQ(sock::SockAddrLen(b), sizeof(sockaddr_in6));
  sock::SockAddr junk{};
  junk.sa.sa_family = AF_UNIX;
  EXPECT_FALSE(sock::IsInet(junk));
  EXPECT_EQ(sock::SockAddrToString(junk), "<unknown address family>");
}

// With the descriptor table full, accept says so (not a generic failure), leaves the connection queued,
// and takes it once a descriptor is free. In a child: it lowers RLIMIT_NOFILE.
[[noreturn]] void AcceptOutOfFdsChild() {
  sock::SockAddr addr;
  const int listener = Listen(&addr);
  CHILD_CHECK(listener >= 0);
  const int client = Dial(addr);
  CHILD_CHECK(client >= 0);
  CHILD_CHECK(sock::Wait(listener, POLLIN, 2000) == 1);
  const rlimit low{64, 64};
  CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
  std::vector<int> fillers;
  for (int fd; (fd = dup(0)) >= 0;) fillers.push_back(fd);
  CHILD_CHECK(errno == EMFILE && !fillers.empty());
  int fd = -1, err = 0;
  sock::SockAddr peer{};
  CHILD_CHECK(sock::Accept(listener, &fd, &peer, &err) == sock::AcceptResult::kOutOfFds);
  CHILD_CHECK(err == EMFILE && fd < 0);
  close(fillers.back());
  CHILD_CHECK(sock::Accept(listener, &fd, &peer, &err) == sock::AcceptResult::kAccepted && fd >= 0);
  sock::SockAddr local{};
  socklen_t len = sizeof(local);
  getsockname(client, &local.sa, &len);
  CHILD_CHECK(sock::SockAddrToString(peer) == sock::SockAddrToString(local));
  close(fd);  // the kernel takes a descriptor before it looks at the queue: EMFILE even with none waiting
  CHILD_CHECK(sock::Accept(listener, &fd, &peer, &err) == sock::AcceptResult::kEmpty);
  _exit(0);
}

TEST(SocketToolkit, AcceptOutOfFdsThenRecovers) {
  EXPECT_EXIT(AcceptOutOfFdsChild(), ::testing::ExitedWithCode(0), "");
}

int signals_seen = 0;
void CountSignal(int) { ++signals_seen; }

// A signal without SA_RESTART makes poll() fail with EINTR; the wait must resume for the time left.
TEST(SocketToolkit, WaitRetriesWhenASignalInterrupts) {
  struct sigaction sa {}, old {};
  sa.sa_handler = CountSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the interrupted poll() returns EINTR
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  const pthread_t waiter = pthread_self();
  signals_seen = 0;

  // Data after the signal: the wait sees it.
  std::thread poke([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pthread_kill(waiter, SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(write(pair[1], "x", 1), 1);
  });
  EXPECT_EQ(sock::Wait(pair[0], POLLIN, 5000), 1);
  poke.join();
  EXPECT_EQ(signals_seen, 1);
  char c = 0;
  size_t got = 0;
  int err = 0;
  EXPECT_EQ(sock::RecvSome(pair[0], &c, 1, &got, &err), sock::Io::kDone);
  EXPECT_EQ(c, 'x');

  // No data: the signal neither ends the wait early nor makes it longer than asked.
  std::thread poke_only([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pthread_kill(waiter, SIGUSR1);
  });
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(sock::Wait(pair[0], POLLIN, 400), 0);
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  poke_only.join();
  EXPECT_EQ(signals_seen, 2);
  EXPECT_GE(waited, 390);
  EXPECT_LT(waited, 2000);
  close(pair[0]);
  close(pair[1]);
  sigaction(SIGUSR1, &old, nullptr);
}

// A peer that closes with SO_LINGER 0 sends a reset: the receive helper reports ECONNRESET, and the
// status names the peer and what happened.
TEST(SocketToolkit, PeerResetIsAnErrorNamingThePeer) {
  sock::SockAddr addr, peer;
  const int listener = Listen(&addr);
  ASSERT_GE(listener, 0);
  const int client = Dial(addr);
  ASSERT_GE(client, 0);
  const int server = AcceptOne(listener, &peer);
  ASSERT_GE(server, 0);
  const linger abort_close{1, 0};
  ASSERT_EQ(setsockopt(client, SOL_SOCKET, SO_LINGER, &abort_close, sizeof(abort_close)), 0);
  close(client);
  ASSERT_EQ(sock::Wait(server, POLLIN, 2000), 1);
  char buf[16];
  size_t got = 0;
  int err = 0;
  EXPECT_EQ(sock::RecvSome(server, buf, sizeof(buf), &got, &err), sock::Io::kError);
  EXPECT_EQ(err, ECONNRESET);
  EXPECT_EQ(got, 0u);
  sock::ErrorClass cls;
  const Status s = sock::ErrnoStatus(err, "recv", sock::SockAddrToString(peer), &cls);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(cls, sock::ErrorClass::kPeerGone);
  EXPECT_NE(s.message().find("recv with peer 127.0.0.1:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("reset"), std::string::npos) << s.message();
  close(server);
  close(listener);
}

// Sending to a closed peer is an error to report, not a SIGPIPE that ends the process (in a child, so that
// a signal fails this test alone).
[[noreturn]] void SendToClosedPeerChild() {
  int pair[2];
  CHILD_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
  close(pair[1]);
  char buf[64] = {};
  size_t sent = 0;
  int err = 0;
  CHILD_CHECK(sock::SendSome(pair[0], buf, sizeof(buf), &sent, &err) == sock::Io::kError);
  CHILD_CHECK(err == EPIPE && sent == 0);
  _exit(0);
}

TEST(SocketToolkit, SendToClosedPeerFailsWithoutSigpipe) {
  EXPECT_EXIT(SendToClosedPeerChild(), ::testing::ExitedWithCode(0), "");
}

// An orderly close before all bytes came is EOF, not an error; the bytes that came are counted.
TEST(SocketToolkit, EofMidMessageKeepsProgress) {
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ASSERT_EQ(write(pair[1], "abc", 3), 3);
  close(pair[1]);
  char buf[8];
  size_t got = 0;
  int err = 0;
  EXPECT_EQ(sock::RecvSome(pair[0], buf, sizeof(buf), &got, &err), sock::Io::kEof);
  EXPECT_EQ(got, 3u);
  close(pair[0]);
}

// With small buffers a big send goes in part: the helper reports the progress and kAgain, and the rest
// goes as the peer drains, byte for byte.
TEST(SocketToolkit, PartialSendCompletesAsThePeerDrains) {
  sock::SockAddr addr, peer;
  const int listener = Listen(&addr, 4096);
  ASSERT_GE(listener, 0);
  const int client = Dial(addr, 4096);
  ASSERT_GE(client, 0);
  const int server = AcceptOne(listener, &peer);
  ASSERT_GE(server, 0);
  std::vector<unsigned char> out(4 << 20);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<unsigned char>(i * 7 + i / 251);
  size_t sent = 0;
  int err = 0;
  ASSERT_EQ(sock::SendSome(server, out.data(), out.size(), &sent, &err), sock::Io::kAgain);
  EXPECT_GT(sent, 0u);
  EXPECT_LT(sent, out.size());

  std::vector<unsigned char> in(out.size());
  std::thread drain([&] {
    size_t got = 0;
    while (got < in.size()) {
      const ssize_t n = recv(client, in.data() + got, std::min<size_t>(in.size() - got, 1000), 0);
      if (n <= 0) return;
      got += static_cast<size_t>(n);
    }
  });
  sock::Io io = sock::Io::kAgain;
  while (io == sock::Io::kAgain && sock::Wait(server, POLLOUT, 5000) == 1) {
    io = sock::SendSome(server, out.data(), out.size(), &sent, &err);
  }
  drain.join();
  EXPECT_EQ(io, sock::Io::kDone);
  EXPECT_EQ(sent, out.size());
  EXPECT_TRUE(in == out);
  close(client);
  close(server);
  close(listener);
}

TEST(SocketToolkit, OptionSettersTakeEffect) {
  Result<int> fd = sock::NewSocket(AF_INET, "options");
  ASSERT_TRUE(fd.ok());
  sock::SetNoDelay(*fd);
  sock::SetKeepalive(*fd, 7, 2, 4);
  sock::SetUserTimeout(*fd, 1500);
  auto get = [&](int level, int opt) {
    int v = -1;
    socklen_t len = sizeof(v);
    getsockopt(*fd, level, opt, &v, &len);
    return v;
  };
  EXPECT_EQ(get(IPPROTO_TCP, TCP_NODELAY), 1);
  EXPECT_EQ(get(SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_KEEPIDLE), 7);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_KEEPINTVL), 2);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_KEEPCNT), 4);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_USER_TIMEOUT), 1500);
  int snd = 0, rcv = 0;
  sock::SetBufferSizes(*fd, 64 * 1024, &snd, &rcv);
  EXPECT_GE(snd, 64 * 1024);  // Linux doubles the request (if wmem_max allows)
  EXPECT_GT(rcv, 0);
  close(*fd);
}

// A non-blocking connect to a closed port: in progress or refused, never "connected".
TEST(SocketToolkit, ConnectResultReportsRefusal) {
  sock::SockAddr addr;
  const int listener = Listen(&addr);
  ASSERT_GE(listener, 0);
  close(listener);  // the port is now closed
  Result<int> fd = sock::NewSocket(AF_INET, "refused");
  ASSERT_TRUE(fd.ok());
  if (connect(*fd, &addr.sa, sizeof(addr.in4)) != 0) {
    ASSERT_EQ(errno, EINPROGRESS) << "loopback refused at once; nothing left for ConnectResult to see";
  }
  int r = -1;
  for (int i = 0; i < 200 && (r = sock::ConnectResult(*fd)) < 0; ++i) usleep(5000);
  EXPECT_EQ(r, ECONNREFUSED);
  close(*fd);
}

}  // namespace
}  // namespace ncclscope

// The metrics server under misbehaving clients, over real loopback sockets: slow and idle clients
// neither delay a scrape nor Stop(), each is dropped at its deadline, a full server evicts its oldest
// idle connection rather than refuse scrapes, and requests get the status they deserve. Bounds sit just
// under the clients' 2 s deadline, generous for a loaded 2-core machine; the old one-connection-at-a-time
// server missed each of them by seconds.
#include "exporters/http/http_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "http_get.h"
#include "http_load.h"
#include "skip_note.h"

namespace ncclscope {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::ClientLoad;
using testing::ConnectLoopback;
using testing::HttpGet;
using testing::RawRequest;
using testing::ReadUntilClosed;
using testing::StatusOf;
using testing::WaitClosedByPeer;

// Far more than the socket buffers hold (the clients' receive buffer is 64 KiB). 4 MiB under ThreadSanitizer,
// where building and copying each 16 MiB response (every byte checked, shadow pages faulted in) took seconds
// and, beside another TSan test on 2 cores, held the server past the scrape's 5 s timeout.
#if defined(__SANITIZE_THREAD__)
constexpr size_t kBigBody = 4u << 20;
#else
constexpr size_t kBigBody = 16u << 20;
#endif

// These tests run the server with a 2 s header deadline (kTestHeaderTimeout; the default is 10 s), and this is
// under it. A server that waited on a slow or idle client would answer only at that deadline: an answer (or a
// Stop()) sooner was not blocked by one, even on a loaded host that holds the test past a second. And a client
// connected for less than this cannot have been dropped for its deadline yet.
constexpr std::chrono::milliseconds kTestHeaderTimeout{2000};
constexpr double kUnderHeaderDeadlineS = 1.9;

// The options of a test server: the defaults, with the tests' 2 s header deadline.
HttpServer::Options TestOptions() {
  HttpServer::Options options;
  options.header_timeout = kTestHeaderTimeout;
  return options;
}

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::atomic<int> g_handler_calls{0};
std::atomic<bool> g_slow_entered{false};

std::string Body(const std::string& path, bool* found) {
  *found = path == "/metrics" || path == "/big" || path == "/slow";
  if (path == "/slow") {  // a collection that holds the server thread, as a host's load can
    g_slow_entered = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    return "slow 1\n";
  }
  if (path == "/metrics") return "up 1\n";
  if (path == "/big") return std::string(kBigBody, 'x');
  return "not found\n";
}

HttpServer::Reply Handler(const HttpServer::Request& request) {
  g_handler_calls.fetch_add(1);
  HttpServer::Reply reply;
  reply.body = Body(request.path, &reply.found);
  return reply;
}

// Connects and asks for /big without ever reading: its response stays half-sent in the server. A small
// receive buffer keeps what the kernel takes per client small: 64 of them at loopback's default window
// take hundreds of MB, which under ThreadSanitizer (every sent byte checked, shadow pages faulted in) took
// 20-60 s on a loaded 2-core host and timed the test out.
int NonReadingBigClient(int port) {
  int fd = ConnectLoopback(port, 64 << 10);
  const std::string req = "GET /big HTTP/1.0\r\n\r\n";
  EXPECT_EQ(send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  return fd;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(const HttpServer::Options& options = TestOptions()) {
    ASSERT_TRUE(server_.Start("127.0.0.1", 0, &Handler, options).ok());
    port_ = server_.port();
    ASSERT_GT(port_, 0);
  }

  // Times one GET /metrics and checks it succeeded.
  double TimedScrape() {
    const Clock::time_point t0 = Clock::now();
    int status = 0;
    std::string body = HttpGet(port_, "/metrics", &status);
    const double s = SecondsSince(t0);
    EXPECT_EQ(status, 200);
    EXPECT_EQ(body, "up 1\n");
    return s;
  }

  HttpServer server_;
  int port_ = 0;
};

// 64 clients asking for a 16 MiB body and never reading it share one collection and one copy of the
// response (each used to run the handler and hold its own copy: 1 GB of RSS).
TEST_F(HttpServerTest, AFloodOfRequestsSharesOneResponse) {
  StartServer();
  g_handler_calls = 0;
  const Clock::time_point first_request = Clock::now();
  std::vector<int> fds;
  for (int i = 0; i < 64; ++i) fds.push_back(NonReadingBigClient(port_));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // One collection per 250 ms: the collections so far are at most one more than the 250 ms windows that fit in
  // the time since the first request (usually 1; more only when a loaded host spread the requests out).
  const int calls = g_handler_calls.load();
  const double since_first_ms = SecondsSince(first_request) * 1000;
  EXPECT_LE(calls, 1 + static_cast<int>(since_first_ms / 250)) << "not one collection per connection; requests "
                                                                  << "over " << since_first_ms << " ms";
  for (int fd : fds) close(fd);
  // Still serving. Not timed, and given longer than HttpGet's 5 s: on a host loaded enough to spread the flood
  // out, the server works through several 16 MiB collections first (2.5-6.9 s seen with the test niced
  // beside 6 busy loops on 2 cores).
  const std::string after = RawRequest(port_, "GET /metrics HTTP/1.0\r\n\r\n", 30s);
  EXPECT_EQ(StatusOf(after), 200) << after.substr(0, 200);
  EXPECT_EQ(after.substr(after.size() >= 5 ? after.size() - 5 : 0), "up 1\n") << after.substr(0, 200);
}

TEST_F(HttpServerTest, ScrapeIsAnsweredWhileSlowAndIdleClientsAreConnected) {
  HttpServer::Options options = TestOptions();
  options.max_connections = 128;  // room for all of them: this is about concurrency, not eviction
  StartServer(options);
  const Clock::time_point connected = Clock::now();
  ClientLoad load(port_, /*slow=*/50, /*idle=*/50, 150ms, /*reconnect=*/false);
  const int big = NonReadingBigClient(port_);
  std::this_thread::sleep_for(300ms);
  EXPECT_LT(TimedScrape(), kUnderHeaderDeadlineS);
  const int dropped = load.dropped();
  // Their header deadline is 2 s from accept: only a test held off the CPU that long sees them dropped, rightly.
  if (SecondsSince(connected) < kUnderHeaderDeadlineS) {
    EXPECT_EQ(dropped, 0) << "the clients should all still be connected (deadline 2 s)";
  } else {
    testing::PrintSkip("the clients' count: the host held the test %.1f s, past their 2 s deadline",
                       SecondsSince(connected));
  }
  close(big);
}

TEST_F(HttpServerTest, StopReturnsAtOnceWhileClientsAreConnected) {
  StartServer();
  ClientLoad load(port_, 50, 50, 150ms, false);
  const int big = NonReadingBigClient(port_);
  std::this_thread::sleep_for(300ms);
  const Clock::time_point t0 = Clock::now();
  server_.Stop();
  EXPECT_LT(SecondsSince(t0), kUnderHeaderDeadlineS);
  EXPECT_TRUE(WaitClosedByPeer(big, 1000ms)) << "Stop() must close the client connections";
  close(big);
  int status = 0;
  HttpGet(port_, "/metrics", &status);
  EXPECT_LT(status, 0) << "still answering after Stop()";
}

TEST_F(HttpServerTest, SlowAndIdleClientsAreDroppedAtTheHeaderDeadline) {
  StartServer();  // header deadline 2 s from accept
  const Clock::time_point t0 = Clock::now();
  const int idle = ConnectLoopback(port_);
  const int slow = ConnectLoopback(port_);
  ASSERT_GE(idle, 0);
  ASSERT_GE(slow, 0);
  // One byte per 100 ms of a header that never ends; the old server's per-recv timeout never fired.
  const std::string prefix = "GET /metrics HTTP/1.0\r\nX-Slow: ";
  double slow_dropped_at = -1;
  for (size_t i = 0; SecondsSince(t0) < 6.0; ++i) {
    const char byte = i < prefix.size() ? prefix[i] : 'a';
    if (send(slow, &byte, 1, MSG_NOSIGNAL) != 1 || WaitClosedByPeer(slow, 100ms)) {
      slow_dropped_at = SecondsSince(t0);
      break;
    }
  }
  EXPECT_GT(slow_dropped_at, 1.5) << "dropped before its deadline";
  EXPECT_LT(slow_dropped_at, 3.5) << "not dropped at its deadline (-1: never)";
  EXPECT_TRUE(WaitClosedByPeer(idle, 1000ms)) << "the idle client outlived its deadline";
  close(idle);
  close(slow);
}

// A request that came in time is answered even when the server thread could not read it before its
// header deadline passed (held off the CPU on a loaded host, or in a slow collection as here). The old
// server checked deadlines before reading and hung up on it: a failed scrape, a false "target down".
TEST_F(HttpServerTest, ARequestThatCameInTimeIsAnsweredAfterTheServerWasBusy) {
  HttpServer::Options options = TestOptions();
  options.header_timeout = 1000ms;
  StartServer(options);
  const Clock::time_point connected = Clock::now();  // before the accept, so before its deadline started
  const int early = ConnectLoopback(port_);
  ASSERT_GE(early, 0);
  std::this_thread::sleep_for(100ms);  // accepted: its header deadline runs
  g_slow_entered = false;
  std::thread busy([this] {
    int status = 0;
    EXPECT_EQ(HttpGet(port_, "/slow", &status), "slow 1\n");
  });
  while (!g_slow_entered) std::this_thread::sleep_for(1ms);
  const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";  // well inside its deadline
  ASSERT_EQ(send(early, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  // In time by the server's clock too unless this thread was held off the CPU for most of the second.
  const bool sent_in_time = SecondsSince(connected) < 0.95;
  const std::string response = ReadUntilClosed(early, 5000ms);
  if (sent_in_time) {
    EXPECT_EQ(StatusOf(response), 200) << "hung up on a request that came in time: '" << response << "'";
  } else {
    testing::PrintSkip("the host held the test past the request's 1 s deadline before it was sent");
  }
  busy.join();
  close(early);
}

TEST_F(HttpServerTest, NonReadingClientIsDroppedAtTheTotalDeadlineWithoutBlockingOthers) {
  HttpServer::Options options = TestOptions();
  options.total_timeout = 1000ms;
  StartServer(options);
  const Clock::time_point t0 = Clock::now();
  const int big = NonReadingBigClient(port_);
  std::this_thread::sleep_for(200ms);
  EXPECT_LT(TimedScrape(), 1.0) << "a half-sent response blocked the server";
  std::this_thread::sleep_for(1000ms);
  // Past its deadline the server has given up: what arrives is the truncated response, then EOF/reset.
  size_t received = 0;
  char buf[65536];
  ssize_t n;
  while ((n = recv(big, buf, sizeof(buf), 0)) > 0) received += static_cast<size_t>(n);
  EXPECT_LT(received, kBigBody) << "the response was sent in full: no total deadline";
  EXPECT_LT(SecondsSince(t0), 4.0);
  close(big);
}

TEST_F(HttpServerTest, FullServerEvictsTheOldestIdleConnectionNotAResponseInFlight) {
  StartServer();  // 64 connections at most
  const int big = NonReadingBigClient(port_);  // the oldest, and sending: must survive
  std::this_thread::sleep_for(200ms);
  std::vector<int> idle;
  for (int i = 0; i < 74; ++i) idle.push_back(ConnectLoopback(port_));
  const Clock::time_point newest_connected = Clock::now();
  std::this_thread::sleep_for(200ms);
  EXPECT_LT(TimedScrape(), kUnderHeaderDeadlineS) << "a full server refused the scrape";
  EXPECT_TRUE(WaitClosedByPeer(idle.front(), 500ms)) << "the oldest idle connection was not evicted";
  pollfd newest{idle.back(), POLLIN, 0};
  const int newest_events = poll(&newest, 1, 0);
  // Idle connections are dropped at their 2 s header deadline anyway: only a test held off the CPU that long
  // finds the newest one gone, rightly.
  if (SecondsSince(newest_connected) < kUnderHeaderDeadlineS) {
    EXPECT_EQ(newest_events, 0) << "the newest idle connection was dropped";
  } else {
    testing::PrintSkip("the newest connection's check: the host held the test %.1f s, past its 2 s deadline",
                       SecondsSince(newest_connected));
  }
  // The response in flight is still delivered in full.
  size_t received = 0;
  char buf[65536];
  ssize_t n;
  while ((n = recv(big, buf, sizeof(buf), 0)) > 0) received += static_cast<size_t>(n);
  EXPECT_GT(received, kBigBody);
  for (int fd : idle) close(fd);
  close(big);
}

TEST_F(HttpServerTest, RequestsGetTheStatusTheyDeserve) {
  StartServer();
  struct Case {
    std::string request;
    int status;
  };
  const std::vector<Case> cases = {
      {"GET /metrics HTTP/1.0\r\n\r\n", 200},
      {"GET /metrics HTTP/1.0\n\n", 200},  // bare LF
      {"GET /metrics?x=1 HTTP/1.1\r\nHost: a\nAccept: */*\r\nConnection: close\r\n\r\n", 200},
      {"\r\nGET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n", 200},  // a stray empty line before the request line
      {"GET http://node7:9850/metrics HTTP/1.1\r\nConnection: Close\r\n\r\n", 200},
      {"GET /other HTTP/1.0\r\n\r\n", 404},
      {"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 405},
      {"DELETE /metrics HTTP/1.0\r\n\r\n", 405},
      {"garbage\r\n\r\n", 400},
      {"garbage\r\n", 400},  // refused at the end of the line, without waiting for the header
      {"GET\r\n\r\n", 400},
      {"GET /metrics\r\n\r\n", 400},
      {"GET /metrics HTTP/1.0 extra\r\n\r\n", 400},
      {"GET  /metrics HTTP/1.0\r\n\r\n", 400},
      {"GET metrics HTTP/1.0\r\n\r\n", 400},
      {"GET /metrics FTP/1.0\r\n\r\n", 400},
      {"G(T /metrics HTTP/1.0\r\n\r\n", 400},
      {"\r\n\r\n\r\n\r\n", 400},
      {std::string("\x16\x03\x01\x02\x00\x01", 6), 400},  // a TLS hello: refused at its first byte
      {"GET /metrics HTTP/1.0\r\nX-Pad: " + std::string(9000, 'a') + "\r\n\r\n", 431},
      {"GET /" + std::string(9000, 'a'), 431},
  };
  for (const Case& c : cases) {
    const Clock::time_point t0 = Clock::now();
    const std::string resp = RawRequest(port_, c.request, 3000ms);
    const std::string shown = ::testing::PrintToString(c.request.substr(0, 80));
    EXPECT_EQ(StatusOf(resp), c.status) << shown << " -> " << resp.substr(0, 200);
    EXPECT_LT(SecondsSince(t0), kUnderHeaderDeadlineS) << shown << " was answered late";
  }
  const std::string head = RawRequest(port_, "HEAD /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(StatusOf(head), 200);
  EXPECT_NE(head.find("Content-Length: 5\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n") << "HEAD got a body: " << head;
}

TEST_F(HttpServerTest, ThrowingHandlerGets500AndTheServerLivesOn) {
  ASSERT_TRUE(server_
                  .Start("127.0.0.1", 0,
                         [](const HttpServer::Request& request) {
                           if (request.path == "/throw") throw std::runtime_error("boom");
                           return Handler(request);
                         })
                  .ok());
  port_ = server_.port();
  EXPECT_EQ(StatusOf(RawRequest(port_, "GET /throw HTTP/1.0\r\n\r\n")), 500);
  EXPECT_LT(TimedScrape(), kUnderHeaderDeadlineS);
}

TEST(HttpServerStart, RefusesWhatIsNotAnIpv4Address) {
  for (const char* bad : {"", "localhost", "1.2.3", "::1", "0.0.0.0 "}) {
    HttpServer server;
    EXPECT_FALSE(server.Start(bad, 0, &Handler).ok()) << "'" << bad << "'";
    EXPECT_EQ(server.port(), 0);
    EXPECT_EQ(server.listen_fd(), -1);
  }
}

TEST(HttpServerStart, RestartsAfterStop) {
  HttpServer server;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(server.Start("127.0.0.1", 0, &Handler).ok());
    int status = 0;
    EXPECT_EQ(HttpGet(server.port(), "/metrics", &status), "up 1\n");
    EXPECT_EQ(status, 200);
    server.Stop();
    EXPECT_EQ(server.port(), 0);
  }
}

}  // namespace
}  // namespace ncclscope

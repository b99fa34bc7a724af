// The endpoint at parity with the Prometheus client libraries, over real loopback sockets: HTTP/1.1
// keep-alive (bounded by idle time and eviction, never holding Stop()), pipelining, gzip when asked, the web
// config's response headers; and the negotiation helpers behind them.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "exporters/http/http_server.h"
#include "exporters/http/media_types.h"
#include "http_load.h"

namespace ncclscope {
namespace {

using ::ncclscope::testing::ConnectLoopback;
using ::ncclscope::testing::RawRequest;
using ::ncclscope::testing::ReadUntilClosed;
using ::ncclscope::testing::StatusOf;
using ::ncclscope::testing::WaitClosedByPeer;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

const std::string kBig(64 << 10, 'm');  // compressible, as an exposition is

HttpServer::Reply Handler(const HttpServer::Request& request) {
  HttpServer::Reply reply;
  reply.found = request.path == "/metrics" || request.path == "/big";
  reply.body = request.path == "/big" ? kBig : request.path == "/metrics" ? "up 1\n" : "not found\n";
  return reply;
}

// One response read from a kept-alive connection: the header block, then Content-Length bytes of body.
struct Response {
  std::string head, body;
};

bool ReadResponse(int fd, std::string* pending, Response* r) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[65536];
  size_t end = std::string::npos;
  while ((end = pending->find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    pending->append(buf, static_cast<size_t>(n));
  }
  r->head = pending->substr(0, end + 4);
  const size_t at = r->head.find("Content-Length: ");
  if (at == std::string::npos) return false;
  const size_t length = std::stoul(r->head.substr(at + 16));
  while (pending->size() < end + 4 + length) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    pending->append(buf, static_cast<size_t>(n));
  }
  r->body = pending->substr(end + 4, length);
  pending->erase(0, end + 4 + length);
  return true;
}

bool Send(int fd, const std::string& text) {
  return send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
}

std::string Gunzip(const std::string& packed) {
  z_stream zs = {};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return "";
  std::string out(1 << 20, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  zs.avail_in = static_cast<uInt>(packed.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return rc == Z_STREAM_END ? out : "";
}

class KeepAliveTest : public ::testing::Test {
 protected:
  void Start(HttpServer::Options options = HttpServer::Options()) {
    ASSERT_TRUE(server_.Start("127.0.0.1", 0, &Handler, options).ok());
    port_ = server_.port();
  }
  HttpServer server_;
  int port_ = 0;
};

TEST_F(KeepAliveTest, Http11ServesSeveralRequestsOnOneConnection) {
  Start();
  const int fd = ConnectLoopback(port_);
  std::string pending;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Send(fd, "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n"));
    Response r;
    ASSERT_TRUE(ReadResponse(fd, &pending, &r)) << "request " << i;
    EXPECT_EQ(r.head.substr(0, 15), "HTTP/1.1 200 OK");
    EXPECT_EQ(r.head.find("Connection: close"), std::string::npos) << r.head;
    EXPECT_EQ(r.body, "up 1\n");
  }
  close(fd);
}

TEST_F(KeepAliveTest, PipelinedRequestsAreAnsweredInOrderAndCloseIsHonoured) {
  Start();
  const int fd = ConnectLoopback(port_);
  ASSERT_TRUE(Send(fd, "GET /metrics HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\n\r\n"
                       "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n"));
  const std::string all = ReadUntilClosed(fd, 5000ms);
  close(fd);
  const size_t a = all.find("HTTP/1.1 200"), b = all.find("HTTP/1.1 404"), c = all.rfind("HTTP/1.1 200");
  ASSERT_NE(a, std::string::npos) << all;
  ASSERT_NE(b, std::string::npos) << all;
  EXPECT_TRUE(a < b && b < c) << all;
  EXPECT_EQ(all.find("Connection: close"), all.rfind("Connection: close")) << "only the last one closes";
  EXPECT_GT(all.find("Connection: close"), c);
}

TEST_F(KeepAliveTest, Http10AndErrorsClose) {
  Start();
  const std::string old = RawRequest(port_, "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(old.substr(0, 12), "HTTP/1.0 200");
  EXPECT_NE(old.find("Connection: close"), std::string::npos);
  const std::string post = RawRequest(port_, "POST /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_EQ(StatusOf(post), 405);
  EXPECT_NE(post.find("Connection: close"), std::string::npos);
}

// An error ends the connection even when its request asked to keep it (a handler that throws gives 500).
TEST(KeepAlive, AnErrorClosesAKeptAliveRequest) {
  HttpServer server;
  ASSERT_TRUE(server
                  .Start("127.0.0.1", 0,
                         [](const HttpServer::Request& request) {
                           if (request.path == "/throw") throw std::runtime_error("boom");
                           return Handler(request);
                         })
                  .ok());
  const int fd = ConnectLoopback(server.port());
  ASSERT_TRUE(Send(fd, "GET /throw HTTP/1.1\r\n\r\n"));
  const Clock::time_point t0 = Clock::now();
  const std::string response = ReadUntilClosed(fd, 5000ms);
  close(fd);
  EXPECT_EQ(StatusOf(response), 500);
  EXPECT_NE(response.find("Connection: close"), std::string::npos) << response;
  EXPECT_LT(Clock::now() - t0, 3000ms) << "the server kept the connection after its 500";
}

TEST_F(KeepAliveTest, AnIdleConnectionIsClosedAtItsIdleTimeout) {
  HttpServer::Options options;
  options.idle_timeout = 300ms;
  Start(options);
  const int fd = ConnectLoopback(port_);
  std::string pending;
  Response r;
  ASSERT_TRUE(Send(fd, "GET /metrics HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(ReadResponse(fd, &pending, &r));
  const Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(WaitClosedByPeer(fd, 5000ms));
  EXPECT_LT(Clock::now() - t0, 3000ms);
  close(fd);
}

TEST_F(KeepAliveTest, IdleConnectionsGiveWayToNewOnesAndNeverHoldStop) {
  HttpServer::Options options;
  options.max_connections = 4;
  Start(options);
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(ConnectLoopback(port_));
    std::string pending;
    Response r;
    ASSERT_TRUE(Send(idle.back(), "GET /metrics HTTP/1.1\r\n\r\n"));
    ASSERT_TRUE(ReadResponse(idle.back(), &pending, &r));
  }
  // The server is full of kept-alive connections: a new client is served, the oldest idle one goes.
  EXPECT_EQ(StatusOf(RawRequest(port_, "GET /metrics HTTP/1.0\r\n\r\n")), 200);
  EXPECT_TRUE(WaitClosedByPeer(idle[0], 2000ms));
  const Clock::time_point t0 = Clock::now();
  server_.Stop();
  EXPECT_LT(Clock::now() - t0, 100ms) << "kept-alive clients held Stop()";
  for (int fd : idle) close(fd);
}

TEST_F(KeepAliveTest, GzipWhenAskedAndOnlyThen) {
  Start();
  const int fd = ConnectLoopback(port_);
  std::string pending;
  Response r;
  ASSERT_TRUE(Send(fd, "GET /big HTTP/1.1\r\nAccept-Encoding: gzip, deflate\r\n\r\n"));
  ASSERT_TRUE(ReadResponse(fd, &pending, &r));
  EXPECT_NE(r.head.find("Content-Encoding: gzip\r\n"), std::string::npos) << r.head;
  EXPECT_NE(r.head.find("Vary: Accept-Encoding\r\n"), std::string::npos) << r.head;
  EXPECT_LT(r.body.size(), kBig.size() / 20);
  EXPECT_EQ(Gunzip(r.body), kBig);
  for (const char* refused : {"", "Accept-Encoding: gzip;q=0\r\n", "Accept-Encoding: identity\r\n"}) {
    ASSERT_TRUE(Send(fd, std::string("GET /big HTTP/1.1\r\n") + refused + "\r\n"));
    ASSERT_TRUE(ReadResponse(fd, &pending, &r));
    EXPECT_EQ(r.head.find("Content-Encoding"), std::string::npos) << refused;
    EXPECT_EQ(r.body, kBig) << refused;
  }
  // A tiny body is not worth the gzip header.
  ASSERT_TRUE(Send(fd, "GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n"));
  ASSERT_TRUE(ReadResponse(fd, &pending, &r));
  EXPECT_EQ(r.body, "up 1\n");
  close(fd);
}

TEST_F(KeepAliveTest, ConfiguredHeadersGoWithEveryResponse) {
  HttpServer::Options options;
  options.headers = "X-Frame-Options: deny\r\nX-Content-Type-Options: nosniff\r\n";
  Start(options);
  for (const char* request : {"GET /metrics HTTP/1.0\r\n\r\n", "GET /nope HTTP/1.0\r\n\r\n", "BAD\r\n\r\n",
                              "DELETE /metrics HTTP/1.0\r\n\r\n"}) {
    const std::string response = RawRequest(port_, request);
    EXPECT_NE(response.find("\r\nX-Frame-Options: deny\r\nX-Content-Type-Options: nosniff\r\n"), std::string::npos)
        << request << " -> " << response;
  }
}

TEST(MediaTypes, QualityOfWhatPrometheusAndCurlSend) {
  const char* prometheus =
      "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
      "text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
  EXPECT_DOUBLE_EQ(MediaTypeQuality(prometheus, "application/openmetrics-text"), 1.0);
  EXPECT_DOUBLE_EQ(MediaTypeQuality(prometheus, "text/plain"), 0.5);
  EXPECT_DOUBLE_EQ(MediaTypeQuality("*/*", "application/openmetrics-text"), MediaTypeQuality("*/*", "text/plain"));
  EXPECT_DOUBLE_EQ(MediaTypeQuality("", "text/plain"), 1.0);
  EXPECT_DOUBLE_EQ(MediaTypeQuality("text/*;q=0.3, text/html", "text/plain"), 0.3);
  EXPECT_DOUBLE_EQ(MediaTypeQuality("application/json", "text/plain"), 0.0);
  EXPECT_DOUBLE_EQ(MediaTypeQuality("text/plain;q=bogus", "text/plain"), 0.0);
}

TEST(MediaTypes, Gzip) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_TRUE(AcceptsGzip("x-gzip"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("*, gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("identity"));
}

TEST(MediaTypes, ConnectionTokens) {
  EXPECT_TRUE(ListsToken("close", "close"));
  EXPECT_TRUE(ListsToken("keep-alive, Close", "close"));
  EXPECT_TRUE(ListsToken(" \tUpgrade ,close\t", "close"));
  EXPECT_FALSE(ListsToken("", "close"));
  EXPECT_FALSE(ListsToken("closed, keep-alive", "close"));
  EXPECT_FALSE(ListsToken(",,", "close"));
}

}  // namespace
}  // namespace ncclscope

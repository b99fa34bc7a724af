// A small HTTP/1.1 server for /metrics. One thread runs a poll() loop over non-blocking sockets: the
// listening socket, an eventfd that Stop() signals, and every client connection. Requests are read and
// responses written incrementally, so no client can hold up another scrape or the job's teardown:
//  - each request has deadlines counted from its first byte (from the accept for the first request): the
//    full request header within header_timeout, the whole exchange within total_timeout; not per byte, so
//    a client trickling one byte a second is dropped at its deadline;
//  - at most max_connections are open; a new connection evicts the oldest one that is idle (kept alive
//    between scrapes), still reading its request or lingering after its response (one whose response is
//    being sent only when nothing else can go);
//  - Stop() signals the eventfd; the loop shuts down and closes every client socket and exits, so Stop()
//    returns within about a millisecond (tests/bench/http) unless the handler itself is running
//    (civetweb, under prometheus-cpp's Exposer, took up to 2 s to stop, and the last finalize must
//    return within 100 ms). A kept-alive connection is closed like any other.
// Keep-alive: an HTTP/1.1 GET or HEAD keeps its connection for the next request (as Prometheus's and
// vmagent's scrapers reuse theirs: over TLS that saves a handshake per scrape) unless it says
// `Connection: close`, up to kMaxRequestsPerConnection requests and idle_timeout between them. HTTP/1.0
// requests, errors and other methods get `Connection: close`. Pipelined requests are answered in order.
// GET is served, HEAD answered like GET without the body, any other well-formed method gets 405, a
// malformed request line 400, a request header over 8 KiB 431. LF and CRLF line endings are both accepted.
// A body is gzip-encoded when the request's Accept-Encoding allows gzip. Options::headers are sent with
// every response. A response is reused for requests of the same path and negotiation within 250 ms, shared
// by every client it goes to, so a flood of connections costs one collection and one copy of the body.
// Sends use MSG_NOSIGNAL (no process-wide SIGPIPE change); every descriptor is close-on-exec.
// With Options::tls, connections speak TLS (tls.h): the handshake runs inside the same loop, non-blocking,
// its WANT_READ/WANT_WRITE mapped to poll events and bounded by header_timeout; a plain-HTTP request on the
// TLS port gets a plain 400, as Go's servers answer it. With Options::auth, every request needs HTTP basic
// credentials (basic_auth.h): a request whose check is pending waits parked in the loop (no poll events)
// until the verifier thread answers (at most 5 s, then 429), then is served, or gets 401 with
// WWW-Authenticate; a rate-limited one gets 429 at once.
// Thread-safety: Start/Stop are not thread-safe against each other (the runtime serialises them), and
// port()/listen_fd() are read by the thread that calls them. The handler runs on the server thread, one
// request at a time.
#ifndef NCCLSCOPE_EXPORTERS_HTTP_HTTP_SERVER_H_
#define NCCLSCOPE_EXPORTERS_HTTP_HTTP_SERVER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace ncclscope {

class BasicAuth;
class TlsContext;

class HttpServer {
 public:
  struct Request {
    std::string path;    // query string removed
    std::string accept;  // the Accept header, "" when absent: the handler negotiates its format from it
  };
  struct Reply {
    bool found = true;  // false: 404
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
  };
  // Answers a GET (or HEAD) of request.path.
  using Handler = std::function<Reply(const Request& request)>;

  struct Options {
    int max_connections = 64;
    // From accept to the end of the request header: Prometheus's default scrape timeout. A shorter one failed
    // scrapes a starved host's Prometheus would have waited for (connected, its request sent seconds later): a
    // false "target down". Idle clients cost nothing while there is room; a full server evicts the oldest.
    std::chrono::milliseconds header_timeout{10000};
    std::chrono::milliseconds total_timeout{20000};  // from the request's first byte to the last of its response
    // A kept-alive connection waits this long for its next request: longer than a 2-minute scrape interval.
    std::chrono::milliseconds idle_timeout{150000};
    // "Name: value\r\n" lines sent with every response (the web config's http_server_config.headers).
    std::string headers;
    std::shared_ptr<TlsContext> tls;  // null: plain HTTP
    std::shared_ptr<BasicAuth> auth;  // null: no authentication
  };

  HttpServer() = default;
  ~HttpServer() { Stop(); }
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds `address` (IPv4 dotted quad, "0.0.0.0" = all interfaces) and `port` (0 = any free port).
  Status Start(const std::string& address, int port, Handler handler) {
    return Start(address, port, std::move(handler), Options());
  }
  Status Start(const std::string& address, int port, Handler handler, const Options& options);
  // Returns at once whatever the clients do: closes every connection and joins the server thread.
  void Stop();

  int port() const { return port_; }
  int listen_fd() const { return listen_fd_; }
  // Whether the last Start() failed because another socket holds the address and port (EADDRINUSE): the one
  // failure that another port cures.
  bool address_in_use() const { return address_in_use_; }

 private:
  void Serve();

  Handler handler_;
  Options options_;
  std::thread thread_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  int port_ = 0;
  bool address_in_use_ = false;
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_HTTP_HTTP_SERVER_H_

// A minimal HTTP/1.0 server for /metrics: one thread, poll() on the listening socket and an eventfd, so
// Stop() returns in microseconds (civetweb, under prometheus-cpp's Exposer, took up to 2 s to stop once a
// handler was registered, and the last finalize must return within 100 ms). One request per connection,
// 2 s I/O timeouts, MSG_NOSIGNAL (no process-wide SIGPIPE change), close-on-exec descriptors. Scrapes are
// served one at a time, which suits one Prometheus server scraping every few seconds.
// Start/Stop are not thread-safe against each other (the runtime serialises them); the handler runs on
// the server thread.
#ifndef NCCLSCOPE_EXPORTERS_PROMETHEUS_HTTP_SERVER_H_
#define NCCLSCOPE_EXPORTERS_PROMETHEUS_HTTP_SERVER_H_

#include <functional>
#include <string>
#include <thread>

#include "common/status.h"

namespace ncclscope {

class HttpServer {
 public:
  // Returns the body for a GET of `path`, with *found = false for a 404.
  using Handler = std::function<std::string(const std::string& path, bool* found)>;

  HttpServer() = default;
  ~HttpServer() { Stop(); }
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds `address` (IPv4 dotted quad, "0.0.0.0" = all interfaces) and `port` (0 = any free port).
  Status Start(const std::string& address, int port, Handler handler);
  void Stop();

  int port() const { return port_; }
  int listen_fd() const { return listen_fd_; }

 private:
  void Serve();
  void HandleConnection(int fd);

  Handler handler_;
  std::thread thread_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  int port_ = 0;
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_PROMETHEUS_HTTP_SERVER_H_

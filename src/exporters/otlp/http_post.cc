#include "exporters/otlp/http_post.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ncclscope::otlp {
namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds left before `deadline`, at least 0.
int MsLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits for `events` on `fd` until `deadline`; false on timeout or a poll error.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, MsLeft(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

std::string Errno(const char* step) { return std::string(step) + ": " + std::strerror(errno); }

}  // namespace

bool HttpPoster::Resolve(std::string* why) {
  if (resolved_) return true;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(url_.host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    *why = "cannot resolve " + url_.host + ": " + gai_strerror(rc);
    return false;
  }
  std::memcpy(&addr_, found->ai_addr, sizeof addr_);
  addr_.sin_port = htons(static_cast<uint16_t>(url_.port));
  freeaddrinfo(found);
  resolved_ = true;
  return true;
}

PostResult HttpPoster::Post(const std::string& content_type, const std::string& body, Clock::time_point deadline) {
  PostResult result;
  if (!Resolve(&result.error)) return result;
  Fd sock;
  sock.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (sock.fd < 0) {
    result.error = Errno("socket");
    return result;
  }
  if (connect(sock.fd, reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_) != 0) {
    if (errno != EINPROGRESS) {
      result.error = Errno("connect");
      return result;
    }
    if (!WaitFor(sock.fd, POLLOUT, deadline)) {
      result.error = "connect: timed out";
      return result;
    }
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(sock.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      errno = err;
      result.error = Errno("connect");
      return result;
    }
  }
  std::string request = "POST " + url_.path + " HTTP/1.1\r\nHost: " + url_.host;
  if (url_.port != 80) request += ":" + std::to_string(url_.port);
  request += "\r\nUser-Agent: ncclscope/" NCCLSCOPE_VERSION "\r\nContent-Type: " + content_type +
             "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers_) request += k + ": " + v + "\r\n";
  request += "\r\n";
  request += body;
  for (size_t sent = 0; sent < request.size();) {
    if (!WaitFor(sock.fd, POLLOUT, deadline)) {
      result.error = "send: timed out";
      return result;
    }
    const ssize_t n = send(sock.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      result.error = Errno("send");
      return result;
    }
    if (n > 0) sent += static_cast<size_t>(n);
  }
  // The status line is all we need, and the start of an error's body for the warning; at most 4 KiB is read.
  std::string response;
  char buf[1024];
  while (response.size() < 4096) {
    if (!WaitFor(sock.fd, POLLIN, deadline)) {
      if (response.empty()) result.error = "no response: timed out";
      break;
    }
    const ssize_t n = recv(sock.fd, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      if (response.empty()) result.error = Errno("recv");
      break;
    }
    response.append(buf, static_cast<size_t>(n));
    const size_t end = response.find("\r\n\r\n");
    if (end != std::string::npos && response.rfind("HTTP/1.1 2", 0) == 0) break;  // a success: headers suffice
  }
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) {
    if (result.error.empty()) result.error = "not an HTTP response";
    return result;
  }
  result.status = std::atoi(response.c_str() + 9);
  if (!result.ok()) {
    const size_t eol = response.find("\r\n");
    const size_t body_at = response.find("\r\n\r\n");
    result.error = response.substr(0, eol);
    if (body_at != std::string::npos) result.error += ": " + response.substr(body_at + 4, 200);
  }
  return result;
}

}  // namespace ncclscope::otlp

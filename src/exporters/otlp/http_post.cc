#include "exporters/otlp/http_post.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
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

// The connection's bytes, plain or through TLS; each call waits (under the deadline) until it can go on.
class Stream {
 public:
  Stream(int fd, TlsSession* tls) : fd_(fd), tls_(tls) {}

  // The TLS handshake (nothing for plain http).
  bool Open(Clock::time_point deadline, std::string* why) {
    if (tls_ == nullptr) return true;
    for (;;) {
      const TlsSession::Io io = tls_->Handshake();
      if (io == TlsSession::Io::kOk) return true;
      if (io != TlsSession::Io::kWant) {
        *why = "TLS handshake: " + tls_->error();
        return false;
      }
      if (!WaitFor(fd_, tls_->want(), deadline)) {
        *why = "TLS handshake: timed out";
        return false;
      }
    }
  }

  bool SendAll(const std::string& data, Clock::time_point deadline, std::string* why) {
    for (size_t sent = 0; sent < data.size();) {
      size_t n = 0;
      if (tls_ != nullptr) {
        const TlsSession::Io io = tls_->Write(data.data() + sent, data.size() - sent, &n);
        if (io == TlsSession::Io::kError) {
          *why = "send: " + tls_->error();
          return false;
        }
        if (io == TlsSession::Io::kWant && !WaitFor(fd_, tls_->want(), deadline)) {
          *why = "send: timed out";
          return false;
        }
      } else {
        if (!WaitFor(fd_, POLLOUT, deadline)) {
          *why = "send: timed out";
          return false;
        }
        const ssize_t r = send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (r < 0 && errno != EAGAIN && errno != EINTR) {
          *why = Errno("send");
          return false;
        }
        n = r > 0 ? static_cast<size_t>(r) : 0;
      }
      sent += n;
    }
    return true;
  }

  // Some bytes into buf: > 0, 0 at the end of the stream, -1 on an error or the deadline (*why says which).
  ssize_t Receive(char* buf, size_t cap, Clock::time_point deadline, std::string* why) {
    for (;;) {
      if (tls_ != nullptr) {
        size_t got = 0;
        const TlsSession::Io io = tls_->Read(buf, cap, &got);
        if (io == TlsSession::Io::kOk) return static_cast<ssize_t>(got);
        if (io == TlsSession::Io::kClosed) return 0;
        if (io == TlsSession::Io::kError) {
          *why = "recv: " + tls_->error();
          return -1;
        }
        if (!WaitFor(fd_, tls_->want(), deadline)) {
          *why = "no response: timed out";
          return -1;
        }
        continue;
      }
      if (!WaitFor(fd_, POLLIN, deadline)) {
        *why = "no response: timed out";
        return -1;
      }
      const ssize_t n = recv(fd_, buf, cap, 0);
      if (n >= 0) return n;
      if (errno == EAGAIN || errno == EINTR) continue;
      *why = Errno("recv");
      return -1;
    }
  }

 private:
  int fd_;
  TlsSession* tls_;
};

// The Retry-After header's seconds (the delay form; an HTTP date is not read), -1 when absent.
int RetryAfterSeconds(const std::string& headers) {
  std::string lower(headers);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t at = lower.find("\r\nretry-after:");
  if (at == std::string::npos) return -1;
  const char* p = headers.c_str() + at + 14;
  while (*p == ' ' || *p == '\t') ++p;
  if (!std::isdigit(static_cast<unsigned char>(*p))) return -1;
  return static_cast<int>(std::min(std::strtol(p, nullptr, 10), 3600L));
}

}  // namespace

bool PostResult::retryable() const {
  return !config_error && (status == 0 || status == 429 || status == 502 || status == 503 || status == 504);
}

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

bool HttpPoster::PrepareTls(std::string* why) {
  if (!url_.https || tls_ != nullptr) return true;
  Result<std::unique_ptr<TlsClientContext>> ctx =
      TlsClientContext::Create({tls_files_.ca_file, tls_files_.client_cert_file, tls_files_.client_key_file});
  if (!ctx.ok()) {
    *why = "TLS: " + ctx.status().message();
    return false;
  }
  tls_ = std::move(*ctx);
  return true;
}

PostResult HttpPoster::Post(const std::string& content_type, const std::string& content_encoding,
                            const std::string& body, Clock::time_point deadline) {
  PostResult result;
  if (!Resolve(&result.error) || !PrepareTls(&result.error)) {
    result.config_error = true;
    return result;
  }
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
  std::unique_ptr<TlsSession> session;
  if (tls_ != nullptr) {
    Result<std::unique_ptr<TlsSession>> s = tls_->NewSession(sock.fd, url_.host);
    if (!s.ok()) {
      result.error = s.status().message();
      return result;
    }
    session = std::move(*s);
  }
  Stream stream(sock.fd, session.get());
  if (!stream.Open(deadline, &result.error)) return result;
  std::string request = "POST " + url_.path + " HTTP/1.1\r\nHost: " + url_.host;
  if (url_.port != (url_.https ? 443 : 80)) request += ":" + std::to_string(url_.port);
  request += "\r\nUser-Agent: ncclscope/" NCCLSCOPE_VERSION "\r\nContent-Type: " + content_type +
             "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n";
  if (!content_encoding.empty()) request += "Content-Encoding: " + content_encoding + "\r\n";
  for (const auto& [k, v] : headers_) request += k + ": " + v + "\r\n";
  request += "\r\n";
  request += body;
  if (!stream.SendAll(request, deadline, &result.error)) return result;
  // The status line and headers are all we need, and the start of an error's body for the warning; at most 4 KiB
  // is read.
  std::string response;
  char buf[1024];
  std::string why;
  while (response.size() < 4096) {
    const ssize_t n = stream.Receive(buf, sizeof buf, deadline, &why);
    if (n <= 0) {
      if (n < 0 && response.empty()) result.error = why;
      break;
    }
    response.append(buf, static_cast<size_t>(n));
    const size_t end = response.find("\r\n\r\n");
    if (end != std::string::npos && response.rfind("HTTP/1.1 2", 0) == 0) break;  // a success: headers suffice
  }
  if (session != nullptr) session->Shutdown();
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) {
    if (result.error.empty()) result.error = "not an HTTP response";
    return result;
  }
  result.status = std::atoi(response.c_str() + 9);
  if (!result.ok()) {
    const size_t eol = response.find("\r\n");
    const size_t body_at = response.find("\r\n\r\n");
    result.error = response.substr(0, eol);
    result.retry_after_s = RetryAfterSeconds(response.substr(0, body_at));
    if (body_at != std::string::npos) result.error += ": " + response.substr(body_at + 4, 200);
  }
  return result;
}

}  // namespace ncclscope::otlp

#include "http_load.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace ncclscope::testing {
namespace {

using Clock = std::chrono::steady_clock;

// A request header that never ends: the slow clients trickle it byte by byte, then 'a' forever.
constexpr char kSlowPrefix[] = "GET /metrics HTTP/1.0\r\nX-Slow: ";

int MsLeft(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}

}  // namespace

int ConnectLoopback(int port, int rcvbuf) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));  // before connect: the window
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string RawRequest(int port, const std::string& request, std::chrono::milliseconds timeout) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  // The server may answer (and close) before it has read everything: a failed send is not an error.
  (void)!send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string resp = ReadUntilClosed(fd, timeout);
  close(fd);
  return resp;
}

std::string ReadUntilClosed(int fd, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::string resp;
  char buf[65536];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, MsLeft(deadline)) <= 0) break;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  return resp;
}

int StatusOf(const std::string& response) {
  int status = -1;
  if (std::sscanf(response.c_str(), "HTTP/%*s %d", &status) != 1) return -1;
  return status;
}

bool WaitClosedByPeer(int fd, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  char buf[65536];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, MsLeft(deadline)) <= 0) return false;
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0 && errno != EAGAIN && errno != EINTR) return true;  // reset
  }
}

ClientLoad::ClientLoad(int port, int slow, int idle, std::chrono::milliseconds interval, bool reconnect)
    : port_(port), interval_(interval), reconnect_(reconnect) {
  clients_.resize(static_cast<size_t>(slow + idle));
  for (int i = 0; i < slow + idle; ++i) {
    clients_[i].slow = i < slow;
    Connect(&clients_[i]);
  }
  thread_ = std::thread([this] { Drive(); });
}

ClientLoad::~ClientLoad() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  for (Client& c : clients_) {
    if (c.fd >= 0) close(c.fd);
  }
}

bool ClientLoad::Connect(Client* c) {
  c->fd = ConnectLoopback(port_);
  c->sent = 0;
  if (c->fd >= 0) open_.fetch_add(1);
  return c->fd >= 0;
}

void ClientLoad::Drive() {
  const std::string prefix = kSlowPrefix;
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    for (Client& c : clients_) {
      if (c.fd < 0) continue;
      bool gone = false;
      if (c.slow) {
        const char byte = c.sent < prefix.size() ? prefix[c.sent] : 'a';
        ssize_t n = send(c.fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == 1) ++c.sent;
        gone = n < 0 && errno != EAGAIN && errno != EINTR;
      }
      char buf[4096];
      ssize_t n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
      gone = gone || n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
      if (!gone) continue;
      close(c.fd);
      c.fd = -1;
      open_.fetch_sub(1);
      dropped_.fetch_add(1);
      if (reconnect_) Connect(&c);
    }
  }
}

}  // namespace ncclscope::testing

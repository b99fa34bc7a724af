#include "bootstrap.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string_view>

#include "strict_number.h"

namespace ncclscope::sim {
namespace {

bool WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    ssize_t r = recv(fd, c, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteStr(int fd, const std::string& s) {
  uint32_t n = static_cast<uint32_t>(s.size());
  return WriteAll(fd, &n, 4) && WriteAll(fd, s.data(), s.size());
}

bool ReadStr(int fd, std::string* s) {
  uint32_t n;
  if (!ReadAll(fd, &n, 4) || n > (1u << 30)) return false;
  s->resize(n);
  return ReadAll(fd, s->data(), n);
}

bool SplitHostPort(const std::string& addr, std::string* host, int* port) {
  size_t c = addr.rfind(':');
  if (c == std::string::npos) return false;
  *host = addr.substr(0, c);
  std::string why;
  return ParseInteger(std::string_view(addr).substr(c + 1), 1, 65535, port, &why);
}

}  // namespace

uint64_t RandomU64() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

RendezvousServer::~RendezvousServer() { Stop(); }

std::string RendezvousServer::Start(const std::string& host, int port) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return "";
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1) sa.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(listen_fd_, 256) != 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    return "";
  }
  socklen_t len = sizeof(sa);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return host + ":" + std::to_string(ntohs(sa.sin_port));
}

void RendezvousServer::Stop() {
  if (stop_.exchange(true)) return;
  if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : conn_fds_) shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
  for (int fd : conn_fds_) close(fd);
}

void RendezvousServer::AcceptLoop() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard<std::mutex> lock(mu_);
    conn_fds_.push_back(fd);
    workers_.emplace_back([this, fd] { Serve(fd); });
  }
}

void RendezvousServer::Serve(int fd) {
  for (;;) {
    std::string key, data;
    int32_t hdr[2];
    if (!ReadStr(fd, &key) || !ReadAll(fd, hdr, sizeof(hdr)) || !ReadStr(fd, &data)) return;
    int nranks = hdr[0], rank = hdr[1];
    if (nranks <= 0 || rank < 0 || rank >= nranks) return;
    Round done;
    bool complete = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Round& r = rounds_[key];
      if (r.expected == 0) {
        r.expected = nranks;
        r.data.resize(nranks);
        r.fds.assign(nranks, -1);
      }
      r.data[rank] = std::move(data);
      r.fds[rank] = fd;
      if (++r.have == r.expected) {
        done = std::move(r);
        rounds_.erase(key);
        complete = true;
      }
    }
    if (complete) {
      std::string reply;
      for (const auto& d : done.data) {
        uint32_t n = static_cast<uint32_t>(d.size());
        reply.append(reinterpret_cast<const char*>(&n), 4);
        reply.append(d);
      }
      for (int f : done.fds) WriteAll(f, reply.data(), reply.size());
    }
  }
}

BootstrapClient::~BootstrapClient() {
  if (fd_ >= 0) close(fd_);
}

bool BootstrapClient::Connect(const std::string& addr, double timeout_s, std::string* error) {
  std::string host;
  int port;
  if (!SplitHostPort(addr, &host, &port)) {
    *error = "bad rendezvous address '" + addr + "' (want host:port)";
    return false;
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || res == nullptr) {
    *error = "cannot resolve " + host;
    return false;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      fd_ = fd;
      freeaddrinfo(res);
      return true;
    }
    int err = errno;
    close(fd);
    if (std::chrono::steady_clock::now() > deadline) {
      *error = "cannot reach rendezvous " + addr + ": " + strerror(err);
      freeaddrinfo(res);
      return false;
    }
    usleep(20000);
  }
}

bool BootstrapClient::AllGather(const std::string& key, int nranks, int rank, const std::string& mine,
                                std::vector<std::string>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  int32_t hdr[2] = {nranks, rank};
  if (!WriteStr(fd_, key) || !WriteAll(fd_, hdr, sizeof(hdr)) || !WriteStr(fd_, mine)) return false;
  out->assign(nranks, std::string());
  for (int i = 0; i < nranks; ++i) {
    if (!ReadStr(fd_, &(*out)[i])) return false;
  }
  return true;
}

bool BootstrapClient::Barrier(const std::string& key, int nranks, int rank) {
  std::vector<std::string> ignored;
  return AllGather(key, nranks, rank, "", &ignored);
}

}  // namespace ncclscope::sim

#include "socket/socket_util.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

namespace ncclscope::sock {

Result<int> NewSocket(int family, const std::string& what) {
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) return fd;
  int err = errno;
  if (err == EMFILE || err == ENFILE) {
    return SystemError(what + ": out of file descriptors (" + strerror(err) +
                       "); raise `ulimit -n` or lower NCCLSCOPE_NET_NSOCKS");
  }
  return SystemError(what + ": socket() failed: " + strerror(err));
}

AcceptResult Accept(int listen_fd, int* fd, SockAddr* peer, int* err) {
  for (;;) {
    SockAddr scratch{};
    SockAddr* a = peer != nullptr ? peer : &scratch;
    socklen_t len = sizeof(*a);
    *fd = accept4(listen_fd, &a->sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (*fd >= 0) return AcceptResult::kAccepted;
    *err = errno;
    if (*err == EINTR || *err == ECONNABORTED) continue;
    if (*err == EAGAIN || *err == EWOULDBLOCK) return AcceptResult::kEmpty;
    if (*err == EMFILE || *err == ENFILE) return AcceptResult::kOutOfFds;
    return AcceptResult::kFailed;
  }
}

void SetBufferSizes(int fd, int bytes, int* snd, int* rcv) {
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  *snd = *rcv = 0;
  socklen_t len = sizeof(int);
  getsockopt(fd, SOL_SOCKET, SO_SNDBUF, snd, &len);
  len = sizeof(int);
  getsockopt(fd, SOL_SOCKET, SO_RCVBUF, rcv, &len);
}

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void SetKeepalive(int fd, int idle_s, int interval_s, int count) {
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof(interval_s));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

void SetUserTimeout(int fd, unsigned ms) {
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
}

int ConnectResult(int fd) {
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, 0) <= 0) return -1;
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  return err;
}

ErrorClass Classify(int err) {
  switch (err) {
    case ETIMEDOUT:
      return ErrorClass::kTimeout;
    case ECONNRESET:
    case EPIPE:
    case ECONNREFUSED:
    case EHOSTUNREACH:
    case ENETUNREACH:
      return ErrorClass::kPeerGone;
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case ENOBUFS:
      return ErrorClass::kResource;
    default:
      return ErrorClass::kOther;
  }
}

Status ErrnoStatus(int err, const char* op, const std::string& peer, ErrorClass* cls) {
  std::string msg = std::string(op) + " with peer " + peer + " failed: " + strerror(err);
  *cls = Classify(err);
  switch (*cls) {
    case ErrorClass::kTimeout:
      return RemoteError(msg + " (no acknowledgement within the timeout: peer stopped or host silent)");
    case ErrorClass::kPeerGone:
      return RemoteError(msg + " (peer process gone or connection reset)");
    default:
      return SystemError(msg);
  }
}

}  // namespace ncclscope::sock

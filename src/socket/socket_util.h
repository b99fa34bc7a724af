// The socket toolkit of every socket user (TCP and verbs transports, HTTP endpoint): non-blocking socket
// creation and accept, socket options, and errno-to-Status mapping that names the peer. Policy (which
// timeouts, which counters) stays with the callers. Thread-safe (stateless).
#ifndef NCCLSCOPE_SOCKET_SOCKET_UTIL_H_
#define NCCLSCOPE_SOCKET_SOCKET_UTIL_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "socket/sock_addr.h"

namespace ncclscope::sock {

// socket(family, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC); EMFILE/ENFILE become a clear resource error.
Result<int> NewSocket(int family, const std::string& what);

enum class AcceptResult {
  kAccepted,  // *fd and *peer set
  kEmpty,     // nobody waiting (EAGAIN)
  kOutOfFds,  // EMFILE/ENFILE: the connection stays queued; retry once descriptors are freed
  kFailed,    // anything else; errno in *err
};

// accept4 with SOCK_NONBLOCK|SOCK_CLOEXEC; EINTR and ECONNABORTED (a connector that gave up) are retried.
// `peer` may be null.
AcceptResult Accept(int listen_fd, int* fd, SockAddr* peer, int* err);

// Asks for SO_SNDBUF/SO_RCVBUF of `bytes`; *snd and *rcv get what the kernel granted (it clamps to
// wmem_max/rmem_max silently, then doubles). Call before connect() or listen(): the window scale is
// agreed at the handshake, and accepted sockets inherit the listener's sizes.
void SetBufferSizes(int fd, int bytes, int* snd, int* rcv);

void SetNoDelay(int fd);
// Keep-alive probes after `idle_s` of silence, `count` of them `interval_s` apart: a silent host is found.
void SetKeepalive(int fd, int idle_s, int interval_s, int count);
// Unacknowledged data fails the socket after `ms` (TCP_USER_TIMEOUT), while an idle connection lives on.
void SetUserTimeout(int fd, unsigned ms);

// For a non-blocking connect(): 0 connected, -1 still in progress, else the errno it failed with.
int ConnectResult(int fd);

// What a failed socket call means to the caller, who maps it onto its own counters.
enum class ErrorClass { kTimeout, kPeerGone, kResource, kOther };
ErrorClass Classify(int err);

// Status for a failed socket call `op` on a connection with `peer`, saying what the error likely means.
Status ErrnoStatus(int err, const char* op, const std::string& peer, ErrorClass* cls);

}  // namespace ncclscope::sock

#endif  // NCCLSCOPE_SOCKET_SOCKET_UTIL_H_

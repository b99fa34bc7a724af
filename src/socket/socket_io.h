// Partial send/receive on non-blocking sockets, for handshakes and control messages that arrive in
// pieces: each call moves what the socket takes now and records the progress in *done, so a state machine
// resumes where it stopped. Inline: some run on the data path, where a call per chunk must cost no more
// than the bare syscall. Thread-safe (stateless).
#ifndef NCCLSCOPE_SOCKET_SOCKET_IO_H_
#define NCCLSCOPE_SOCKET_SOCKET_IO_H_

#include <errno.h>
#include <sys/socket.h>

#include <cstddef>

namespace ncclscope::sock {

enum class Io {
  kDone,   // *done == n
  kAgain,  // the socket would block; call again when it is ready
  kEof,    // the peer closed before all n bytes came (receive only)
  kError,  // errno in *err
};

// Sends p[*done, n) until done or the socket would block; EINTR retried, no SIGPIPE.
inline Io SendSome(int fd, const void* p, size_t n, size_t* done, int* err) {
  while (*done < n) {
    ssize_t k = send(fd, static_cast<const char*>(p) + *done, n - *done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      *done += static_cast<size_t>(k);
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Io::kAgain;
    *err = k < 0 ? errno : EPIPE;
    return Io::kError;
  }
  return Io::kDone;
}

// Receives into p[*done, n) until done or the socket would block; EINTR retried.
inline Io RecvSome(int fd, void* p, size_t n, size_t* done, int* err) {
  while (*done < n) {
    ssize_t k = recv(fd, static_cast<char*>(p) + *done, n - *done, MSG_DONTWAIT);
    if (k > 0) {
      *done += static_cast<size_t>(k);
      continue;
    }
    if (k == 0) return Io::kEof;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kAgain;
    *err = errno;
    return Io::kError;
  }
  return Io::kDone;
}

// Waits up to timeout_ms (-1: forever) for `events` (POLLIN, POLLOUT) on fd. A signal does not cut the
// wait short: it resumes for the time left. 1 ready, 0 timed out, -1 error (errno set).
int Wait(int fd, short events, int timeout_ms);

}  // namespace ncclscope::sock

#endif  // NCCLSCOPE_SOCKET_SOCKET_IO_H_

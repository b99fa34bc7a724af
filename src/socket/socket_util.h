// Small socket helpers for the TCP transport: non-blocking sockets with the options every data socket
// gets (no Nagle, keep-alives so a silent host is found, TCP_USER_TIMEOUT so unacknowledged data fails
// within the configured time while an idle connection lives on), and errno-to-Status mapping that
// names the peer. Thread-safe (stateless).
#ifndef NCCLSCOPE_SOCKET_SOCKET_UTIL_H_
#define NCCLSCOPE_SOCKET_SOCKET_UTIL_H_

#include <string>

#include "common/status.h"
#include "core/net_stats.h"

namespace ncclscope::net::tcp {

struct TcpConfig {
  int nsocks = 2;
  int nthreads = 2;  // 0: no helpers, the caller of test() moves the data (inline)
  int timeout_ms = 30000;
  int keepalive_s = 30;
  uint64_t min_slice = 64 * 1024;
  uint64_t socket_buffer = 0;  // bytes of SO_SNDBUF/SO_RCVBUF; 0: the kernel autotunes both
  std::string ifname_spec;
};

// Reads the tunables (called at init, listen and connect; never on the data path).
TcpConfig LoadTcpConfig();

// socket(family, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC); EMFILE/ENFILE become a clear resource error.
Result<int> NewSocket(int family, const std::string& what);

// Fixes the socket's buffer sizes where the configuration asks for it. Before connect() or listen(): the
// window scale is agreed at the handshake, and accepted sockets inherit the listener's sizes.
void SizeSocketBuffers(int fd, const TcpConfig& cfg);

// Options for a connected data socket.
void ConfigureDataSocket(int fd, const TcpConfig& cfg);

// Status for a failed socket call on a connection with `peer`, and the error kind to count.
Status ErrnoStatus(int err, const char* op, const std::string& peer, NetErrorKind* kind);

}  // namespace ncclscope::net::tcp

#endif  // NCCLSCOPE_SOCKET_SOCKET_UTIL_H_

// The TCP transport's tunables and its use of the socket toolkit: buffer sizes, the options every data
// socket gets (no Nagle, keep-alives, TCP_USER_TIMEOUT), and the error kind a failed call counts as.
#ifndef NCCLSCOPE_NET_TCP_TCP_CONFIG_H_
#define NCCLSCOPE_NET_TCP_TCP_CONFIG_H_

#include <cstdint>
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

// Fixes the socket's buffer sizes where the configuration asks for it (before connect() or listen()).
void SizeSocketBuffers(int fd, const TcpConfig& cfg);

// Options for a connected data socket.
void ConfigureDataSocket(int fd, const TcpConfig& cfg);

// Status for a failed socket call on a connection with `peer`, and the error kind to count.
Status ErrnoStatus(int err, const char* op, const std::string& peer, NetErrorKind* kind);

}  // namespace ncclscope::net::tcp

#endif  // NCCLSCOPE_NET_TCP_TCP_CONFIG_H_

#include "socket/socket_util.h"

#include <errno.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include <algorithm>

#include "common/log.h"
#include "common/params.h"

namespace ncclscope::net::tcp {

TcpConfig LoadTcpConfig() {
  const ParamValues& p = Params();
  TcpConfig c;
  c.nsocks = static_cast<int>(p.Int(ParamId::kNetSocketsPerConn));
  int threads = static_cast<int>(p.Int(ParamId::kNetHelperThreads));
  if (threads == 0) {
    // Helper threads pay off when they get CPUs of their own. On few CPUs they compete with NCCL's
    // spinning progress thread (measured with bench_net on 2 CPUs: 0.85x a plain socket pair at 4 MiB
    // with helpers); there the progress thread moving the data itself does better.
    cpu_set_t set;
    const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    threads = cpus < 4 ? -1 : c.nsocks;
  }
  c.nthreads = threads < 0 ? 0 : std::min(threads, c.nsocks);
  c.timeout_ms = static_cast<int>(p.Int(ParamId::kNetTimeoutMs));
  c.keepalive_s = static_cast<int>(p.Int(ParamId::kNetKeepaliveS));
  c.min_slice = static_cast<uint64_t>(p.Int(ParamId::kNetMinSliceBytes));
  c.socket_buffer = static_cast<uint64_t>(p.Int(ParamId::kNetSocketBufferBytes));
  c.ifname_spec = p.Str(ParamId::kSocketIfname);
  return c;
}

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

void SizeSocketBuffers(int fd, const TcpConfig& cfg) {
  if (cfg.socket_buffer == 0) return;
  const int bytes = static_cast<int>(std::min<uint64_t>(cfg.socket_buffer, INT32_MAX / 2));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  // The kernel clamps the request to net.core.wmem_max / rmem_max without an error, then doubles it.
  int snd = 0, rcv = 0;
  socklen_t len = sizeof(int);
  getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &len);
  getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len);
  if (std::min(snd, rcv) < 2 * bytes) {
    NCCLSCOPE_LOG_ONCE(NCCLSCOPE_WARN, subsys::kNet,
                       "NCCLSCOPE_NET_SOCKBUF=%d: the kernel granted %d bytes to send and %d to receive, less than "
                       "twice the asked size: net.core.wmem_max / rmem_max clamp it (raise them for more)",
                       bytes, snd, rcv);
  }
}

void ConfigureDataSocket(int fd, const TcpConfig& cfg) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  int idle = std::max(1, cfg.keepalive_s);
  int intvl = std::max(1, idle / 3);
  int cnt = 3;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
  unsigned int user_timeout = static_cast<unsigned int>(cfg.timeout_ms);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
}

Status ErrnoStatus(int err, const char* op, const std::string& peer, NetErrorKind* kind) {
  std::string msg = std::string(op) + " with peer " + peer + " failed: " + strerror(err);
  switch (err) {
    case ETIMEDOUT:
      *kind = NetErrorKind::kTimeout;
      return RemoteError(msg + " (no acknowledgement within the timeout: peer stopped or host silent)");
    case ECONNRESET:
    case EPIPE:
    case ECONNREFUSED:
    case EHOSTUNREACH:
    case ENETUNREACH:
      *kind = NetErrorKind::kRecv;
      return RemoteError(msg + " (peer process gone or connection reset)");
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case ENOBUFS:
      *kind = NetErrorKind::kResource;
      return SystemError(msg);
    default:
      *kind = NetErrorKind::kRecv;
      return SystemError(msg);
  }
}

}  // namespace ncclscope::net::tcp

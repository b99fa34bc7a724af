#include "net/tcp/tcp_config.h"

#include <sched.h>

#include <algorithm>
#include <climits>

#include "common/log.h"
#include "common/params.h"
#include "socket/socket_util.h"

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

void SizeSocketBuffers(int fd, const TcpConfig& cfg) {
  if (cfg.socket_buffer == 0) return;
  const int bytes = static_cast<int>(std::min<uint64_t>(cfg.socket_buffer, INT32_MAX / 2));
  int snd = 0, rcv = 0;
  sock::SetBufferSizes(fd, bytes, &snd, &rcv);
  if (std::min(snd, rcv) < 2 * bytes) {
    NCCLSCOPE_LOG_ONCE(NCCLSCOPE_WARN, subsys::kNet,
                       "NCCLSCOPE_NET_SOCKBUF=%d: the kernel granted %d bytes to send and %d to receive, less than "
                       "twice the asked size: net.core.wmem_max / rmem_max clamp it (raise them for more)",
                       bytes, snd, rcv);
  }
}

void ConfigureDataSocket(int fd, const TcpConfig& cfg) {
  sock::SetNoDelay(fd);
  const int idle = std::max(1, cfg.keepalive_s);
  sock::SetKeepalive(fd, idle, std::max(1, idle / 3), 3);
  sock::SetUserTimeout(fd, static_cast<unsigned>(cfg.timeout_ms));
}

Status ErrnoStatus(int err, const char* op, const std::string& peer, NetErrorKind* kind) {
  sock::ErrorClass cls;
  Status s = sock::ErrnoStatus(err, op, peer, &cls);
  switch (cls) {
    case sock::ErrorClass::kTimeout:
      *kind = NetErrorKind::kTimeout;
      break;
    case sock::ErrorClass::kResource:
      *kind = NetErrorKind::kResource;
      break;
    default:  // a peer gone and anything unexplained count as receive errors, as the callers expect
      *kind = NetErrorKind::kRecv;
  }
  return s;
}

}  // namespace ncclscope::net::tcp

// A listening TCP socket on 127.0.0.1 at a port the kernel picks, for the benchmarks' plain socket pairs.
#ifndef NCCLSCOPE_TESTS_BENCH_NET_LOOPBACK_LISTENER_H_
#define NCCLSCOPE_TESTS_BENCH_NET_LOOPBACK_LISTENER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ncclscope::bench {

// The listening socket, its address in *addr; -1 on failure (errno says why).
inline int LoopbackListener(sockaddr_in* addr) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  if (ls < 0) return -1;
  *addr = sockaddr_in{};
  addr->sin_family = AF_INET;
  addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(*addr);
  if (bind(ls, reinterpret_cast<sockaddr*>(addr), len) != 0 || listen(ls, 1) != 0 ||
      getsockname(ls, reinterpret_cast<sockaddr*>(addr), &len) != 0) {
    close(ls);
    return -1;
  }
  return ls;
}

}  // namespace ncclscope::bench

#endif  // NCCLSCOPE_TESTS_BENCH_NET_LOOPBACK_LISTENER_H_

#include "socket/sock_addr.h"

#include <arpa/inet.h>

namespace ncclscope::sock {

std::string SockAddrToString(const SockAddr& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (addr.sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &addr.in4.sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(addr.in4.sin_port));
  }
  if (addr.sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &addr.in6.sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(addr.in6.sin6_port));
  }
  return "<unknown address family>";
}

socklen_t SockAddrLen(const SockAddr& addr) {
  return addr.sa.sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

}  // namespace ncclscope::sock

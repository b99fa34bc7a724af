// Socket addresses: the IPv4/IPv6 union the handles carry on the wire, and its "host:port" form.
// Pure functions; thread-safe.
#ifndef NCCLSCOPE_SOCKET_SOCK_ADDR_H_
#define NCCLSCOPE_SOCKET_SOCK_ADDR_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

namespace ncclscope::sock {

union SockAddr {
  sockaddr sa;
  sockaddr_in in4;
  sockaddr_in6 in6;
};

// "1.2.3.4:80", "[::1]:80", or "<unknown address family>".
std::string SockAddrToString(const SockAddr& addr);
socklen_t SockAddrLen(const SockAddr& addr);

// True for an address one could connect to; anything else in a handle is bytes from a confused peer.
inline bool IsInet(const SockAddr& a) { return a.sa.sa_family == AF_INET || a.sa.sa_family == AF_INET6; }

}  // namespace ncclscope::sock

#endif  // NCCLSCOPE_SOCKET_SOCK_ADDR_H_

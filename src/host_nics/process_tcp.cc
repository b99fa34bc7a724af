#include "host_nics/process_tcp.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/tsan_lock.h"

namespace ncclscope {
namespace {

struct Seen {
  std::string nic;
  uint64_t retransmits = 0;
};

ABSL_CONST_INIT absl::Mutex mu(absl::kConstInit);
// Never freed: scrapes and dumps run until exit. Open sockets by inode, and the closed ones' totals by NIC.
std::map<uint64_t, Seen>* open_sockets ABSL_GUARDED_BY(mu) = nullptr;
std::map<std::string, uint64_t>* closed ABSL_GUARDED_BY(mu) = nullptr;
std::atomic<int> skipped_port{0};

// A socket address as the maps below key it: 16 bytes, IPv4 as IPv4-mapped IPv6; nullopt for other families.
// `port` (optional) receives the port.
std::optional<std::string> AddressKey(const sockaddr* addr, int* port = nullptr) {
  in6_addr key{};
  if (addr->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(addr);
    key.s6_addr[10] = key.s6_addr[11] = 0xff;
    std::memcpy(&key.s6_addr[12], &v4->sin_addr, 4);
    if (port != nullptr) *port = ntohs(v4->sin_port);
  } else if (addr->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(addr);
    key = v6->sin6_addr;
    if (port != nullptr) *port = ntohs(v6->sin6_port);
  } else {
    return std::nullopt;
  }
  return std::string(reinterpret_cast<const char*>(key.s6_addr), 16);
}

// The interface of each local address, by AddressKey.
std::map<std::string, std::string> InterfacesByAddress() {
  std::map<std::string, std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    if (std::optional<std::string> key = AddressKey(a->ifa_addr)) out.emplace(std::move(*key), a->ifa_name);
  }
  freeifaddrs(list);
  return out;
}

// The socket's local address as InterfacesByAddress keys it; "" when it has none or its port is skipped.
std::string LocalAddressKey(int fd) {
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return "";
  int port = 0;
  std::optional<std::string> key = AddressKey(reinterpret_cast<const sockaddr*>(&local), &port);
  if (!key || port == skipped_port.load(std::memory_order_relaxed)) return "";
  return std::move(*key);
}

uint64_t InodeOf(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? static_cast<uint64_t>(st.st_ino) : 0;
}

// This process's connected TCP sockets, by inode, but those of `skip`.
std::map<uint64_t, Seen> ScanSockets(const std::set<uint64_t>& skip) {
  std::map<uint64_t, Seen> found;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return found;
  const std::map<std::string, std::string> interfaces = InterfacesByAddress();
  int looked = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || ++looked > kMaxScannedFds) continue;
    const int fd = std::atoi(e->d_name);
    const uint64_t inode = InodeOf(fd);
    if (inode == 0 || skip.count(inode) > 0) continue;
    int protocol = 0;
    socklen_t len = sizeof(protocol);
    if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) != 0 || protocol != IPPROTO_TCP) continue;
    tcp_info info{};
    len = sizeof(info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 || info.tcpi_state == TCP_LISTEN) continue;
    const auto nic = interfaces.find(LocalAddressKey(fd));
    if (nic == interfaces.end()) continue;
    found[inode] = {nic->second, info.tcpi_total_retrans};
  }
  closedir(dir);
  return found;
}

}  // namespace

void SkipTcpLocalPort(int port) { skipped_port.store(port, std::memory_order_relaxed); }

std::vector<NicTcpRetransmits> OtherTcpRetransmits(const std::vector<int>& ours) {
  std::set<uint64_t> skip;
  for (int fd : ours) {
    if (const uint64_t inode = InodeOf(fd)) skip.insert(inode);
  }
  std::map<uint64_t, Seen> now = ScanSockets(skip);
  AnnotatedLock lock(&mu);
  if (open_sockets == nullptr) {
    open_sockets = new std::map<uint64_t, Seen>();
    closed = new std::map<std::string, uint64_t>();
  }
  for (const auto& [inode, before] : *open_sockets) {
    auto it = now.find(inode);
    if (it == now.end()) {
      // Gone: keep what it counted. (A socket our transport registers after a walk saw it also leaves this walk:
      // its retransmissions until then count here and again on its link. Connection set-up rarely has any.)
      (*closed)[before.nic] += before.retransmits;
    } else {
      it->second.retransmits = std::max(it->second.retransmits, before.retransmits);
    }
  }
  *open_sockets = std::move(now);
  std::map<std::string, uint64_t> by_nic = *closed;
  for (const auto& [inode, s] : *open_sockets) by_nic[s.nic] += s.retransmits;
  std::vector<NicTcpRetransmits> out;
  for (const auto& [nic, n] : by_nic) out.push_back({nic, n});
  return out;
}

}  // namespace ncclscope

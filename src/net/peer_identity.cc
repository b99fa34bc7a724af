#include "net/peer_identity.h"

#include <unistd.h>

#include <cstring>

#include "common/host.h"
#include "common/process_identity.h"

namespace ncclscope::net {

std::string PeerInfo::Describe() const {
  std::string who;
  if (global_rank >= 0) who = "global rank " + std::to_string(global_rank);
  if (pid > 0) who += (who.empty() ? "pid " : ", pid ") + std::to_string(pid);
  if (!host.empty()) who += (who.empty() ? "on " : " on ") + host;
  return who.empty() ? address : address + " (" + who + ")";
}

WireIdentity LocalWireIdentity() {
  WireIdentity w{};
  const int rank = GlobalRankFromEnv();
  w.global_rank_plus1 = rank >= 0 ? rank + 1 : 0;  // GlobalRankFromEnv caps ranks below INT32_MAX
  w.pid = static_cast<int32_t>(getpid());
  const std::string host = HostName();
  const size_t n = host.size() < sizeof(w.host) - 1 ? host.size() : sizeof(w.host) - 1;
  memcpy(w.host, host.data(), n);
  return w;
}

PeerInfo PeerFromWire(const std::string& address, const WireIdentity& w) {
  PeerInfo p;
  p.address = address;
  if (w.global_rank_plus1 > 0) p.global_rank = w.global_rank_plus1 - 1;
  if (w.pid > 0) p.pid = w.pid;
  for (size_t i = 0; i < sizeof(w.host) && w.host[i] != '\0'; ++i) {
    const char c = w.host[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '.' || c == '_';
    p.host += ok ? c : '?';
  }
  return p;
}

}  // namespace ncclscope::net

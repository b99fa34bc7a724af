// Shared by the verbs guest-tier fault tests: the environment of both children (rxe0, short IB timeouts),
// reading the NIC error counters of rxe0 in the child (the linked core library's SnapshotNetStats, i.e.
// what the Prometheus endpoint exports as ncclscope_nic_errors_total), rxe0's netdev and port state,
// and counting this process's fds, threads and RDMA resources.
#ifndef NCCLSCOPE_TESTS_VERBS_VERBS_GUEST_UTIL_H_
#define NCCLSCOPE_TESTS_VERBS_VERBS_GUEST_UTIL_H_

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/net_stats.h"
#if NCCLSCOPE_WITH_PROMETHEUS
#include "exporters/prometheus/metrics_endpoint.h"
#endif

namespace ncclscope::testing {

inline std::vector<std::pair<std::string, std::string>> VerbsGuestEnv() {
  return {{"NCCLSCOPE_TRANSPORT", "ib"}, {"NCCL_IB_HCA", "=rxe0"}, {"NCCL_IB_TIMEOUT", "12"},
          {"NCCL_IB_RETRY_CNT", "2"},   {"NCCLSCOPE_PROM_PORT", "-1"}};
}

// Errors counted on rxe0's NIC-total row, all kinds, and a "kind=n ..." description of the non-zero ones.
inline uint64_t Rxe0Errors(std::string* by_kind = nullptr) {
  uint64_t total = 0;
  for (const NetStatsRow& r : SnapshotNetStats().rows) {
    if (!r.nic_total || r.nic.find("rxe0") == std::string::npos) continue;
    for (int k = 0; k < static_cast<int>(NetErrorKind::kCount); ++k) {
      total += r.errors[k];
      if (by_kind != nullptr && r.errors[k] != 0) {
        *by_kind += std::string(NetErrorKindName(static_cast<NetErrorKind>(k))) + "=" + std::to_string(r.errors[k]) + " ";
      }
    }
  }
  return total;
}

// As VerbsGuestEnv, with this process's Prometheus endpoint on 127.0.0.1 (any free port).
inline std::vector<std::pair<std::string, std::string>> VerbsGuestEnvWithEndpoint() {
  auto env = VerbsGuestEnv();
  env.back() = {"NCCLSCOPE_PROM_PORT", "0"};
  env.push_back({"NCCLSCOPE_PROM_BIND", "127.0.0.1"});
  return env;
}

// Scrapes this process's own endpoint and sums ncclscope_nic_errors_total over rxe0's rows; the non-zero
// samples go to *lines. -1 when no endpoint runs (built without prometheus-cpp, or no port).
inline double ScrapeRxe0Errors(std::string* lines) {
#if NCCLSCOPE_WITH_PROMETHEUS
  const int port = MetricsEndpoint::Instance().port();
  if (port <= 0) return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string body;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(req) - 1)) {
      char buf[65536];
      for (ssize_t k; (k = recv(fd, buf, sizeof(buf), 0)) > 0;) body.append(buf, static_cast<size_t>(k));
    }
  }
  close(fd);
  double total = 0;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ncclscope_nic_errors_total{", 0) != 0 || line.find("rxe0") == std::string::npos) continue;
    const double v = std::stod(line.substr(line.rfind(' ') + 1));
    total += v;
    if (v != 0) *lines += line + "; ";
  }
  return total;
#else
  (void)lines;
  return -1;
#endif
}

inline std::string ReadFirstLine(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// The netdev under rxe0 (GID 0's), e.g. "rxenet0".
inline std::string Rxe0Netdev() { return ReadFirstLine("/sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0"); }
// "4: ACTIVE", "1: DOWN", …
inline std::string Rxe0PortState() { return ReadFirstLine("/sys/class/infiniband/rxe0/ports/1/state"); }

inline int CountDirEntries(const char* path) {
  int n = 0;
  if (DIR* d = opendir(path)) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// Threads of this process whose name (/proc/self/task/*/comm) is `name`.
inline int CountThreadsNamed(const std::string& name) {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') n += ReadFirstLine(std::string("/proc/self/task/") + e->d_name + "/comm") == name;
    }
    closedir(d);
  }
  return n;
}

// Lines of `rdma resource show <what>` that belong to this process ("... pid <pid> comm ..."); with
// `print`, echoes them (to see the format).
inline int CountRdmaResources(const char* what, bool print = false) {
  std::string cmd = std::string("rdma resource show ") + what + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  const std::string me = std::to_string(getpid());
  int n = 0;
  char line[2048];
  while (fgets(line, sizeof(line), p) != nullptr) {
    std::istringstream words(line);
    std::string w, prev;
    while (words >> w) {
      if (prev == "pid" && w == me) {
        ++n;
        if (print) fprintf(stderr, "  %s", line);
      }
      prev = w;
    }
  }
  pclose(p);
  return n;
}

}  // namespace ncclscope::testing

#endif  // NCCLSCOPE_TESTS_VERBS_VERBS_GUEST_UTIL_H_

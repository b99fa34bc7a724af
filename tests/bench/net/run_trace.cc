#include "run_trace.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/tcp.h>  // the kernel's tcp_info: glibc's lacks the limited-time counters
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

void RunTrace::Begin() {
  if (path == nullptr) return;
  End(nullptr, 0, 0);  // a sampler left from an unfinished size stops here
  polls_ = idle_polls_ = 0;
  threads_.clear();
  netstat_begin_ = ReadNetstat();
  getrusage(RUSAGE_SELF, &start_);
  t0_ = Now();
  stop_.store(false);
  std::atomic<int> ready{0};
  sampler_ = std::thread([this, &ready] {
    sampler_tid_ = static_cast<int>(gettid());
    ready.store(1);
    SamplerLoop();
  });
  while (ready.load() == 0) sched_yield();
}

void RunTrace::SamplerLoop() {
  while (!stop_.load(std::memory_order_relaxed)) {
    SampleThreads();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  SampleThreads();  // the last CPU times
}

// One pass over /proc/self/task: each thread's name, the CPU it last ran on, its user and system ticks.
void RunTrace::SampleThreads() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    const int tid = atoi(e->d_name);
    if (tid <= 0 || tid == sampler_tid_) continue;
    char file[64], stat[1024];
    snprintf(file, sizeof(file), "/proc/self/task/%d/stat", tid);
    const int fd = open(file, O_RDONLY);
    if (fd < 0) continue;
    const ssize_t n = read(fd, stat, sizeof(stat) - 1);
    close(fd);
    if (n <= 0) continue;
    stat[n] = '\0';
    char* open_paren = strchr(stat, '(');
    char* close_paren = strrchr(stat, ')');  // the name may hold spaces and parentheses
    if (open_paren == nullptr || close_paren == nullptr) continue;
    // The numbers after the name and the one-letter state (field 3): utime is field 14, stime 15, processor 39.
    long field[40] = {};
    char* p = close_paren + 3;
    for (int i = 4; i <= 39 && *p != '\0'; ++i) field[i] = strtol(p, &p, 10);
    ThreadSeen& t = threads_[tid];
    t.name.assign(open_paren + 1, close_paren);
    const int cpu = static_cast<int>(field[39]);
    t.samples_per_cpu[cpu] += 1;
    t.changes += t.last_cpu >= 0 && cpu != t.last_cpu;
    t.last_cpu = cpu;
    if (t.user_begin < 0) t.user_begin = field[14], t.sys_begin = field[15];
    t.user_end = field[14], t.sys_end = field[15];
  }
  closedir(d);
}

std::string RunTrace::ThreadLines(const std::string& prefix) const {
  const double tick = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
  std::string out;
  for (const auto& [tid, t] : threads_) {
    long total = 0, top = 0;
    int main_cpu = -1;
    for (const auto& [cpu, k] : t.samples_per_cpu) {
      total += k;
      if (k > top) top = k, main_cpu = cpu;
    }
    std::string name = t.name;
    for (char& c : name) c = c == ' ' ? '_' : c;
    char line[384];
    snprintf(line, sizeof(line), "kind=thread %s name=%s tid=%d samples=%ld cpu=%d share=%.3f cpus=%zu changes=%ld "
             "user=%.3f sys=%.3f\n", prefix.c_str(), name.c_str(), tid, total, main_cpu,
             total > 0 ? static_cast<double>(top) / total : 0.0, t.samples_per_cpu.size(), t.changes,
             (t.user_end - t.user_begin) * tick, (t.sys_end - t.sys_begin) * tick);
    out += line;
  }
  return out;
}

// Every established TCP socket of this process that moved data (the plain pair's or the transport's). `sent` counts
// each byte once (retransmissions left out) as soon as it left: the peer's last acknowledgements may still be on
// their way when the receiver has told us it has every byte.
std::string RunTrace::SocketLines(const std::string& prefix) {
  std::string out;
  for (int fd = 0; fd < 1024; ++fd) {
    tcp_info ti{};
    socklen_t len = sizeof(ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) continue;  // not a TCP socket
    if (ti.tcpi_state != 1 || (ti.tcpi_bytes_sent <= 1 && ti.tcpi_bytes_received <= 1)) continue;
    int sndbuf = 0, rcvbuf = 0;
    socklen_t sl = sizeof(int);
    getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &sl);
    getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &sl);
    using u64 = unsigned long long;
    char line[512];
    snprintf(line, sizeof(line),
             "kind=socket %s fd=%d sent=%llu received=%llu rtt_us=%u min_rtt_us=%u cwnd=%u retrans=%u "
             "bytes_retrans=%llu rcv_space=%u snd_wnd=%u busy_us=%llu rwnd_limited_us=%llu sndbuf_limited_us=%llu "
             "sndbuf=%d rcvbuf=%d\n",
             prefix.c_str(), fd, u64{ti.tcpi_bytes_sent - ti.tcpi_bytes_retrans}, u64{ti.tcpi_bytes_received},
             ti.tcpi_rtt, ti.tcpi_min_rtt, ti.tcpi_snd_cwnd, ti.tcpi_total_retrans, u64{ti.tcpi_bytes_retrans},
             ti.tcpi_rcv_space, ti.tcpi_snd_wnd, u64{ti.tcpi_busy_time}, u64{ti.tcpi_rwnd_limited},
             u64{ti.tcpi_sndbuf_limited}, sndbuf, rcvbuf);
    out += line;
  }
  return out;
}

// The host's TCP counters that tell a loss, a timeout or a full receive window (/proc/net/netstat and snmp).
std::map<std::string, long> RunTrace::ReadNetstat() {
  static const char* const kWanted[] = {
      "RetransSegs",        "TCPTimeouts",         "TCPLossProbes",  "TCPFastRetrans", "TCPSackRecovery",
      "TCPDSACKRecv",       "TCPSpuriousRTOs",     "TCPBacklogDrop", "TCPRcvQDrop",    "TCPZeroWindowDrop",
      "TCPToZeroWindowAdv", "TCPWantZeroWindowAdv", "PruneCalled",   "TCPRcvCollapsed"};
  std::map<std::string, long> out;
  for (const char* file : {"/proc/net/netstat", "/proc/net/snmp"}) {
    FILE* f = fopen(file, "r");
    if (f == nullptr) continue;
    char names[8192], values[8192];
    // Lines come in pairs: "Prefix: name name ..." then "Prefix: value value ...".
    while (fgets(names, sizeof(names), f) != nullptr && fgets(values, sizeof(values), f) != nullptr) {
      char *ns = nullptr, *vs = nullptr;
      char* n = strtok_r(names, " \n", &ns);
      char* v = strtok_r(values, " \n", &vs);
      while ((n = strtok_r(nullptr, " \n", &ns)) != nullptr && (v = strtok_r(nullptr, " \n", &vs)) != nullptr) {
        for (const char* w : kWanted) {
          if (strcmp(n, w) == 0) out[n] = atol(v);
        }
      }
    }
    fclose(f);
  }
  return out;
}

std::string RunTrace::NetstatLine(const std::string& prefix) const {
  std::string line = "kind=netstat " + prefix;
  for (const auto& [name, value] : ReadNetstat()) {
    auto before = netstat_begin_.find(name);
    line += " " + name + "=" + std::to_string(value - (before == netstat_begin_.end() ? value : before->second));
  }
  return line + "\n";
}

void RunTrace::End(const char* role, size_t size, size_t bytes) {
  if (path == nullptr || !sampler_.joinable()) return;
  stop_.store(true, std::memory_order_relaxed);
  sampler_.join();
  if (role == nullptr) return;
  rusage now;
  getrusage(RUSAGE_SELF, &now);
  const double t = Now();
  char prefix[128];
  snprintf(prefix, sizeof(prefix), "run=%d role=%s size=%zu", run, role, size);
  char line[512];
  snprintf(line, sizeof(line),
           "t=%.3f %s bytes=%zu secs=%.4f polls=%ld idle_polls=%ld nvcsw=%ld nivcsw=%ld user=%.3f sys=%.3f\n",
           t, prefix, bytes, t - t0_, polls_, idle_polls_,
           now.ru_nvcsw - start_.ru_nvcsw, now.ru_nivcsw - start_.ru_nivcsw,
           Seconds(now.ru_utime) - Seconds(start_.ru_utime), Seconds(now.ru_stime) - Seconds(start_.ru_stime));
  const std::string block = line + ThreadLines(prefix) + SocketLines(prefix) + NetstatLine(prefix);
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  // One write per process and size: the two processes' blocks never interleave.
  if (write(fd, block.data(), block.size()) < 0) perror("bench_net trace");
  close(fd);
}

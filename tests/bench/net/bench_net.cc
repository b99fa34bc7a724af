// bench_net: loopback bandwidth through the BUILT plugin (ncclNetPlugin_v12, dlopen'ed as NCCL does)
// next to a plain TCP socket pair measured in the same run, for 64 KiB .. 256 MiB messages; small-message
// latency (p50, p99 of half a ping-pong, both ways through the plugin); CPU seconds per GB moved (both
// processes, all threads). Each side is its own process.
// Usage: bench_net [--quick] [--bytes=PER_SIZE] [--lat-iters=N] [--sizes-max=BYTES] [--mib] [--runs=N]
//                  [--trace=FILE]; BENCH_MIN=BYTES: the smallest size; BENCH_PLUGIN=PATH: another build of the plugin
// --runs=N repeats the whole set-up N times: per run and size, the plain pair and the plugin in fresh processes
// (client and server of both pairs), back to back. It prints per size the plain pair's median, the plugin's
// min / median / max and the ratio of each to the plain median (a slow mode chosen at connection set-up cannot
// hide behind a median), and the paired ratio: the plugin against the plain pair measured next to it.
// (--mib prints MiB/s, perftest's unit, for the verbs comparison in tests/rdma/bench_verbs.sh).
// Honours NCCLSCOPE_NET_NSOCKS / NCCLSCOPE_NET_NTHREADS (the plugin's tunables) for sweeps.
// --trace=FILE appends, per process and size of the bandwidth runs, where each thread ran, how often the waiting
// thread polled without completing, CPU time and context switches, and each TCP socket's kernel counters: the
// evidence for what sets a slow run apart (run_trace.h).
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cacheline_probe.h"
#include "loopback_listener.h"
#include "ncclscope/abi/net.h"
#include "run_trace.h"

namespace {

double CpuSelf() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return Seconds(ru.ru_utime) + Seconds(ru.ru_stime);
}

void Die(const char* what) {
  fprintf(stderr, "bench_net: %s\n", what);
  exit(2);
}

void Quiet(ncclscope_log_level_t level, unsigned long, const char*, int, const char* fmt, ...) {
  if (level != NCCLSCOPE_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

void WriteAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t k = write(fd, c, n);
    if (k <= 0) Die("pipe write");
    c += k;
    n -= k;
  }
}
void ReadAll(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n) {
    ssize_t k = read(fd, c, n);
    if (k <= 0) Die("pipe read");
    c += k;
    n -= k;
  }
}

RunTrace g_trace;

struct Plan {
  std::vector<size_t> sizes;
  size_t bytes_per_size;
  int lat_iters;
};

int Iters(const Plan& p, size_t size) {
  return static_cast<int>(std::max<size_t>(4, p.bytes_per_size / size));
}

// ---------- plain TCP pair: one blocking stream ----------
// Returns {seconds, cpu seconds (both sides)} for the bandwidth run of each size, and latencies.
struct Result {
  std::vector<double> secs, cpu;
  std::vector<double> lat_us;
};

void PlainServer(int ctl, const Plan& plan) {
  sockaddr_in a;
  int ls = ncclscope::bench::LoopbackListener(&a);
  if (ls < 0) Die("plain listen");
  WriteAll(ctl, &a, sizeof(a));
  int fd = accept(ls, nullptr, nullptr);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  size_t maxs = *std::max_element(plan.sizes.begin(), plan.sizes.end());
  std::vector<char> buf(maxs);
  char ready = 1;
  WriteAll(ctl, &ready, 1);
  for (size_t s : plan.sizes) {
    int n = Iters(plan, s);
    g_trace.Begin();
    for (int i = 0; i < n; ++i) {
      size_t got = 0;
      while (got < s) {
        ssize_t k = recv(fd, buf.data() + got, s - got, 0);
        if (k <= 0) Die("plain recv");
        got += k;
        g_trace.Sample(false);
      }
    }
    char ack = 1;
    send(fd, &ack, 1, 0);
    g_trace.End("plain-recv", s, static_cast<size_t>(n) * s);
  }
  for (int i = 0; i < plan.lat_iters; ++i) {
    char b[8];
    size_t got = 0;
    while (got < 8) got += recv(fd, b + got, 8 - got, 0);
    send(fd, b, 8, 0);
  }
  close(fd);
  close(ls);
}

Result PlainClient(int ctl, const Plan& plan) {
  sockaddr_in a;
  ReadAll(ctl, &a, sizeof(a));
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) Die("plain connect");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  size_t maxs = *std::max_element(plan.sizes.begin(), plan.sizes.end());
  std::vector<char> buf(maxs, 1);
  char ready;
  ReadAll(ctl, &ready, 1);
  Result r;
  for (size_t s : plan.sizes) {
    int n = Iters(plan, s);
    double t0 = Now();
    g_trace.Begin();
    for (int i = 0; i < n; ++i) {
      size_t sent = 0;
      while (sent < s) {
        ssize_t k = send(fd, buf.data() + sent, s - sent, 0);
        if (k <= 0) Die("plain send");
        sent += k;
        g_trace.Sample(false);
      }
    }
    char ack;
    recv(fd, &ack, 1, 0);
    r.secs.push_back(Now() - t0);
    g_trace.End("plain-send", s, static_cast<size_t>(n) * s);
  }
  for (int i = 0; i < plan.lat_iters; ++i) {
    char b[8] = {0};
    double t0 = Now();
    send(fd, b, 8, 0);
    size_t got = 0;
    while (got < 8) got += recv(fd, b + got, 8 - got, 0);
    r.lat_us.push_back((Now() - t0) * 1e6 / 2);
  }
  close(fd);
  return r;
}

// ---------- through the plugin ----------
const ncclscope_net_v12_t* LoadPlugin() {
  const char* path = getenv("BENCH_PLUGIN") != nullptr ? getenv("BENCH_PLUGIN") : NCCLSCOPE_PLUGIN_PATH;
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) Die(dlerror());
  auto* t = static_cast<const ncclscope_net_v12_t*>(dlsym(lib, "ncclNetPlugin_v12"));
  if (t == nullptr) Die("ncclNetPlugin_v12 missing");
  return t;
}

void Wait(const ncclscope_net_v12_t* t, void* req) {
  int done = 0, sizes[64];
  static const bool sleep_when_idle = getenv("BENCH_SLEEP") != nullptr;  // read once, not per poll
  while (!done) {
    if (t->test(req, &done, sizes) != 0) Die("test failed");
    g_trace.Sample(!done);
    if (!done && sleep_when_idle) usleep(50);
    else if (!done) sched_yield();  // NCCL's progress thread yields when idle
  }
}

constexpr int kDepth = 4;  // requests in flight, like NCCL's pipelined steps

void PluginServer(int ctl, const Plan& plan) {
  const ncclscope_net_v12_t* t = LoadPlugin();
  void* ctx = nullptr;
  ncclscope_net_comm_config_t cfg{-1};
  if (t->init(&ctx, 1, &cfg, Quiet, nullptr) != 0) Die("init");
  char handle[128];
  void* lc = nullptr;
  if (t->listen(ctx, 0, handle, &lc) != 0) Die("listen");
  WriteAll(ctl, handle, sizeof(handle));
  void* rc = nullptr;
  ncclscope_net_device_handle_t* dh = nullptr;
  while (rc == nullptr) {
    if (t->accept(lc, &rc, &dh) != 0) Die("accept");
  }
  size_t maxs = *std::max_element(plan.sizes.begin(), plan.sizes.end());
  // One buffer shared by the requests in flight (as ib_write_bw does): the same working set as the
  // plain pair, so the comparison measures the transport, not the cache footprint of the bench.
  std::vector<char> buf(maxs);
  void* mh = nullptr;  // registered once, as NCCL registers its buffers
  if (t->regMr(rc, buf.data(), buf.size(), NCCLSCOPE_PTR_HOST, &mh) != 0) Die("regMr");
  int tag = 0;
  char ready = 1;
  WriteAll(ctl, &ready, 1);  // buffers touched: the sender may start its clock
  for (size_t s : plan.sizes) {
    int n = Iters(plan, s);
    g_trace.Begin();
    void* reqs[kDepth] = {};
    for (int i = 0; i < n + kDepth; ++i) {
      int k = i % kDepth;
      if (reqs[k] != nullptr) Wait(t, reqs[k]);
      reqs[k] = nullptr;
      if (i >= n) continue;
      void* data = buf.data();
      size_t cap = s;
      while (reqs[k] == nullptr) {
        if (t->irecv(rc, 1, &data, &cap, &tag, &mh, nullptr, &reqs[k]) != 0) Die("irecv");
      }
    }
    char ack = 1;
    WriteAll(ctl, &ack, 1);
    g_trace.End("plugin-recv", s, static_cast<size_t>(n) * s);
  }
  // Latency: a ping-pong of 8-byte messages, the pong on a second connection back to the client.
  char back[128];
  ReadAll(ctl, back, sizeof(back));
  void* sc = nullptr;
  while (sc == nullptr) {
    if (t->connect(ctx, 0, back, &sc, &dh) != 0) Die("connect back");
  }
  void* smh = nullptr;
  if (t->regMr(sc, buf.data(), buf.size(), NCCLSCOPE_PTR_HOST, &smh) != 0) Die("regMr");
  // Each ping's receive is posted before the previous pong is sent, as NCCL posts receives ahead.
  auto post_recv = [&]() {
    void* data = buf.data();
    size_t cap = 8;
    void* req = nullptr;
    while (req == nullptr) t->irecv(rc, 1, &data, &cap, &tag, &mh, nullptr, &req);
    return req;
  };
  void* ping = post_recv();
  for (int i = 0; i < plan.lat_iters; ++i) {
    Wait(t, ping);
    if (i + 1 < plan.lat_iters) ping = post_recv();
    void* req = nullptr;
    while (req == nullptr) t->isend(sc, buf.data(), 8, 0, smh, nullptr, &req);
    Wait(t, req);
  }
  t->deregMr(sc, smh);
  t->closeSend(sc);
  t->deregMr(rc, mh);
  t->closeRecv(rc);
  t->closeListen(lc);
  t->finalize(ctx);
}

Result PluginClient(int ctl, const Plan& plan) {
  const ncclscope_net_v12_t* t = LoadPlugin();
  void* ctx = nullptr;
  ncclscope_net_comm_config_t cfg{-1};
  if (t->init(&ctx, 1, &cfg, Quiet, nullptr) != 0) Die("init");
  char handle[128];
  ReadAll(ctl, handle, sizeof(handle));
  void* sc = nullptr;
  ncclscope_net_device_handle_t* dh = nullptr;
  while (sc == nullptr) {
    if (t->connect(ctx, 0, handle, &sc, &dh) != 0) Die("connect");
  }
  size_t maxs = *std::max_element(plan.sizes.begin(), plan.sizes.end());
  std::vector<char> buf(maxs, 1);
  void* mh = nullptr;
  if (t->regMr(sc, buf.data(), buf.size(), NCCLSCOPE_PTR_HOST, &mh) != 0) Die("regMr");
  char ready;
  ReadAll(ctl, &ready, 1);
  Result r;
  for (size_t s : plan.sizes) {
    int n = Iters(plan, s);
    double t0 = Now();
    g_trace.Begin();
    void* reqs[kDepth] = {};
    for (int i = 0; i < n + kDepth; ++i) {
      int k = i % kDepth;
      if (reqs[k] != nullptr) Wait(t, reqs[k]);
      reqs[k] = nullptr;
      if (i >= n) continue;
      while (reqs[k] == nullptr) {
        if (t->isend(sc, buf.data(), s, 0, mh, nullptr, &reqs[k]) != 0) Die("isend");
      }
    }
    char ack;
    ReadAll(ctl, &ack, 1);  // the receiver has every byte
    r.secs.push_back(Now() - t0);
    g_trace.End("plugin-send", s, static_cast<size_t>(n) * s);
  }
  // Latency: half the round trip of an 8-byte ping-pong (ib_write_lat's measure); the pong comes back on a
  // second connection, server to client.
  char back[128];
  void* lc = nullptr;
  if (t->listen(ctx, 0, back, &lc) != 0) Die("listen back");
  WriteAll(ctl, back, sizeof(back));
  void* rc = nullptr;
  while (rc == nullptr) {
    if (t->accept(lc, &rc, &dh) != 0) Die("accept back");
  }
  void* rmh = nullptr;
  if (t->regMr(rc, buf.data(), buf.size(), NCCLSCOPE_PTR_HOST, &rmh) != 0) Die("regMr");
  int tag = 0;
  for (int i = 0; i < plan.lat_iters; ++i) {
    double t0 = Now();
    void* data = buf.data();
    size_t cap = 8;
    void* pong = nullptr;  // posted before the ping, as NCCL posts receives ahead
    while (pong == nullptr) t->irecv(rc, 1, &data, &cap, &tag, &rmh, nullptr, &pong);
    void* req = nullptr;
    while (req == nullptr) t->isend(sc, buf.data(), 8, 0, mh, nullptr, &req);
    Wait(t, req);
    Wait(t, pong);
    r.lat_us.push_back((Now() - t0) * 1e6 / 2);
  }
  t->deregMr(rc, rmh);
  t->closeRecv(rc);
  t->closeListen(lc);
  t->deregMr(sc, mh);
  t->closeSend(sc);
  t->finalize(ctx);
  return r;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

// Runs server in a child and client here; returns client timings plus CPU of both processes.
template <class Server, class Client>
Result RunPairBench(Server server, Client client, const Plan& plan, double* cpu_total) {
  int sv[2];
  socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
  pid_t pid = fork();
  if (pid == 0) {
    close(sv[1]);
    server(sv[0], plan);
    _exit(0);
  }
  close(sv[0]);
  double c0 = CpuSelf();
  Result r = client(sv[1], plan);
  double c1 = CpuSelf();
  int status;
  rusage ru;
  wait4(pid, &status, 0, &ru);
  close(sv[1]);
  *cpu_total = (c1 - c0) + Seconds(ru.ru_utime) + Seconds(ru.ru_stime);
  return r;
}

// One size of one run: the plain pair and the plugin pair, each in fresh processes (so the plugin is loaded and
// connected anew), one right after the other; `plugin_first` alternates the order between runs. The host's speed
// changes over seconds (a VM's neighbours): measured back to back, both pairs see the same host, and their ratio
// shows what the plugin itself does. Returns the seconds of each through `plain_secs` and `plugin_secs`.
void RunFresh(const Plan& plan, bool plugin_first, double* plain_secs, double* plugin_secs) {
  int fd[2];
  if (pipe(fd) != 0) Die("pipe");
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    double cpu = 0, secs[2];
    for (int k = 0; k < 2; ++k) {
      const bool plugin = (k == 0) == plugin_first;
      Result r = plugin ? RunPairBench(PluginServer, PluginClient, plan, &cpu)
                        : RunPairBench(PlainServer, PlainClient, plan, &cpu);
      secs[plugin] = r.secs[0];
    }
    WriteAll(fd[1], secs, sizeof(secs));
    _exit(0);
  }
  close(fd[1]);
  double secs[2];
  ReadAll(fd[0], secs, sizeof(secs));
  close(fd[0]);
  int status;
  waitpid(pid, &status, 0);
  *plain_secs = secs[0];
  *plugin_secs = secs[1];
}

// Traced runs note how far apart the host keeps the first two CPUs we may use just before each pair
// (cacheline_probe.h): on a VM a far placement makes every copy between the two ends dearer, for the plain pair
// and the plugin alike.
void TraceCpuDistance(int run, size_t size) {
  int a, b;
  if (!ncclscope::bench::FirstTwoAllowedCpus(&a, &b)) return;
  const double ns = ncclscope::bench::CachelineRoundTripNs(a, b, 20);
  FILE* f = fopen(g_trace.path, "a");
  if (f == nullptr) return;
  fprintf(f, "kind=host run=%d role=pair size=%zu cpus=%d,%d cacheline_rtt_ns=%.0f\n", run, size, a, b, ns);
  fclose(f);
}

int Spread(const Plan& plan, int runs, double unit) {
  const size_t nsizes = plan.sizes.size();
  std::vector<std::vector<double>> plain(nsizes), plugin(nsizes), paired(nsizes);
  for (int r = 0; r < runs; ++r) {
    g_trace.run = r;
    for (size_t i = 0; i < nsizes; ++i) {
      Plan one = plan;
      one.sizes = {plan.sizes[i]};
      one.lat_iters = 1;  // the latency phase is not measured here
      if (g_trace.path != nullptr) TraceCpuDistance(r, plan.sizes[i]);
      double a, b;
      RunFresh(one, r % 2 == 1, &a, &b);
      const double bytes = static_cast<double>(Iters(plan, plan.sizes[i])) * plan.sizes[i];
      plain[i].push_back(bytes / a / unit);
      plugin[i].push_back(bytes / b / unit);
      paired[i].push_back(a / b);
    }
  }
  printf("bench_net --runs=%d: loopback, %ld online CPUs, per run and size a plain pair and the plugin in fresh "
         "processes, back to back (%s)\n", runs, sysconf(_SC_NPROCESSORS_ONLN), unit == 1e9 ? "GB/s" : "MiB/s");
  printf("%10s %10s %10s %10s %10s %24s %24s\n", "size", "plain med", "plugin min", "plugin med", "plugin max",
         "vs plain med: min/med/max", "paired: min/med/max");
  for (size_t i = 0; i < nsizes; ++i) {
    std::vector<double> p = plugin[i], q = paired[i];
    std::sort(p.begin(), p.end());
    std::sort(q.begin(), q.end());
    const double pm = Percentile(plain[i], 0.5), lo = p.front(), med = Percentile(p, 0.5), hi = p.back();
    char label[32];
    if (plan.sizes[i] >= (1u << 20)) snprintf(label, sizeof(label), "%zu MiB", plan.sizes[i] >> 20);
    else snprintf(label, sizeof(label), "%zu KiB", plan.sizes[i] >> 10);
    printf("%10s %10.3f %10.3f %10.3f %10.3f %9.2fx/%.2fx/%.2fx %11.2fx/%.2fx/%.2fx\n", label, pm, lo, med, hi, lo / pm,
           med / pm, hi / pm, q.front(), Percentile(q, 0.5), q.back());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("NCCLSCOPE_SOCKET_IFNAME", "lo", 0);
  setenv("NCCLSCOPE_TRANSPORT", "tcp", 0);
  setenv("NCCLSCOPE_PROM_PORT", "-1", 0);
  Plan plan;
  plan.bytes_per_size = size_t{1} << 30;
  plan.lat_iters = 2000;
  size_t max_size = size_t{256} << 20;
  double unit = 1e9;
  int runs = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--quick") == 0) {
      plan.bytes_per_size = size_t{256} << 20;
      plan.lat_iters = 500;
    } else if (strncmp(argv[i], "--bytes=", 8) == 0) {
      plan.bytes_per_size = strtoull(argv[i] + 8, nullptr, 0);
    } else if (strncmp(argv[i], "--lat-iters=", 12) == 0) {
      plan.lat_iters = atoi(argv[i] + 12);
    } else if (strcmp(argv[i], "--mib") == 0) {
      unit = 1048576.0;
    } else if (strncmp(argv[i], "--sizes-max=", 12) == 0) {
      max_size = strtoull(argv[i] + 12, nullptr, 0);
    } else if (strncmp(argv[i], "--runs=", 7) == 0) {
      runs = atoi(argv[i] + 7);
    } else if (strncmp(argv[i], "--trace=", 8) == 0) {
      g_trace.path = argv[i] + 8;
    }
  }
  size_t min_size = getenv("BENCH_MIN") ? strtoull(getenv("BENCH_MIN"), nullptr, 0) : (64 << 10);
  for (size_t s = min_size; s <= max_size; s *= 4) plan.sizes.push_back(s);
  size_t total = 0;
  for (size_t s : plan.sizes) total += Iters(plan, s) * s;

  if (runs > 0) return Spread(plan, runs, unit);
  double plain_cpu = 0, plugin_cpu = 0;
  Result plain = RunPairBench(PlainServer, PlainClient, plan, &plain_cpu);
  Result plugin = RunPairBench(PluginServer, PluginClient, plan, &plugin_cpu);

  const char* ns = getenv("NCCLSCOPE_NET_NSOCKS");
  printf("bench_net: loopback, %ld online CPUs, plugin transport %s, sockets/connection %s, %d requests in flight\n",
         sysconf(_SC_NPROCESSORS_ONLN), getenv("NCCLSCOPE_TRANSPORT"), ns ? ns : "default", kDepth);
  const char* u = unit == 1e9 ? "GB/s" : "MiB/s";
  printf("%10s %9s %-5s %9s %-5s %8s\n", "size", "plain", u, "plugin", u, "ratio");
  for (size_t i = 0; i < plan.sizes.size(); ++i) {
    double bytes = static_cast<double>(Iters(plan, plan.sizes[i])) * plan.sizes[i];
    double a = bytes / plain.secs[i] / unit, b = bytes / plugin.secs[i] / unit;
    char label[32];
    if (plan.sizes[i] >= (1u << 20)) snprintf(label, sizeof(label), "%zu MiB", plan.sizes[i] >> 20);
    else snprintf(label, sizeof(label), "%zu KiB", plan.sizes[i] >> 10);
    printf("%10s %15.3f %15.3f %7.2fx\n", label, a, b, b / a);
  }
  printf("8-byte latency (half round trip): plain p50 %.1f us p99 %.1f us; plugin p50 %.1f us p99 %.1f us\n",
         Percentile(plain.lat_us, 0.5), Percentile(plain.lat_us, 0.99), Percentile(plugin.lat_us, 0.5),
         Percentile(plugin.lat_us, 0.99));
  printf("CPU seconds per GB moved (both processes): plain %.3f, plugin %.3f\n", plain_cpu / (total / 1e9),
         plugin_cpu / (total / 1e9));
  return 0;
}

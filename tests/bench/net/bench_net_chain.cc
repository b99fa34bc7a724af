// bench_net_chain: what ncclscope costs when it wraps another net plugin (NCCLSCOPE_NET_CHAIN), on loopback, each
// side (receiver, sender) its own process, every run in fresh processes. Two arms:
//   direct:  the inner plugin dlopen'ed by path and driven at its own table version (newest it exports);
//   wrapped: the built ncclscope plugin's ncclNetPlugin_v12 with NCCLSCOPE_NET_CHAIN=<inner path>.
// 1. Cost per call, 8-byte messages: isend, irecv, test that reports not done (receiver, before the sender has
//    sent), the completing test on each side (the bytes already in the socket). Both arms live in the same two
//    processes, one connection each, taking turns in blocks of 50 messages. Each call is timed on its own (TSC);
//    per run the mean of the middle half of each kind's calls; the figure is the wrapped arm's minus the direct
//    arm's of the same run, median (min..max) over the runs.
// 2. Bandwidth, 4 requests in flight as bench_net, at 1/4/16/64 MiB: per run and size a process pair per arm,
//    back to back, order alternating; wrapped / direct of the same run, min/median/max over the runs, and each
//    arm's median.
// 3. The same ratio with both arms in one process pair taking turns in blocks (--inter-runs=N runs, 0: none),
//    which the VM's speed changes between process pairs do not reach.
// Usage: bench_net_chain [--quick] [--inner=PATH|v8|v10|v12] [--inner-version=N] [--wrapper=PATH] [--harness]
//                        [--call-runs=N] [--iters=N] [--call-bytes=N] [--runs=N] [--bytes=PER_SIZE]
//                        [--inter-runs=N] [--sizes=MiB,MiB,...] [--no-calls] [--no-bw]
// --inner=vN picks build/lib/libnccl-net-inner-tcp-vN.so; --harness drives the plain ncclscope plugin (TCP) in
// both arms, without a chain: an A/A run that shows what the harness itself resolves. Prints figures only; it
// asserts nothing about them.
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"

namespace {

using ncclscope::testing::CaptureLogger;
using ncclscope::testing::ConnectToPeer;
using ncclscope::testing::ListenAndAccept;
using ncclscope::testing::NowS;
using ncclscope::testing::PluginNet;
using ncclscope::testing::RecvBytes;
using ncclscope::testing::RunPair;
using ncclscope::testing::SendBytes;

void Die(const std::string& what) {
  fprintf(stderr, "bench_net_chain: %s\n", what.c_str());
  exit(2);
}

// ---------- time ----------
// The TSC, fenced on both sides so the timed call neither starts early nor ends late; calibrated once in the
// parent (the children inherit it).
double g_ns_per_tick = 1.0;
double g_timer_ns = 0.0;  // median of an empty timed region, taken off the per-call figures

inline uint64_t Ticks() {
  _mm_lfence();
  uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The mean of the middle half: as robust as the median to a descheduled call, but finer than the clock's step
// (this VM's TSC advances in steps of 10 ns, so medians of single calls come in 10 ns steps).
double MiddleMean(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t lo = v.size() / 4, hi = std::max(lo + 1, v.size() - v.size() / 4);
  double sum = 0;
  for (size_t i = lo; i < hi; ++i) sum += v[i];
  return sum / static_cast<double>(hi - lo);
}

void CalibrateTimer() {
  const double s0 = NowS();
  const uint64_t t0 = Ticks();
  while (NowS() - s0 < 0.1) {
  }
  const uint64_t t1 = Ticks();
  const double s1 = NowS();
  g_ns_per_tick = (s1 - s0) * 1e9 / static_cast<double>(t1 - t0);
  std::vector<double> empty(20000);
  for (double& e : empty) {
    const uint64_t a = Ticks();
    const uint64_t b = Ticks();
    e = static_cast<double>(b - a) * g_ns_per_tick;
  }
  g_timer_ns = MiddleMean(empty);
}

// A retry loop (a null request, a test not done) that has not moved for 30 s ends the process: the run fails
// with the arm's exit code instead of hanging. Checked every 4096 tries, outside the timed calls.
struct Patience {
  const char* what;
  long tries = 0;
  double since = NowS();
  void Check() {
    if (++tries % 4096 != 0 || NowS() - since < 30) return;
    fprintf(stderr, "bench_net_chain [pid %d]: %s made no progress for 30 s\n", getpid(), what);
    _exit(10);
  }
};

// ---------- arms ----------
struct Arm {
  const char* label;
  std::string path;
  int version;
  std::vector<std::pair<std::string, std::string>> env;  // on top of the harness's (loopback, TCP, no endpoint)
};

std::unique_ptr<PluginNet> OpenArm(const Arm& arm) {
  std::string err;
  std::unique_ptr<PluginNet> net = PluginNet::OpenPath(arm.path, arm.version, &err);
  if (net == nullptr) Die(arm.path + ": " + err);
  if (net->Init(0x5eed, CaptureLogger, nullptr) != 0) Die(std::string(arm.label) + ": init failed");
  return net;
}

// The newest table of the library at `path`, probed in a child so this process never loads it (every
// measured process loads its plugin fresh).
int ProbeVersion(const std::string& path) {
  pid_t pid = fork();
  if (pid == 0) _exit(PluginNet::NewestVersion(path));
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

// ---------- results back from the children ----------
void WriteOut(int fd, const std::vector<double>& v) {
  if (write(fd, v.data(), v.size() * sizeof(double)) != static_cast<ssize_t>(v.size() * sizeof(double))) _exit(3);
}
std::vector<double> ReadOut(int fd, size_t n) {
  std::vector<double> v(n);
  if (read(fd, v.data(), n * sizeof(double)) != static_cast<ssize_t>(n * sizeof(double))) Die("child result");
  return v;
}

// Runs receiver and sender in fresh processes (with `env` on top of the harness's: loopback, TCP, no metrics
// endpoint); each child writes `nr` / `ns` doubles to its pipe.
void RunPairOut(const std::string& what, const std::vector<std::pair<std::string, std::string>>& env,
                const std::function<void(int ctl, int out)>& receiver,
                const std::function<void(int ctl, int out)>& sender, size_t nr, size_t ns, std::vector<double>* rout,
                std::vector<double>* sout) {
  int rp[2], sp[2];
  if (pipe(rp) != 0 || pipe(sp) != 0) Die("pipe");
  auto res = RunPair(
      [&](int ctl) {
        receiver(ctl, rp[1]);
        return 0;
      },
      [&](int ctl) {
        sender(ctl, sp[1]);
        return 0;
      },
      env, 300);
  close(rp[1]);
  close(sp[1]);
  if (res.recv_status != 0 || res.send_status != 0) {
    Die(what + " failed: receiver status " + std::to_string(res.recv_status) + ", sender " +
        std::to_string(res.send_status));
  }
  *rout = ReadOut(rp[0], nr);
  *sout = ReadOut(sp[0], ns);
  close(rp[0]);
  close(sp[0]);
}

// ---------- 1. cost per call ----------
struct CallPlan {
  int iters = 10000;
  int warmup = 500;
  size_t bytes = 8;
};
CallPlan g_call;
constexpr int kIdleTests = 4;  // not-done tests per receive, before the sender is told to send

// Kinds, in print order; the receiver measures irecv, idle test and its completing test, the sender the rest.
enum { kIsend, kIrecv, kTestIdle, kTestDoneSend, kTestDoneRecv, kKinds };
const char* const kKindName[kKinds] = {"isend", "irecv", "test, not done (recv)", "test, completing (send)",
                                       "test, completing (recv)"};

double NsOf(uint64_t t0, uint64_t t1) { return static_cast<double>(t1 - t0) * g_ns_per_tick - g_timer_ns; }

// Both arms live in each process of a call-cost run, one connection each, and take turns in blocks of kBlock
// messages, so both see the same host (this VM's speed moves between runs). The arm of a message: the same
// sequence on both sides. (The wrapped arm's chain loads the inner library the direct arm has loaded: one copy,
// as both arms run the inner's same code.)
constexpr int kBlock = 50;
int g_first_arm = 0;  // the arm of the first block, alternating between runs
int ArmOf(int i) { return (i / kBlock + g_first_arm) % 2; }

struct Side {
  std::unique_ptr<PluginNet> net;
  void *lc = nullptr, *comm = nullptr, *mh = nullptr;
};

void CallReceiver(const Arm arms[2], int ctl, int out) {
  Side side[2];
  std::vector<char> buf(std::max<size_t>(g_call.bytes, 64));
  for (int k = 0; k < 2; ++k) {
    Side& x = side[(k + g_first_arm) % 2];
    x.net = OpenArm(arms[(k + g_first_arm) % 2]);
    if (!ListenAndAccept(*x.net, ctl, &x.lc, &x.comm)) _exit(4);
    if (x.net->RegMr(x.comm, buf.data(), buf.size(), &x.mh) != 0) _exit(5);
  }
  std::vector<double> irecv[2], idle[2], done[2];
  int count[2] = {0, 0};
  for (int i = 0; i < 2 * (g_call.warmup + g_call.iters); ++i) {
    const int a = ArmOf(i);
    PluginNet& net = *side[a].net;
    const bool keep = count[a]++ >= g_call.warmup;
    void* data = buf.data();
    size_t size = g_call.bytes;
    int tag = 0, d = 0, sizes[8];
    void* req = nullptr;
    uint64_t t0 = 0, t1 = 0;
    for (Patience p{"irecv (no request)"}; req == nullptr; p.Check()) {  // null: retry; the posting call is timed
      t0 = Ticks();
      int r = net.Irecv(side[a].comm, 1, &data, &size, &tag, &side[a].mh, nullptr, &req);
      t1 = Ticks();
      if (r != 0) _exit(6);
    }
    if (keep) irecv[a].push_back(NsOf(t0, t1));
    for (int k = 0; k < kIdleTests; ++k) {  // the sender waits for our word: nothing can arrive yet
      t0 = Ticks();
      int r = net.Test(req, &d, sizes);
      t1 = Ticks();
      if (r != 0 || d != 0) _exit(7);
      if (keep) idle[a].push_back(NsOf(t0, t1));
    }
    char go = 'g', sent = 0;
    if (!SendBytes(ctl, &go, 1) || !RecvBytes(ctl, &sent, 1)) _exit(8);
    d = 0;
    for (Patience p{"test of a receive"}; d == 0; p.Check()) {  // the sender's test said done: bytes are here
      t0 = Ticks();
      int r = net.Test(req, &d, sizes);
      t1 = Ticks();
      if (r != 0) _exit(9);
    }
    if (keep) done[a].push_back(NsOf(t0, t1));
  }
  WriteOut(out, {MiddleMean(irecv[0]), MiddleMean(idle[0]), MiddleMean(done[0]), MiddleMean(irecv[1]),
                 MiddleMean(idle[1]), MiddleMean(done[1])});
  for (Side& x : side) {
    x.net->DeregMr(x.comm, x.mh);
    x.net->CloseRecv(x.comm);
    x.net->CloseListen(x.lc);
    x.net->Finalize();
  }
}

void CallSender(const Arm arms[2], int ctl, int out) {
  Side side[2];
  std::vector<char> buf(std::max<size_t>(g_call.bytes, 64), 1);
  for (int k = 0; k < 2; ++k) {
    Side& x = side[(k + g_first_arm) % 2];
    x.net = OpenArm(arms[(k + g_first_arm) % 2]);
    if (!ConnectToPeer(*x.net, ctl, &x.comm)) _exit(4);
    if (x.net->RegMr(x.comm, buf.data(), buf.size(), &x.mh) != 0) _exit(5);
  }
  std::vector<double> isend[2], done[2];
  int count[2] = {0, 0};
  for (int i = 0; i < 2 * (g_call.warmup + g_call.iters); ++i) {
    const int a = ArmOf(i);
    PluginNet& net = *side[a].net;
    const bool keep = count[a]++ >= g_call.warmup;
    char go = 0;
    if (!RecvBytes(ctl, &go, 1)) _exit(8);  // the receive is posted and its clear-to-send in our socket
    void* req = nullptr;
    uint64_t t0 = 0, t1 = 0;
    for (Patience p{"isend (no request)"}; req == nullptr; p.Check()) {
      t0 = Ticks();
      int r = net.Isend(side[a].comm, buf.data(), g_call.bytes, 0, side[a].mh, nullptr, &req);
      t1 = Ticks();
      if (r != 0) _exit(6);
    }
    if (keep) isend[a].push_back(NsOf(t0, t1));
    int d = 0, sizes[8];
    for (Patience p{"test of a send"}; d == 0; p.Check()) {
      t0 = Ticks();
      int r = net.Test(req, &d, sizes);
      t1 = Ticks();
      if (r != 0) _exit(9);
    }
    if (keep) done[a].push_back(NsOf(t0, t1));
    char sent = 's';
    if (!SendBytes(ctl, &sent, 1)) _exit(8);
  }
  WriteOut(out, {MiddleMean(isend[0]), MiddleMean(done[0]), MiddleMean(isend[1]), MiddleMean(done[1])});
  for (Side& x : side) {
    x.net->DeregMr(x.comm, x.mh);
    x.net->CloseSend(x.comm);
    x.net->Finalize();
  }
}

// per[arm][run][kind]
void CallCost(const Arm arms[2], int runs) {
  std::vector<std::vector<double>> per[2];
  for (int r = 0; r < runs; ++r) {
    g_first_arm = r % 2;
    std::vector<double> rv, sv;
    RunPairOut("call-cost run", arms[1].env, [&](int ctl, int out) { CallReceiver(arms, ctl, out); },
               [&](int ctl, int out) { CallSender(arms, ctl, out); }, 6, 4, &rv, &sv);
    for (int a = 0; a < 2; ++a) {
      std::vector<double> m(kKinds);
      m[kIrecv] = rv[3 * a];
      m[kTestIdle] = rv[3 * a + 1];
      m[kTestDoneRecv] = rv[3 * a + 2];
      m[kIsend] = sv[2 * a];
      m[kTestDoneSend] = sv[2 * a + 1];
      per[a].push_back(m);
    }
  }
  printf("\n1. cost per call, %zu-byte messages: %d runs in fresh processes, each with both arms taking turns in "
         "blocks of %d messages, %d messages per arm (after %d warm-up);\n   ns per call: per run the mean of the "
         "middle half of the calls, timer (%.1f ns) taken off, median over the runs; added = wrapped - direct of "
         "the same run\n",
         g_call.bytes, runs, kBlock, g_call.iters, g_call.warmup, g_timer_ns);
  printf("%-26s %12s %12s %12s %22s\n", "call", "direct ns", "wrapped ns", "added ns", "added min .. max");
  for (int kind = 0; kind < kKinds; ++kind) {
    std::vector<double> d, w, added;
    for (int r = 0; r < runs; ++r) {
      d.push_back(per[0][r][kind]);
      w.push_back(per[1][r][kind]);
      added.push_back(per[1][r][kind] - per[0][r][kind]);
    }
    printf("%-26s %12.1f %12.1f %+12.1f %+10.1f .. %+8.1f\n", kKindName[kind], Median(d), Median(w), Median(added),
           *std::min_element(added.begin(), added.end()), *std::max_element(added.begin(), added.end()));
  }
  fflush(stdout);
}

// ---------- 2. bandwidth ----------
struct BwPlan {
  size_t size = 0;
  size_t bytes = size_t{512} << 20;
  int Iters() const { return static_cast<int>(std::max<size_t>(4, bytes / size)); }
};
BwPlan g_bw;
constexpr int kDepth = 4;  // requests in flight, as bench_net and NCCL's pipelined steps

void Wait(PluginNet& net, void* req) {
  int done = 0, sizes[8];
  for (Patience p{"test"}; !done; p.Check()) {
    if (net.Test(req, &done, sizes) != 0) _exit(9);
    if (!done) sched_yield();  // NCCL's progress thread yields when idle
  }
}

// n messages, kDepth in flight; post(&req) posts one (a null request: retry).
template <class Post>
void Pipeline(PluginNet& net, int n, Post post) {
  void* reqs[kDepth] = {};
  for (int i = 0; i < n + kDepth; ++i) {
    const int k = i % kDepth;
    if (reqs[k] != nullptr) Wait(net, reqs[k]);
    reqs[k] = nullptr;
    if (i >= n) continue;
    for (Patience p{"isend/irecv (no request)"}; reqs[k] == nullptr; p.Check()) {
      if (post(&reqs[k]) != 0) _exit(6);
    }
  }
}

void BwReceiver(const Arm& arm, int ctl, int out) {
  std::unique_ptr<PluginNet> net = OpenArm(arm);
  void *lc = nullptr, *rc = nullptr, *mh = nullptr;
  if (!ListenAndAccept(*net, ctl, &lc, &rc)) _exit(4);
  std::vector<char> buf(g_bw.size);  // one buffer for the requests in flight, as bench_net
  if (net->RegMr(rc, buf.data(), buf.size(), &mh) != 0) _exit(5);
  char ready = 1;
  if (!SendBytes(ctl, &ready, 1)) _exit(8);
  Pipeline(*net, g_bw.Iters(), [&](void** req) {
    void* data = buf.data();
    size_t cap = g_bw.size;
    int tag = 0;
    return net->Irecv(rc, 1, &data, &cap, &tag, &mh, nullptr, req);
  });
  char ack = 1;
  if (!SendBytes(ctl, &ack, 1)) _exit(8);
  WriteOut(out, {});
  net->DeregMr(rc, mh);
  net->CloseRecv(rc);
  net->CloseListen(lc);
  net->Finalize();
}

void BwSender(const Arm& arm, int ctl, int out) {
  std::unique_ptr<PluginNet> net = OpenArm(arm);
  void *sc = nullptr, *mh = nullptr;
  if (!ConnectToPeer(*net, ctl, &sc)) _exit(4);
  std::vector<char> buf(g_bw.size, 1);
  if (net->RegMr(sc, buf.data(), buf.size(), &mh) != 0) _exit(5);
  char ready = 0, ack = 0;
  if (!RecvBytes(ctl, &ready, 1)) _exit(8);  // the receiver's buffer is touched: start the clock
  const double t0 = NowS();
  Pipeline(*net, g_bw.Iters(), [&](void** req) { return net->Isend(sc, buf.data(), g_bw.size, 0, mh, nullptr, req); });
  if (!RecvBytes(ctl, &ack, 1, 300)) _exit(8);  // the receiver has every byte
  WriteOut(out, {NowS() - t0});
  net->DeregMr(sc, mh);
  net->CloseSend(sc);
  net->Finalize();
}

// Per size: each arm's GB/s and the ratio wrapped / direct of each run.
struct BwTable {
  std::vector<std::vector<double>> gbs[2], ratio;
  explicit BwTable(size_t nsizes) : gbs{std::vector<std::vector<double>>(nsizes),
                                        std::vector<std::vector<double>>(nsizes)}, ratio(nsizes) {}
  void Add(size_t i, double bytes, double direct_s, double wrapped_s) {
    gbs[0][i].push_back(bytes / direct_s / 1e9);
    gbs[1][i].push_back(bytes / wrapped_s / 1e9);
    ratio[i].push_back(direct_s / wrapped_s);
  }
  void Print(const std::vector<size_t>& sizes) const {
    printf("%10s %16s %16s %26s\n", "size", "direct med GB/s", "wrapped med GB/s", "ratio min / median / max");
    for (size_t i = 0; i < sizes.size(); ++i) {
      const std::vector<double>& q = ratio[i];
      printf("%6zu MiB %16.3f %16.3f %12.3f / %.3f / %.3f\n", sizes[i] >> 20, Median(gbs[0][i]), Median(gbs[1][i]),
             *std::min_element(q.begin(), q.end()), Median(q), *std::max_element(q.begin(), q.end()));
    }
  }
};

void Bandwidth(const Arm arms[2], const std::vector<size_t>& sizes, int runs) {
  const size_t nsizes = sizes.size();
  BwTable table(nsizes);
  for (int r = 0; r < runs; ++r) {
    for (size_t i = 0; i < nsizes; ++i) {
      g_bw.size = sizes[i];
      double secs[2];
      for (int k = 0; k < 2; ++k) {
        const int a = (k == 0) == (r % 2 == 0) ? 0 : 1;
        std::vector<double> rv, sv;
        RunPairOut(std::string(arms[a].label) + " bandwidth run", arms[a].env,
                   [&](int ctl, int out) { BwReceiver(arms[a], ctl, out); },
                   [&](int ctl, int out) { BwSender(arms[a], ctl, out); }, 0, 1, &rv, &sv);
        secs[a] = sv[0];
      }
      table.Add(i, static_cast<double>(g_bw.Iters()) * static_cast<double>(sizes[i]), secs[0], secs[1]);
    }
  }
  printf("\n2. bandwidth, %zu MiB per size and arm, %d requests in flight: %d runs, fresh processes, arms back to "
         "back (order alternating);\n   ratio = wrapped / direct of the same run\n",
         g_bw.bytes >> 20, kDepth, runs);
  table.Print(sizes);
  fflush(stdout);
}

// ---------- 3. bandwidth, both arms in one process pair ----------
// The fresh-process ratio above moves with this VM's speed from one process pair to the next. Here both arms
// are connected in the same two processes and take turns, g_inter_blocks blocks each per size of
// g_bw.bytes / g_inter_blocks (at least 2 messages a block); the sender times each block up to the receiver's
// word that it has every byte. Per run and size: direct seconds / wrapped seconds.
int g_inter_blocks = 8;

int InterIters(size_t size) {
  return static_cast<int>(std::max<size_t>(2, g_bw.bytes / static_cast<size_t>(g_inter_blocks) / size));
}

void InterReceiver(const Arm arms[2], const std::vector<size_t>& sizes, int ctl, int out) {
  Side side[2];
  std::vector<char> buf(*std::max_element(sizes.begin(), sizes.end()));
  for (int k = 0; k < 2; ++k) {
    Side& x = side[(k + g_first_arm) % 2];
    x.net = OpenArm(arms[(k + g_first_arm) % 2]);
    if (!ListenAndAccept(*x.net, ctl, &x.lc, &x.comm)) _exit(4);
    if (x.net->RegMr(x.comm, buf.data(), buf.size(), &x.mh) != 0) _exit(5);
  }
  for (size_t size : sizes) {
    for (int b = 0; b < 2 * g_inter_blocks; ++b) {
      Side& x = side[(b + g_first_arm) % 2];
      char ready = 1;
      if (!SendBytes(ctl, &ready, 1)) _exit(8);
      Pipeline(*x.net, InterIters(size), [&](void** req) {
        void* data = buf.data();
        size_t cap = size;
        int tag = 0;
        return x.net->Irecv(x.comm, 1, &data, &cap, &tag, &x.mh, nullptr, req);
      });
      if (!SendBytes(ctl, &ready, 1)) _exit(8);
    }
  }
  WriteOut(out, {});
  for (Side& x : side) {
    x.net->DeregMr(x.comm, x.mh);
    x.net->CloseRecv(x.comm);
    x.net->CloseListen(x.lc);
    x.net->Finalize();
  }
}

void InterSender(const Arm arms[2], const std::vector<size_t>& sizes, int ctl, int out) {
  Side side[2];
  std::vector<char> buf(*std::max_element(sizes.begin(), sizes.end()), 1);
  for (int k = 0; k < 2; ++k) {
    Side& x = side[(k + g_first_arm) % 2];
    x.net = OpenArm(arms[(k + g_first_arm) % 2]);
    if (!ConnectToPeer(*x.net, ctl, &x.comm)) _exit(4);
    if (x.net->RegMr(x.comm, buf.data(), buf.size(), &x.mh) != 0) _exit(5);
  }
  std::vector<double> secs;  // per size: direct, wrapped
  for (size_t size : sizes) {
    double t[2] = {0, 0};
    for (int b = 0; b < 2 * g_inter_blocks; ++b) {
      const int a = (b + g_first_arm) % 2;
      Side& x = side[a];
      char word = 0;
      if (!RecvBytes(ctl, &word, 1)) _exit(8);  // the receiver is in its loop
      const double t0 = NowS();
      Pipeline(*x.net, InterIters(size),
               [&](void** req) { return x.net->Isend(x.comm, buf.data(), size, 0, x.mh, nullptr, req); });
      if (!RecvBytes(ctl, &word, 1, 300)) _exit(8);  // every byte received
      t[a] += NowS() - t0;
    }
    secs.push_back(t[0]);
    secs.push_back(t[1]);
  }
  WriteOut(out, secs);
  for (Side& x : side) {
    x.net->DeregMr(x.comm, x.mh);
    x.net->CloseSend(x.comm);
    x.net->Finalize();
  }
}

void InterleavedBandwidth(const Arm arms[2], const std::vector<size_t>& sizes, int runs) {
  const size_t nsizes = sizes.size();
  BwTable table(nsizes);
  for (int r = 0; r < runs; ++r) {
    g_first_arm = r % 2;
    std::vector<double> rv, sv;
    RunPairOut("interleaved bandwidth run", arms[1].env,
               [&](int ctl, int out) { InterReceiver(arms, sizes, ctl, out); },
               [&](int ctl, int out) { InterSender(arms, sizes, ctl, out); }, 0, 2 * nsizes, &rv, &sv);
    for (size_t i = 0; i < nsizes; ++i) {
      table.Add(i, static_cast<double>(InterIters(sizes[i])) * static_cast<double>(sizes[i]) * g_inter_blocks,
                sv[2 * i], sv[2 * i + 1]);
    }
  }
  printf("\n3. bandwidth, both arms in the same processes taking turns (%d blocks each per size, a block %zu MiB or 2 "
         "messages): %d runs in fresh processes;\n   ratio = wrapped / direct of the same run\n",
         g_inter_blocks, (g_bw.bytes / g_inter_blocks) >> 20, runs);
  table.Print(sizes);
  fflush(stdout);
}

std::string InnerPath(const std::string& arg) {
  if (arg.size() <= 3 && arg[0] == 'v') return std::string(NCCLSCOPE_LIB_DIR) + "/libnccl-net-inner-tcp-" + arg + ".so";
  return arg;
}

}  // namespace

int main(int argc, char** argv) {
  std::string inner = "v12", wrapper = NCCLSCOPE_PLUGIN_PATH;
  int inner_version = 0, call_runs = 12, bw_runs = 8, inter_runs = 4;
  bool harness = false, calls = true, bw = true;
  std::vector<size_t> sizes = {size_t{1} << 20, size_t{4} << 20, size_t{16} << 20, size_t{64} << 20};
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "--quick") == 0) {  // a smoke run: that both arms load, connect, move data and print
      call_runs = 2;
      g_call.iters = 1000;
      g_call.warmup = 100;
      bw_runs = 2;
      inter_runs = 1;
      g_bw.bytes = size_t{64} << 20;
      sizes = {size_t{1} << 20, size_t{16} << 20};
    } else if (strncmp(a, "--inner=", 8) == 0) {
      inner = a + 8;
    } else if (strncmp(a, "--inner-version=", 16) == 0) {
      inner_version = atoi(a + 16);
    } else if (strncmp(a, "--wrapper=", 10) == 0) {
      wrapper = a + 10;
    } else if (strcmp(a, "--harness") == 0) {
      harness = true;
    } else if (strncmp(a, "--call-runs=", 12) == 0) {
      call_runs = atoi(a + 12);
    } else if (strncmp(a, "--iters=", 8) == 0) {
      g_call.iters = atoi(a + 8);
    } else if (strncmp(a, "--call-bytes=", 13) == 0) {
      g_call.bytes = strtoull(a + 13, nullptr, 0);
    } else if (strncmp(a, "--runs=", 7) == 0) {
      bw_runs = atoi(a + 7);
    } else if (strncmp(a, "--inter-runs=", 13) == 0) {
      inter_runs = atoi(a + 13);
    } else if (strncmp(a, "--bytes=", 8) == 0) {
      g_bw.bytes = strtoull(a + 8, nullptr, 0);
    } else if (strncmp(a, "--sizes=", 8) == 0) {
      sizes.clear();
      for (const char* p = a + 8; *p != '\0';) {
        char* end = nullptr;
        sizes.push_back(static_cast<size_t>(strtod(p, &end) * 1048576));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p != '\0') Die("bad --sizes");
      }
    } else if (strcmp(a, "--no-calls") == 0) {
      calls = false;
    } else if (strcmp(a, "--no-bw") == 0) {
      bw = false;
      inter_runs = 0;
    } else {
      Die(std::string("unknown argument ") + a);
    }
  }
  unsetenv("NCCLSCOPE_NET_CHAIN");  // only the wrapped arm's processes get one
  Arm arms[2];
  if (harness) {
    arms[0] = Arm{"direct", wrapper, 12, {}};
    arms[1] = Arm{"wrapped", wrapper, 12, {}};
  } else {
    inner = InnerPath(inner);
    if (inner_version == 0) inner_version = ProbeVersion(inner);
    if (inner_version == 0) Die(inner + ": not loadable or no ncclNetPlugin_v8..v12");
    arms[0] = Arm{"direct", inner, inner_version, {}};
    // NCCLSCOPE_TRANSPORT=chain, not auto: a chain that cannot load fails the run instead of leaving TCP in its place.
    arms[1] = Arm{"wrapped", wrapper, 12, {{"NCCLSCOPE_TRANSPORT", "chain"}, {"NCCLSCOPE_NET_CHAIN", inner}}};
  }
  CalibrateTimer();
  printf("bench_net_chain: loopback, %ld online CPUs, TSC %.3f GHz\n", sysconf(_SC_NPROCESSORS_ONLN),
         1.0 / g_ns_per_tick);
  printf("  direct:  %s (ncclNetPlugin_v%d)\n", arms[0].path.c_str(), arms[0].version);
  if (harness) {
    printf("  wrapped: %s (ncclNetPlugin_v12), no chain: the harness's A/A run\n", arms[1].path.c_str());
  } else {
    printf("  wrapped: %s (ncclNetPlugin_v12) with NCCLSCOPE_NET_CHAIN=%s\n", arms[1].path.c_str(), inner.c_str());
  }
  fflush(stdout);
  const double t0 = NowS();
  if (calls && call_runs > 0) CallCost(arms, call_runs);
  if (bw && bw_runs > 0) Bandwidth(arms, sizes, bw_runs);
  if (inter_runs > 0) InterleavedBandwidth(arms, sizes, inter_runs);
  printf("\n(%.0f s)\n", NowS() - t0);
  return 0;
}

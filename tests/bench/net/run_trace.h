// bench_net --trace: per-process evidence of what sets a slow run apart. Off unless a path is set;
// then Begin() starts a sampler thread that reads every thread's CPU from /proc every millisecond (the
// transport's helper threads included, found by their names), and End() appends, per process and size:
//   the process: its measuring thread's polls and those without completion, context switches, CPU time;
//   kind=thread: each thread's main CPU and its share of the samples, CPUs used, CPU changes, CPU time;
//   kind=socket: each established TCP socket's kernel counters (RTT, congestion window, retransmissions, and
//   the time the sender was limited by the receiver's window or by its own send buffer);
//   kind=netstat: the host's TCP loss, timeout and window counters that moved meanwhile (host-wide, so both
//   processes of a pair see the same).
// Every line is self-contained (run, role, size), written with one write() to an O_APPEND file.
#ifndef NCCLSCOPE_TESTS_BENCH_NET_RUN_TRACE_H_
#define NCCLSCOPE_TESTS_BENCH_NET_RUN_TRACE_H_

#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <map>
#include <string>
#include <thread>

inline double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
inline double Seconds(const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; }

class RunTrace {
 public:
  const char* path = nullptr;
  int run = 0;

  ~RunTrace() { End(nullptr, 0, 0); }  // a sampler still running would end the process from std::thread's destructor

  void Begin();
  // Where the measuring thread waits: `idle` when its poll found nothing done.
  void Sample(bool idle) {
    if (path == nullptr) return;  // not on the measured path unless tracing
    ++polls_;
    idle_polls_ += idle;
  }
  void End(const char* role, size_t size, size_t bytes);

 private:
  struct ThreadSeen {
    std::string name;
    std::map<int, long> samples_per_cpu;
    long changes = 0;
    int last_cpu = -1;
    long user_begin = -1, user_end = 0, sys_begin = 0, sys_end = 0;  // clock ticks
  };
  void SamplerLoop();
  void SampleThreads();
  std::string ThreadLines(const std::string& prefix) const;
  static std::string SocketLines(const std::string& prefix);
  static std::map<std::string, long> ReadNetstat();
  std::string NetstatLine(const std::string& prefix) const;

  long polls_ = 0, idle_polls_ = 0;
  rusage start_{};
  double t0_ = 0;
  std::map<std::string, long> netstat_begin_;
  std::map<int, ThreadSeen> threads_;  // by thread id; only the sampler thread touches it until End joins it
  std::atomic<bool> stop_{false};
  std::thread sampler_;
  int sampler_tid_ = 0;
};

#endif  // NCCLSCOPE_TESTS_BENCH_NET_RUN_TRACE_H_

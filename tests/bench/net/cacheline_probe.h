// How far apart the host keeps two CPUs: the median round trip of one cache line between a thread pinned to
// each (on a VM the host may place our vCPUs where a line takes 4x longer to cross). The calling
// thread's CPU affinity is restored afterwards, so processes it forks later are not pinned.
#ifndef NCCLSCOPE_TESTS_BENCH_NET_CACHELINE_PROBE_H_
#define NCCLSCOPE_TESTS_BENCH_NET_CACHELINE_PROBE_H_

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace ncclscope::bench {

inline bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// The first two CPUs this process may run on (0 and 1 unless a cpuset or affinity mask says otherwise); false
// when it may use fewer than two.
inline bool FirstTwoAllowedCpus(int* a, int* b) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return false;
  int found = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; ++cpu) {
    if (CPU_ISSET(cpu, &set)) *(found++ == 0 ? a : b) = cpu;
  }
  return found == 2;
}

// Median over `batches` batches of `batch_ms` each, in ns; 0 when either CPU cannot be used.
inline double CachelineRoundTripNs(int cpu_a, int cpu_b, int batches = 10, int batch_ms = 1) {
  using Clock = std::chrono::steady_clock;
  alignas(64) std::atomic<long> line{0};  // odd: cpu_b's turn to answer
  std::atomic<bool> run{true}, pinned{false};
  cpu_set_t saved;
  if (pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) != 0 || !PinTo(cpu_a)) return 0;
  std::thread peer([&] {
    pinned = PinTo(cpu_b);
    while (run.load(std::memory_order_relaxed)) {
      const long v = line.load(std::memory_order_acquire);
      if (v & 1) line.store(v + 1, std::memory_order_release);
    }
  });
  std::vector<double> ns;
  for (int b = 0; b < batches; ++b) {
    long trips = 0;
    const auto start = Clock::now();
    while (Clock::now() - start < std::chrono::milliseconds(batch_ms)) {
      const long v = line.load(std::memory_order_relaxed) + 1;
      line.store(v, std::memory_order_release);
      while (line.load(std::memory_order_acquire) == v) {
      }
      ++trips;
    }
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / trips);
  }
  run = false;
  peer.join();
  pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  if (!pinned) return 0;
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

}  // namespace ncclscope::bench

#endif  // NCCLSCOPE_TESTS_BENCH_NET_CACHELINE_PROBE_H_

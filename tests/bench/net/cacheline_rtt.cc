// cacheline_rtt: how far apart the host keeps two of our CPUs, as the round trip of one cache line between a
// thread pinned to each (issue 17). Prints one median per interval, so a run that changes placement shows it.
//   cacheline_rtt [SECONDS=10] [CPU_A=0] [CPU_B=1]
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
alignas(64) std::atomic<long> g_line{0};  // odd: the other CPU's turn to answer
std::atomic<bool> g_run{true};

bool Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

void Answer(int cpu) {
  if (!Pin(cpu)) std::fprintf(stderr, "cacheline_rtt: cannot pin to CPU %d\n", cpu);
  while (g_run.load(std::memory_order_relaxed)) {
    const long v = g_line.load(std::memory_order_acquire);
    if (v & 1) g_line.store(v + 1, std::memory_order_release);
  }
}

// Median round trip (ns) over ten 1 ms batches.
double MedianRoundTrip() {
  std::vector<double> batches;
  for (int b = 0; b < 10; ++b) {
    long trips = 0;
    const auto start = Clock::now();
    while (Clock::now() - start < std::chrono::milliseconds(1)) {
      const long v = g_line.load(std::memory_order_relaxed) + 1;
      g_line.store(v, std::memory_order_release);
      while (g_line.load(std::memory_order_acquire) == v) {
      }
      ++trips;
    }
    batches.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count() / trips);
  }
  std::sort(batches.begin(), batches.end());
  return batches[batches.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 10;
  const int cpu_a = argc > 2 ? std::atoi(argv[2]) : 0, cpu_b = argc > 3 ? std::atoi(argv[3]) : 1;
  if (!Pin(cpu_a)) std::fprintf(stderr, "cacheline_rtt: cannot pin to CPU %d\n", cpu_a);
  std::thread peer(Answer, cpu_b);
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    std::printf("cpu %d <-> cpu %d: %.0f ns round trip\n", cpu_a, cpu_b, MedianRoundTrip());
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(240));
  }
  g_run = false;
  peer.join();
  return 0;
}

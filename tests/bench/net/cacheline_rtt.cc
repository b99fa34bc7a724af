// cacheline_rtt: how far apart the host keeps two of our CPUs, as the round trip of one cache line between a
// thread pinned to each (cacheline_probe.h). Prints one median per 250 ms, so a change of placement shows.
//   cacheline_rtt [SECONDS=10] [CPU_A CPU_B]   (default: the first two CPUs this process may use)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cacheline_probe.h"

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 10;
  int cpu_a = 0, cpu_b = 1;
  if (argc > 3) {
    cpu_a = std::atoi(argv[2]);
    cpu_b = std::atoi(argv[3]);
  } else if (!ncclscope::bench::FirstTwoAllowedCpus(&cpu_a, &cpu_b)) {
    std::fprintf(stderr, "cacheline_rtt: this process may use fewer than two CPUs\n");
    return 1;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    const double ns = ncclscope::bench::CachelineRoundTripNs(cpu_a, cpu_b);
    if (ns == 0) {
      std::fprintf(stderr, "cacheline_rtt: cannot run a thread on CPU %d and on CPU %d\n", cpu_a, cpu_b);
      return 1;
    }
    std::printf("cpu %d <-> cpu %d: %.0f ns round trip\n", cpu_a, cpu_b, ns);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(240));
  }
  return 0;
}

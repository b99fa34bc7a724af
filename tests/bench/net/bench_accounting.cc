// What the net half's accounting costs per request, on one thread: a post and its completion through
// CommAccounting (the comm's counter block, and since the stall work its NetLink: whom a stuck operation waits
// on), next to the same through the counter block alone, the baseline measured in the same run. The difference
// is what the NetLink adds per request (docs/measurements.md, "Hang detection, live").
#include <benchmark/benchmark.h>

#include "common/clock.h"
#include "core/net_stats.h"
#include "net/comm_accounting.h"

namespace ncclscope::net {
namespace {

void BM_CountersOnly(benchmark::State& state) {
  NetCounters* comm = NetCountersFor("bench0", 0xbe7c, false);
  uint64_t now = MonotonicNs();
  for (auto _ : state) {
    ForNicAndComm(nullptr, comm, [now](NetCounters& c) { c.Posted(now); });
    ForNicAndComm(nullptr, comm, [now](NetCounters& c) {
      c.bytes_sent.fetch_add(4096, std::memory_order_relaxed);
      c.messages_sent.fetch_add(1, std::memory_order_relaxed);
      c.Completed(1000, now + 1000);
    });
    benchmark::ClobberMemory();
    now += 2000;
  }
}
BENCHMARK(BM_CountersOnly);

void BM_CommAccounting(benchmark::State& state) {
  NetContext ctx;
  ctx.comm_id = 0xbe7c;
  CommAccounting acct("bench0", &ctx, "bench", 0, NetDir::kSend);
  uint64_t now = MonotonicNs();
  for (auto _ : state) {
    acct.Posted(now);
    acct.Sent(4096, now, now + 1000);
    benchmark::ClobberMemory();
    now += 2000;
  }
}
BENCHMARK(BM_CommAccounting);

}  // namespace
}  // namespace ncclscope::net

BENCHMARK_MAIN();

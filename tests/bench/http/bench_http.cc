// bench_http: how long HttpServer::Stop() takes, and how long a scrape of /metrics takes, with no other
// client and with 50 slow clients (one byte of a never-ending request header every 150 ms) plus 50 idle
// ones (connected, silent) — the clients that held the old one-at-a-time server for seconds each.
// Real loopback sockets; the server runs with its shipped options (64 connections, 2 s / 10 s deadlines).
// The body is a fixed 32 KiB exposition, so the figures are the server's, not the metric families'.
// Usage: bench_http [--benchmark_filter=…]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "exporters/prometheus/http_server.h"
#include "http_get.h"
#include "http_load.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using ncclscope::HttpServer;
using ncclscope::testing::ClientLoad;

const std::string& Body() {
  static const std::string* body = [] {
    auto* s = new std::string();
    for (int i = 0; s->size() < 32 * 1024; ++i) {
      *s += "ncclscope_bench_bytes_total{comm=\"c" + std::to_string(i) + "\",peer=\"7\"} 123456789\n";
    }
    return s;
  }();
  return *body;
}

std::string Handler(const std::string& path, bool* found) {
  *found = path == "/metrics";
  return *found ? Body() : std::string();
}

void AddPercentiles(benchmark::State& state, std::vector<double> us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, static_cast<size_t>(q * us.size()))]; };
  state.counters["p50_us"] = at(0.50);
  state.counters["p99_us"] = at(0.99);
  state.counters["max_us"] = us.back();
}

// Arg 0: no other client; 1: 50 slow + 50 idle clients connected when Stop() is called.
void BM_Stop(benchmark::State& state) {
  const bool loaded = state.range(0) != 0;
  std::vector<double> us;
  for (auto _ : state) {
    HttpServer server;
    if (!server.Start("127.0.0.1", 0, &Handler).ok()) {
      state.SkipWithError("cannot start the server");
      return;
    }
    std::unique_ptr<ClientLoad> load;
    if (loaded) {
      load = std::make_unique<ClientLoad>(server.port(), 50, 50, 150ms, /*reconnect=*/false);
      std::this_thread::sleep_for(400ms);  // accepted, and the slow ones a few bytes into their request
    }
    const Clock::time_point t0 = Clock::now();
    server.Stop();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    state.SetIterationTime(s);
    us.push_back(s * 1e6);
    load.reset();
  }
  AddPercentiles(state, us);
}
BENCHMARK(BM_Stop)->ArgName("slow50_idle50")->Arg(0)->Arg(1)->UseManualTime()->Iterations(20)->Unit(benchmark::kMicrosecond);

// Arg 0: no other client; 1: 50 slow + 50 idle clients kept connected (replaced when their deadline
// drops them) during every scrape.
void BM_Scrape(benchmark::State& state) {
  HttpServer server;
  if (!server.Start("127.0.0.1", 0, &Handler).ok()) {
    state.SkipWithError("cannot start the server");
    return;
  }
  std::unique_ptr<ClientLoad> load;
  if (state.range(0) != 0) {
    load = std::make_unique<ClientLoad>(server.port(), 50, 50, 150ms, /*reconnect=*/true);
    std::this_thread::sleep_for(400ms);
  }
  std::vector<double> us;
  for (auto _ : state) {
    const Clock::time_point t0 = Clock::now();
    int status = 0;
    std::string body = ncclscope::testing::HttpGet(server.port(), "/metrics", &status);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (status != 200 || body.size() != Body().size()) {
      state.SkipWithError("scrape failed");
      break;
    }
  }
  if (load) state.counters["clients_dropped_by_deadline"] = load->dropped();
  AddPercentiles(state, us);
  load.reset();
  server.Stop();
}
BENCHMARK(BM_Scrape)->ArgName("slow50_idle50")->Arg(0)->Arg(1)->Iterations(2000)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

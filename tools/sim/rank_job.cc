#include "rank_job.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "clock_offset.h"
#include "layout.h"
#include "logger.h"
#include "sweep.h"

namespace ncclscope::sim {
namespace {

using Clock = std::chrono::steady_clock;

double BusFactor(Func f, int n) {
  switch (f) {
    case Func::kAllReduce: return 2.0 * (n - 1) / n;
    case Func::kAllGather:
    case Func::kReduceScatter: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

std::string Hex(uint64_t v) {
  char b[32];
  snprintf(b, sizeof(b), "0x%016lx", static_cast<unsigned long>(v));
  return b;
}

}  // namespace

int RunRank(const Options& o, int rank, const std::string& rendezvous) {
  SetLogRank(rank);
  // Before any plugin is loaded: its static initialisers may read the clocks already.
  SetClockOffsetNs(static_cast<int64_t>(ClockOffsetMs(o, rank)) * 1'000'000);
  PluginHost::Instance().Configure(o.abi, o.net_plugin, o.profiler_plugin, o.net_set, o.profiler_set);
  PluginHost::Instance().SetNetMaxVersion(o.net_max_version);
  BootstrapClient world;
  std::string err;
  if (!PluginHost::Instance().SetAbiLayout(o.abi_layout, &err)) {  // RCCL's library before any plugin, as in RCCL
    fprintf(stderr, "ncclscope-sim: rank %d: %s\n", rank, err.c_str());
    return 2;
  }
  if (!world.Connect(rendezvous, 60, &err)) {
    fprintf(stderr, "ncclscope-sim: rank %d: %s\n", rank, err.c_str());
    return 2;
  }
  // ncclGetUniqueId on rank 0, shared out of band; the comm hash is derived from it.
  std::vector<std::string> ids;
  uint64_t uid = RandomU64();
  if (!world.AllGather("uid", o.ranks, rank, std::string(reinterpret_cast<char*>(&uid), 8), &ids)) {
    fprintf(stderr, "ncclscope-sim: rank %d: bootstrap failed\n", rank);
    return 2;
  }
  memcpy(&uid, ids[0].data(), 8);
  uint64_t hash0 = uid * 0x9e3779b97f4a7c15ull ^ (uid >> 29);

  // --layout tp=K: a TP and a DP communicator; else comm 0 and --comms - 1 splits of it.
  std::vector<GroupSpec> groups;
  if (o.tp > 0) groups = TpDpGroups(o.ranks, o.tp, rank, hash0);
  const int ncomms = o.tp > 0 ? static_cast<int>(groups.size()) : o.comms;
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int c = 0; c < ncomms; ++c) {
    CommConfig cfg;
    cfg.rendezvous = rendezvous;
    if (o.tp > 0) {
      cfg.nranks = groups[c].nranks;
      cfg.rank = groups[c].rank;
      cfg.comm_hash = groups[c].comm_hash;
      cfg.name = groups[c].name;
    } else {
      cfg.nranks = o.ranks;
      cfg.rank = rank;
      cfg.comm_hash = c == 0 ? hash0 : comms[0]->SplitHash(0);  // ncclCommSplit(color 0, key rank)
      cfg.name = c == 0 ? "sim-world" : "sim-split-" + std::to_string(c);
    }
    cfg.channels = o.channels;
    cfg.step_bytes = o.step_bytes;
    cfg.graph_captured = o.graph_replay > 0;
    cfg.ib_devices = o.ib_devices;
    cfg.fuse_nics = o.fuse_nics;
    cfg.tags = o.tags;
    cfg.symmetric = o.symmetric;
    cfg.ib_qps = o.ib_qps;
    auto comm = std::make_unique<Communicator>();
    if (!comm->Init(cfg, &err)) {
      fprintf(stderr, "ncclscope-sim: rank %d: communicator %d (%s) init failed: %s\n", rank, c, cfg.name.c_str(),
              err.c_str());
      fflush(stderr);
      comm->Abort();
      return 2;
    }
    comms.push_back(std::move(comm));
  }

  SweepResults s;
  auto t0 = Clock::now();
  if (o.tp > 0) {
    // One application thread issues each op on TP then DP, as a training step does.
    Sweep(o, rank, {{comms[0].get(), 0}, {comms[1].get(), 1}}, &s);
  } else if (o.comms == 1) {
    Sweep(o, rank, {{comms[0].get(), 0}}, &s);
  } else {
    // Each communicator from its own application thread, concurrently.
    std::vector<std::thread> threads;
    for (int c = 0; c < o.comms; ++c) threads.emplace_back([&, c] { Sweep(o, rank, {{comms[c].get(), c}}, &s); });
    for (auto& t : threads) t.join();
  }
  double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();

  // Gather every rank's rows; the report uses the slowest rank per row, as a job sees it.
  std::sort(s.rows.begin(), s.rows.end(), [](const Row& a, const Row& b) {
    return std::tie(a.comm, a.func, a.bytes) < std::tie(b.comm, b.func, b.bytes);
  });
  std::string mine(reinterpret_cast<const char*>(s.rows.data()), s.rows.size() * sizeof(Row));
  std::vector<std::string> all;
  if (!world.AllGather("results", o.ranks, rank, mine, &all)) {
    fprintf(stderr, "ncclscope-sim: rank %d: result gather failed\n", rank);
    return 2;
  }
  std::string net_desc = std::string(comms[0]->net_name()) + " (" + PluginHost::Instance().AcquireNet(&err)->symbol + ")";
  PluginHost::Instance().ReleaseNet();
  std::string prof_desc = comms[0]->profiler() ? std::string(comms[0]->profiler_desc()) + " (" +
                                                     comms[0]->profiler()->symbol + ")"
                                               : "none";
  int mask = __atomic_load_n(ActivationMask(), __ATOMIC_RELAXED);
  std::vector<uint64_t> hashes;
  std::vector<std::string> names;
  for (auto& c : comms) {
    hashes.push_back(c->hash());
    names.push_back(c->name());
  }
  for (auto& c : comms) c->Destroy(true);

  long total_wrong = 0;
  std::vector<Row> rows = s.rows;
  std::vector<double> on_sum(rows.size(), 0), off_sum(rows.size(), 0);
  for (int r = 0; r < o.ranks; ++r) {
    const Row* other = reinterpret_cast<const Row*>(all[r].data());
    size_t m = all[r].size() / sizeof(Row);
    for (size_t i = 0; i < rows.size() && i < m; ++i) {
      rows[i].time_us = std::max(rows[i].time_us, other[i].time_us);
      rows[i].time_off_us = std::max(rows[i].time_off_us, other[i].time_off_us);
      on_sum[i] += other[i].time_on_med_us;
      off_sum[i] += other[i].time_off_med_us;
      if (r != rank) rows[i].wrong += other[i].wrong;
    }
  }
  for (auto& r : rows) total_wrong += r.wrong;
  if (rank != 0) return total_wrong ? 1 : 0;

  const char* abi = NcclVersionName(o.abi);
  const char* dump_dir = getenv("NCCLSCOPE_DUMP_DIR");
  double bw_sum = 0;
  nlohmann::json jrows = nlohmann::json::array();
  if (!o.json) {
    printf("# ncclscope-sim: %d ranks, %d communicator(s) per rank, %d channel(s), NCCL %s ABI\n", o.ranks, ncomms,
           o.channels, abi);
    if (o.tp > 0) printf("# layout: tp=%d (%d TP groups of %d, %d DP groups of %d)\n", o.tp, o.ranks / o.tp, o.tp, o.tp, o.ranks / o.tp);
    printf("# net plugin: %s   profiler plugin: %s   activation mask: 0x%x\n", net_desc.c_str(), prof_desc.c_str(), mask);
    for (size_t c = 0; c < hashes.size(); ++c) {
      printf("# comm %zu: commHash %s (%s, rank 0's)\n", c, Hex(hashes[c]).c_str(), names[c].c_str());
    }
    printf("#\n# %4s %14s %12s %10s %6s %11s %11s %11s %8s", "comm", "op", "size(B)", "count", "root", "time(us)",
           "algbw(GB/s)", "busbw(GB/s)", "#wrong");
    if (o.compare_profiler) printf(" %12s %12s %12s %9s", "off(us)", "on-med(us)", "off-med(us)", "diff(%)");
    printf("\n");
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    double algbw = r.time_us > 0 ? r.bytes / (r.time_us * 1e3) : 0;
    double busbw = algbw * BusFactor(r.func, r.nranks);
    bw_sum += busbw;
    double on_med = on_sum[i] / o.ranks, off_med = off_sum[i] / o.ranks;
    double diff = off_med > 0 ? (on_med - off_med) / off_med * 100 : 0;
    if (!o.json) {
      printf("  %4d %14s %12zu %10zu %6d %11.1f %11.3f %11.3f %8ld", r.comm, FuncName(r.func), r.bytes, r.count,
             r.root, r.time_us, algbw, busbw, r.wrong);
      if (o.compare_profiler) printf(" %12.1f %12.1f %12.1f %+9.2f", r.time_off_us, on_med, off_med, diff);
      printf("\n");
    }
    nlohmann::json j = {{"comm", r.comm}, {"nranks", r.nranks}, {"op", FuncOption(r.func)}, {"func", FuncName(r.func)},
                        {"bytes", r.bytes}, {"count", r.count}, {"root", r.root}, {"time_us", r.time_us}, {"algbw_gbs", algbw},
                        {"busbw_gbs", busbw}, {"wrong", r.wrong}};
    if (o.compare_profiler) {
      j["time_off_us"] = r.time_off_us;
      j["time_on_median_us"] = on_med;
      j["time_off_median_us"] = off_med;
      j["profiler_overhead_pct"] = diff;
    }
    jrows.push_back(j);
  }
  double avg_bw = rows.empty() ? 0 : bw_sum / rows.size();
  if (o.json) {
    nlohmann::json out = {{"tool", "ncclscope-sim"}, {"ranks", o.ranks}, {"comms", ncomms}, {"channels", o.channels},
                          {"abi", abi}, {"net", net_desc}, {"profiler", prof_desc}, {"activation_mask", mask},
                          {"iters", o.iters}, {"wall_s", wall_s}, {"results", jrows}, {"avg_busbw_gbs", avg_bw},
                          {"wrong", total_wrong}, {"ok", total_wrong == 0}};
    nlohmann::json jh = nlohmann::json::array();
    for (auto h : hashes) jh.push_back(Hex(h));
    out["comm_hashes"] = jh;
    if (dump_dir) out["dump_dir"] = dump_dir;
    if (o.tp > 0) out["layout"] = {{"tp", o.tp}, {"names", names}};
    if (o.ib_devices > 0) out["ib_events"] = {{"devices", o.ib_devices}, {"qps", o.ib_qps}};
    printf("%s\n", out.dump().c_str());
  } else {
    printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %.3f GB/s\n", avg_bw);
    if (dump_dir != nullptr && *dump_dir != '\0') {
      printf("# Profiler dumps: %s (ncclscope-comm-<commHash>-rank<rank>.json.gz at each communicator's finalize)\n",
             dump_dir);
    } else {
      printf("# Profiler dumps: none (set NCCLSCOPE_DUMP_DIR to get one per communicator and rank)\n");
    }
  }
  fflush(stdout);
  return total_wrong ? 1 : 0;
}

}  // namespace ncclscope::sim

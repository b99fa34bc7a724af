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
#include "logger.h"

namespace ncclscope::sim {
namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  int comm = 0;
  Func func = Func::kAllReduce;
  size_t bytes = 0;  // nccl-tests size
  size_t count = 0;  // per-rank API count
  int root = -1;
  double time_us = 0;      // mean per collective (profiler as configured)
  double time_off_us = 0;  // --compare-profiler: profiler mask 0
  double time_on_med_us = 0, time_off_med_us = 0;
  long wrong = 0;
};

// Deterministic, exactly summable values: small integers in float.
inline float Val(int rank, size_t i) { return static_cast<float>(((rank + 1) * 7 + i * 13) % 1021); }

double BusFactor(Func f, int n) {
  switch (f) {
    case Func::kAllReduce: return 2.0 * (n - 1) / n;
    case Func::kAllGather:
    case Func::kReduceScatter: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

// Per-rank API count for a nccl-tests size (rounded down, at least one element).
size_t CountFor(Func f, size_t bytes, int n) {
  size_t c = bytes / sizeof(float);
  if (f == Func::kAllGather || f == Func::kReduceScatter) c /= n;
  return std::max<size_t>(c, 1);
}
size_t BytesFor(Func f, size_t count, int n) {
  size_t b = count * sizeof(float);
  return (f == Func::kAllGather || f == Func::kReduceScatter) ? b * n : b;
}

struct Buffers {
  std::vector<float> send, recv, expect;
};

void Prepare(Func f, size_t count, int rank, int n, int root, Buffers* b) {
  size_t send_n = f == Func::kReduceScatter ? count * n : count;
  size_t recv_n = f == Func::kAllGather ? count * n : count;
  b->send.resize(send_n);
  b->recv.resize(recv_n);
  b->expect.assign(recv_n, 0.f);
  for (size_t i = 0; i < send_n; ++i) b->send[i] = Val(rank, i);
  for (size_t i = 0; i < recv_n; ++i) {
    switch (f) {
      case Func::kAllReduce:
        for (int r = 0; r < n; ++r) b->expect[i] += Val(r, i);
        break;
      case Func::kAllGather: b->expect[i] = Val(static_cast<int>(i / count), i % count); break;
      case Func::kReduceScatter:
        for (int r = 0; r < n; ++r) b->expect[i] += Val(r, rank * count + i);
        break;
      case Func::kBroadcast: b->expect[i] = Val(root, i); break;
      case Func::kSendRecv: b->expect[i] = Val((rank + n - 1) % n, i); break;
      default: break;
    }
  }
}

long CountWrong(const Buffers& b) {
  if (memcmp(b.recv.data(), b.expect.data(), b.recv.size() * sizeof(float)) == 0) return 0;
  long wrong = 0;
  for (size_t i = 0; i < b.recv.size(); ++i) {
    if (memcmp(&b.recv[i], &b.expect[i], sizeof(float)) != 0) ++wrong;
  }
  return wrong;
}

struct Shared {
  const Options* o;
  int rank;
  std::mutex mu;
  std::vector<Row> rows;
  std::string error;
};

void Fail(Shared* s, Communicator* comm, const std::string& what) {
  fprintf(stderr, "ncclscope-sim: rank %d: %s\n", s->rank, what.c_str());
  fflush(stderr);
  fflush(stdout);
  // NCCL's abort: tear the communicator down without waiting for peers (profiler finalize writes its view).
  if (comm != nullptr) comm->Abort();
  _exit(3);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void Sweep(Shared* s, Communicator* comm, int comm_index) {
  const Options& o = *s->o;
  const int n = comm->nranks(), rank = comm->rank();
  long op_index = 0;
  std::string err;
  Buffers b;
  int* mask = ActivationMask();
  const int configured_mask = __atomic_load_n(mask, __ATOMIC_RELAXED);
  for (Func f : o.ops) {
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
      size_t count = CountFor(f, bytes, n);
      int root = f == Func::kBroadcast ? static_cast<int>(op_index % n) : 0;
      Prepare(f, count, rank, n, root, &b);
      Row row;
      row.comm = comm_index;
      row.func = f;
      row.count = count;
      row.bytes = BytesFor(f, count, n);
      row.root = f == Func::kBroadcast ? root : -1;
      std::vector<double> on_t, off_t;
      int blocks = o.compare_profiler > 0 ? 2 * o.compare_profiler : 1;
      for (int blk = -1; blk < blocks; ++blk) {
        bool warm = blk < 0;
        bool off = !warm && o.compare_profiler > 0 && (blk % 2 == 1);
        if (o.compare_profiler > 0) __atomic_store_n(mask, off ? 0 : configured_mask, __ATOMIC_RELAXED);
        int iters = warm ? o.warmup : o.iters;
        for (int it = 0; it < iters; ++it) {
          if (comm_index == 0) {
            if (o.straggle.rank == rank) usleep(static_cast<useconds_t>(o.straggle.value * 1000));
            if (o.hang.rank == rank && o.hang.value == op_index) {
              fprintf(stderr, "ncclscope-sim: rank %d: --hang: stops issuing at seq %ld and stays alive\n", rank, op_index);
              fflush(stderr);
              for (;;) pause();
            }
            if (o.kill.rank == rank && o.kill.value == op_index) {
              fprintf(stderr, "ncclscope-sim: rank %d: --kill: exiting abruptly at seq %ld\n", rank, op_index);
              fflush(stderr);
              raise(SIGKILL);
            }
          }
          memset(b.recv.data(), 0xff, b.recv.size() * sizeof(float));
          auto t0 = Clock::now();
          bool ok = comm->Run(f, b.send.data(), b.recv.data(), count, root, &err);
          double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
          ++op_index;
          if (!ok) Fail(s, comm, std::string(FuncName(f)) + " failed: " + err);
          long wrong = CountWrong(b);
          for (int r = 0; r < o.graph_replay && ok; ++r) {
            memset(b.recv.data(), 0xff, b.recv.size() * sizeof(float));
            if (!comm->Replay(&err)) Fail(s, comm, std::string("graph replay of ") + FuncName(f) + " failed: " + err);
            wrong += CountWrong(b);
          }
          if (wrong != 0) {
            fprintf(stderr, "ncclscope-sim: rank %d: %s %zu bytes: %ld wrong elements\n", rank, FuncName(f), row.bytes, wrong);
          }
          if (!warm) {
            row.wrong += wrong;
            (off ? off_t : on_t).push_back(us);
          }
        }
      }
      if (o.compare_profiler > 0) __atomic_store_n(mask, configured_mask, __ATOMIC_RELAXED);
      double sum = 0;
      for (double t : on_t) sum += t;
      row.time_us = sum / std::max<size_t>(on_t.size(), 1);
      sum = 0;
      for (double t : off_t) sum += t;
      row.time_off_us = off_t.empty() ? 0 : sum / off_t.size();
      row.time_on_med_us = Median(on_t);
      row.time_off_med_us = Median(off_t);
      std::lock_guard<std::mutex> lock(s->mu);
      s->rows.push_back(row);
      if (bytes == 0 || bytes > o.max_bytes / o.factor) break;  // the next size would pass MAX (or wrap)
    }
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

  std::vector<std::unique_ptr<Communicator>> comms;
  for (int c = 0; c < o.comms; ++c) {
    CommConfig cfg;
    cfg.rendezvous = rendezvous;
    cfg.nranks = o.ranks;
    cfg.rank = rank;
    cfg.comm_hash = c == 0 ? hash0 : comms[0]->SplitHash(0);  // ncclCommSplit(color 0, key rank)
    cfg.name = c == 0 ? "sim-world" : "sim-split-" + std::to_string(c);
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
      fprintf(stderr, "ncclscope-sim: rank %d: communicator %d init failed: %s\n", rank, c, err.c_str());
      fflush(stderr);
      comm->Abort();
      return 2;
    }
    comms.push_back(std::move(comm));
  }

  Shared s;
  s.o = &o;
  s.rank = rank;
  auto t0 = Clock::now();
  if (o.comms == 1) {
    Sweep(&s, comms[0].get(), 0);
  } else {
    // Each communicator from its own application thread, concurrently.
    std::vector<std::thread> threads;
    for (int c = 0; c < o.comms; ++c) threads.emplace_back([&, c] { Sweep(&s, comms[c].get(), c); });
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
  for (auto& c : comms) hashes.push_back(c->hash());
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

  const char* abi = o.abi == NcclVersion::k2_28 ? "2.28" : o.abi == NcclVersion::k2_30 ? "2.30" : "2.31";
  const char* dump_dir = getenv("NCCLSCOPE_DUMP_DIR");
  double bw_sum = 0;
  nlohmann::json jrows = nlohmann::json::array();
  if (!o.json) {
    printf("# ncclscope-sim: %d ranks, %d communicator(s), %d channel(s), NCCL %s ABI\n", o.ranks, o.comms, o.channels, abi);
    printf("# net plugin: %s   profiler plugin: %s   activation mask: 0x%x\n", net_desc.c_str(), prof_desc.c_str(), mask);
    for (size_t c = 0; c < hashes.size(); ++c) printf("# comm %zu: commHash %s\n", c, Hex(hashes[c]).c_str());
    printf("#\n# %4s %14s %12s %10s %6s %11s %11s %11s %8s", "comm", "op", "size(B)", "count", "root", "time(us)",
           "algbw(GB/s)", "busbw(GB/s)", "#wrong");
    if (o.compare_profiler) printf(" %12s %12s %12s %9s", "off(us)", "on-med(us)", "off-med(us)", "diff(%)");
    printf("\n");
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    double algbw = r.time_us > 0 ? r.bytes / (r.time_us * 1e3) : 0;
    double busbw = algbw * BusFactor(r.func, o.ranks);
    bw_sum += busbw;
    double on_med = on_sum[i] / o.ranks, off_med = off_sum[i] / o.ranks;
    double diff = off_med > 0 ? (on_med - off_med) / off_med * 100 : 0;
    if (!o.json) {
      printf("  %4d %14s %12zu %10zu %6d %11.1f %11.3f %11.3f %8ld", r.comm, FuncName(r.func), r.bytes, r.count,
             r.root, r.time_us, algbw, busbw, r.wrong);
      if (o.compare_profiler) printf(" %12.1f %12.1f %12.1f %+9.2f", r.time_off_us, on_med, off_med, diff);
      printf("\n");
    }
    nlohmann::json j = {{"comm", r.comm}, {"op", FuncOption(r.func)}, {"func", FuncName(r.func)},
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
    nlohmann::json out = {{"tool", "ncclscope-sim"}, {"ranks", o.ranks}, {"comms", o.comms}, {"channels", o.channels},
                          {"abi", abi}, {"net", net_desc}, {"profiler", prof_desc}, {"activation_mask", mask},
                          {"iters", o.iters}, {"wall_s", wall_s}, {"results", jrows}, {"avg_busbw_gbs", avg_bw},
                          {"wrong", total_wrong}, {"ok", total_wrong == 0}};
    nlohmann::json jh = nlohmann::json::array();
    for (auto h : hashes) jh.push_back(Hex(h));
    out["comm_hashes"] = jh;
    if (dump_dir) out["dump_dir"] = dump_dir;
    if (o.ib_devices > 0) out["ib_events"] = {{"devices", o.ib_devices}, {"qps", o.ib_qps}};
    printf("%s\n", out.dump().c_str());
  } else {
    printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %.3f GB/s\n", avg_bw);
    if (dump_dir != nullptr && *dump_dir != '\0') {
      printf("# Profiler dumps: %s (ncclscope-comm-<commHash>-rank<rank>.json at each communicator's finalize)\n",
             dump_dir);
    } else {
      printf("# Profiler dumps: none (set NCCLSCOPE_DUMP_DIR to get one per communicator and rank)\n");
    }
  }
  fflush(stdout);
  return total_wrong ? 1 : 0;
}

}  // namespace ncclscope::sim

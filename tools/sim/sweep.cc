#include "sweep.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace ncclscope::sim {
namespace {

using Clock = std::chrono::steady_clock;

// Deterministic, exactly summable values: small integers in float.
inline float Val(int rank, size_t i) { return static_cast<float>(((rank + 1) * 7 + i * 13) % 1021); }

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

// Buffers sized for f as NCCL's API defines them (rank and n within the communicator), and the expected output.
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

[[noreturn]] void Fail(const Options& o, int world_rank, const std::vector<Lane>& lanes, const std::string& what) {
  fprintf(stderr, "ncclscope-sim: rank %d: %s\n", world_rank, what.c_str());
  if (o.hold_on_error_s > 0) {
    // --hold-on-error: an application that polls ncclCommGetAsyncError and waits for its launcher. NCCL leaves
    // the failed op in flight (its kernel spins) until the abort: no event of it is stopped, nothing torn down.
    fprintf(stderr, "ncclscope-sim: rank %d: --hold-on-error: stays alive %g s with the communicator and the "
            "failed op in flight, then aborts\n", world_rank, o.hold_on_error_s);
    fflush(stderr);
    fflush(stdout);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.hold_on_error_s));
  }
  fflush(stderr);
  fflush(stdout);
  // NCCL's abort: tear the communicators down without waiting for peers (profiler finalize writes its view).
  // Only this thread's lanes: with --comms C the other threads still drive theirs.
  for (const Lane& l : lanes) l.comm->Abort();
  _exit(3);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// --mismatch: issue the other collective in place of op `op_index` and wait in it. Its proxy moves no bytes
// (Communicator::Run's stall): the peers' steps belong to another collective, and matching them would either
// complete it on garbage or desynchronise the ring. The job stays at the mismatch, where a dump shows it.
[[noreturn]] void IssueMismatch(int world_rank, Communicator* comm, Func f, size_t count, long op_index) {
  const Func mf = MismatchedFunc(f);
  const size_t mcount = MismatchedCount(f, count, comm->nranks());
  fprintf(stderr,
          "ncclscope-sim: rank %d: --mismatch: issues %s seq %lu (count %zu) at seq %ld on %s where the others "
          "issue %s seq %lu (count %zu), and waits in it\n",
          world_rank, FuncName(mf), static_cast<unsigned long>(comm->next_seq(mf)), mcount, op_index,
          comm->name().c_str(), FuncName(f), static_cast<unsigned long>(comm->next_seq(f)), count);
  fflush(stderr);
  Buffers b;
  Prepare(mf, mcount, comm->rank(), comm->nranks(), 0, &b);
  std::string err;
  comm->Run(mf, b.send.data(), b.recv.data(), mcount, 0, &err, /*stall=*/true);
  // Only an abort ends the wait; stay alive like a hung rank.
  for (;;) pause();
}

// --stuck-kernel: a fake of a GPU kernel that never finishes (no GPU here). Op `op_index` is issued as usual
// (API, Group, Coll/P2p started and stopped at enqueue, ProxyOp and KernelCh started with their GPU timer), but
// its "kernel" never ends: no KernelCh stop, and, since in NCCL the kernel feeds the proxy's network work, no
// isend/irecv for it (Communicator::Run's stall, as --mismatch). The rank stays alive; its peers wait on it.
[[noreturn]] void IssueStuckKernel(int world_rank, Communicator* comm, Func f, const float* send, float* recv,
                                   size_t count, int root, long op_index) {
  fprintf(stderr,
          "ncclscope-sim: rank %d: --stuck-kernel: starts %s seq %lu at seq %ld on %s; its kernel never finishes "
          "(emulated: no KernelCh stop, no isend/irecv) and it stays alive\n",
          world_rank, FuncName(f), static_cast<unsigned long>(f == Func::kSendRecv ? 0 : comm->next_seq(f)), op_index,
          comm->name().c_str());
  fflush(stderr);
  std::string err;
  comm->Run(f, send, recv, count, root, &err, /*stall=*/true);
  for (;;) pause();
}

// Before op `op_index` of communicator 0: the faults of the command line that concern this rank.
void BeforeOp(const Options& o, int world_rank, long op_index) {
  if (o.straggle.rank == world_rank) usleep(static_cast<useconds_t>(o.straggle.value * 1000));
  if (o.pause.rank == world_rank && op_index > 0 && op_index % o.pause.every == 0) {
    // A checkpoint save or an evaluation: the rank is alive and well, only late for this op; its peers wait in it.
    fprintf(stderr, "ncclscope-sim: rank %d: --pause: pauses %g s before op %ld (pause %ld)\n", world_rank,
            o.pause.seconds, op_index, op_index / o.pause.every);
    fflush(stderr);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.pause.seconds));
  }
  if (o.freeze.rank == world_rank && o.freeze.value == op_index) {
    // The whole process stops, every thread of it (the plugins' HTTP and proxy threads too); its sockets stay
    // open, so its peers see silence, not an error. A SIGCONT resumes it where it stopped.
    fprintf(stderr, "ncclscope-sim: rank %d: --freeze: stops the whole process (SIGSTOP) at seq %ld\n", world_rank,
            op_index);
    fflush(stderr);
    fflush(stdout);
    raise(SIGSTOP);
  }
  if (o.hang.rank == world_rank && o.hang.value == op_index) {
    fprintf(stderr, "ncclscope-sim: rank %d: --hang: stops issuing at seq %ld and stays alive\n", world_rank, op_index);
    fflush(stderr);
    for (;;) pause();
  }
  if (o.kill.rank == world_rank && o.kill.value == op_index) {
    fprintf(stderr, "ncclscope-sim: rank %d: --kill: exiting abruptly at seq %ld\n", world_rank, op_index);
    fflush(stderr);
    raise(SIGKILL);
  }
}

// One lane's state for the current op and size.
struct LaneRun {
  Buffers b;
  Row row;
  int root = 0;
  std::vector<double> on_t, off_t;
};

}  // namespace

Func MismatchedFunc(Func f) { return f == Func::kAllReduce ? Func::kAllGather : Func::kAllReduce; }

size_t MismatchedCount(Func f, size_t count, int n) {
  const size_t bytes = BytesFor(f, count, n);
  return CountFor(MismatchedFunc(f), bytes, n);
}

void Sweep(const Options& o, int world_rank, const std::vector<Lane>& lanes, SweepResults* out) {
  const bool faults = !lanes.empty() && lanes[0].index == 0;
  long op_index = 0;  // operations issued on lane 0
  std::string err;
  int* mask = ActivationMask();
  const int configured_mask = __atomic_load_n(mask, __ATOMIC_RELAXED);
  std::vector<LaneRun> runs(lanes.size());
  for (Func f : o.ops) {
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
      for (size_t l = 0; l < lanes.size(); ++l) {
        const int n = lanes[l].comm->nranks();
        LaneRun& r = runs[l];
        r.row = Row();
        r.row.comm = lanes[l].index;
        r.row.nranks = n;
        r.row.func = f;
        r.row.count = CountFor(f, bytes, n);
        r.row.bytes = BytesFor(f, r.row.count, n);
        r.root = f == Func::kBroadcast ? static_cast<int>(op_index % n) : 0;
        r.row.root = f == Func::kBroadcast ? r.root : -1;
        r.on_t.clear();
        r.off_t.clear();
        Prepare(f, r.row.count, lanes[l].comm->rank(), n, r.root, &r.b);
      }
      int blocks = o.compare_profiler > 0 ? 2 * o.compare_profiler : 1;
      for (int blk = -1; blk < blocks; ++blk) {
        bool warm = blk < 0;
        bool off = !warm && o.compare_profiler > 0 && (blk % 2 == 1);
        if (o.compare_profiler > 0) __atomic_store_n(mask, off ? 0 : configured_mask, __ATOMIC_RELAXED);
        int iters = warm ? o.warmup : o.iters;
        for (int it = 0; it < iters; ++it) {
          if (faults) BeforeOp(o, world_rank, op_index);
          for (size_t l = 0; l < lanes.size(); ++l) {
            Communicator* comm = lanes[l].comm;
            LaneRun& r = runs[l];
            if (faults && l == 0 && o.mismatch.rank == world_rank && o.mismatch.value == op_index) {
              IssueMismatch(world_rank, comm, f, r.row.count, op_index);
            }
            if (faults && l == 0 && o.stuck_kernel.rank == world_rank && o.stuck_kernel.value == op_index) {
              IssueStuckKernel(world_rank, comm, f, r.b.send.data(), r.b.recv.data(), r.row.count, r.root, op_index);
            }
            memset(r.b.recv.data(), 0xff, r.b.recv.size() * sizeof(float));
            auto t0 = Clock::now();
            bool ok = comm->Run(f, r.b.send.data(), r.b.recv.data(), r.row.count, r.root, &err);
            double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
            if (!ok) Fail(o, world_rank, lanes, std::string(FuncName(f)) + " failed on " + comm->name() + ": " + err);
            long wrong = CountWrong(r.b);
            for (int rep = 0; rep < o.graph_replay; ++rep) {
              memset(r.b.recv.data(), 0xff, r.b.recv.size() * sizeof(float));
              if (!comm->Replay(&err)) Fail(o, world_rank, lanes, std::string("graph replay of ") + FuncName(f) + " failed: " + err);
              wrong += CountWrong(r.b);
            }
            if (wrong != 0) {
              fprintf(stderr, "ncclscope-sim: rank %d: %s %zu bytes: %ld wrong elements (%s)\n", world_rank,
                      FuncName(f), r.row.bytes, wrong, comm->name().c_str());
            }
            if (!warm) {
              r.row.wrong += wrong;
              (off ? r.off_t : r.on_t).push_back(us);
            }
          }
          ++op_index;
        }
      }
      if (o.compare_profiler > 0) __atomic_store_n(mask, configured_mask, __ATOMIC_RELAXED);
      for (LaneRun& r : runs) {
        double sum = 0;
        for (double t : r.on_t) sum += t;
        r.row.time_us = sum / std::max<size_t>(r.on_t.size(), 1);
        sum = 0;
        for (double t : r.off_t) sum += t;
        r.row.time_off_us = r.off_t.empty() ? 0 : sum / r.off_t.size();
        r.row.time_on_med_us = Median(r.on_t);
        r.row.time_off_med_us = Median(r.off_t);
        std::lock_guard<std::mutex> lock(out->mu);
        out->rows.push_back(r.row);
      }
      if (bytes == 0 || bytes > o.max_bytes / o.factor) break;  // the next size would pass MAX (or wrap)
    }
  }
}

}  // namespace ncclscope::sim

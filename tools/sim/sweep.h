// The benchmark loop of one rank: every op and size of the command line, warm-up and timed iterations, each
// output checked byte for byte, on one or more communicators ("lanes") driven one after the other from the
// calling thread, as a training step issues its tensor- then data-parallel collectives. Faults (--straggle, --pause,
// --hang, --kill, --mismatch, --freeze, --stuck-kernel) fire on the lane of communicator 0 and count its operations.
// Thread-safety: one Sweep per thread; SweepResults is shared by the threads of --comms C and locked.
#ifndef NCCLSCOPE_TOOLS_SIM_SWEEP_H_
#define NCCLSCOPE_TOOLS_SIM_SWEEP_H_

#include <cstddef>
#include <mutex>
#include <vector>

#include "communicator.h"
#include "options.h"

namespace ncclscope::sim {

// One table row: an op and size on one communicator. Plain data: rows travel between ranks as bytes.
struct Row {
  int comm = 0;
  int nranks = 0;  // of that communicator (the bus bandwidth factor)
  Func func = Func::kAllReduce;
  size_t bytes = 0;  // nccl-tests size
  size_t count = 0;  // per-rank API count
  int root = -1;
  double time_us = 0;      // mean per collective (profiler as configured)
  double time_off_us = 0;  // --compare-profiler: profiler mask 0
  double time_on_med_us = 0, time_off_med_us = 0;
  long wrong = 0;
};

struct Lane {
  Communicator* comm = nullptr;
  int index = 0;  // communicator number in the report; 0 carries the faults
};

struct SweepResults {
  std::mutex mu;
  std::vector<Row> rows;
};

// Runs the sweep; never returns on --hang/--mismatch/--stuck-kernel of this rank, stops the process on --freeze,
// exits it on --kill or an error (after --hold-on-error's wait).
void Sweep(const Options& o, int world_rank, const std::vector<Lane>& lanes, SweepResults* out);

// The collective a --mismatch rank issues in place of `f` on `count` elements over n ranks, and its count:
// AllGather for AllReduce, else AllReduce, carrying the same bytes where the counts allow.
Func MismatchedFunc(Func f);
size_t MismatchedCount(Func f, size_t count, int n);

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_SWEEP_H_

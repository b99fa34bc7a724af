// Command line of ncclscope-sim. Plain data, parsed once at start-up; read-only afterwards.
#ifndef NCCLSCOPE_TOOLS_SIM_OPTIONS_H_
#define NCCLSCOPE_TOOLS_SIM_OPTIONS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "communicator.h"
#include "plugin_loader.h"

namespace ncclscope::sim {

struct Fault {
  int rank = -1;
  long value = -1;  // ms for straggle, sequence for hang/kill/mismatch/freeze/stuck-kernel
};

// --pause RANK:SECONDS/EVERY: that rank sleeps SECONDS before ops EVERY, 2*EVERY, ... of communicator 0 (never op
// 0), as a rank that saves a checkpoint or evaluates every EVERY steps while its peers wait in the next collective.
struct Pause {
  int rank = -1;
  double seconds = 0;
  long every = 0;
};

// --clock-offset RANK:MS: every clock that rank reports runs MS milliseconds ahead (negative: behind).
struct ClockOffset {
  int rank = -1;
  long ms = 0;
};

struct Options {
  int ranks = 2;
  int comms = 1;
  std::vector<Func> ops = {Func::kAllReduce};
  size_t min_bytes = 8, max_bytes = 1 << 20;
  int factor = 2;
  int iters = 10;
  int warmup = 2;
  int channels = 2;
  size_t step_bytes = 512 * 1024;
  NcclVersion abi = NcclVersion::k2_30;
  AbiLayout abi_layout = AbiLayout::kNvidia;  // --abi-layout: NVIDIA's or one of RCCL's profiler layouts
  std::string net_plugin = "ncclscope", profiler_plugin = "ncclscope";
  bool net_set = true, profiler_set = true;
  bool json = false;
  bool version = false;  // --version: print `ncclscope-sim <version>` and exit
  Fault straggle, hang, kill;
  Fault mismatch;  // --mismatch RANK@SEQ: that rank issues another collective at op SEQ
  Fault freeze;    // --freeze RANK@SEQ: that rank stops its whole process (SIGSTOP) before op SEQ
  // --stuck-kernel RANK@SEQ: that rank starts op SEQ (enqueue, KernelCh starts) but its "kernel" never
  // finishes: no KernelCh stop and no network work for that op (an emulation: no GPU here).
  Fault stuck_kernel;
  Pause pause;  // --pause RANK:SECONDS/EVERY
  // --hold-on-error S: after a communicator error a rank reports it, then stays alive S seconds with the
  // communicator and the failed op's events left as they are before it aborts and exits 3. 0: exit at once.
  double hold_on_error_s = 0;
  // --layout tp=K: two communicators per rank, Megatron's tensor-parallel group (K consecutive ranks) and
  // data-parallel group (same index in every TP group), driven one after the other from one thread. 0: off.
  int tp = 0;
  std::vector<ClockOffset> clock_offsets;  // --clock-offset, at most one per rank
  double timeout_s = 300;
  bool expect_hang = false;
  int net_max_version = 12;  // --net-max-version: emulate an older NCCL's newest net ABI
  int graph_replay = 0;      // replays per captured op
  int compare_profiler = 0;  // on/off alternations per size, 0 = off
  int ib_devices = 0;        // --ib-events DEVICES:QPS (0: off)
  int ib_qps = 1;
  bool fuse_nics = false;
  bool symmetric = false;  // --symmetric: v7 collectives run as symmetric kernels (isSymColl)
  int tags = 0;              // --tags N: v7 user tags 1..N, one per operation in turn (0: untagged)    // --fuse-nics: one virtual device of every net device (makeVDevice)
  int rank = -1;             // one rank per invocation (with --root)
  std::string root;          // rendezvous host:port
  std::vector<std::string> argv;  // for re-exec by the launcher
};

// Parses argv strictly: an unknown option, a missing value or a malformed or out-of-range number is an error.
// On error returns false and sets *error to one line naming the option (and the value). --help sets *help.
bool ParseOptions(int argc, char** argv, Options* o, bool* help, std::string* error);
const char* Usage();

// Splits a --root value HOST:PORT (PORT 1..65535); on failure returns false and sets *why.
bool SplitRoot(const std::string& root, std::string* host, int* port, std::string* why);

// The --clock-offset of `rank` in ms (0 when none was given).
long ClockOffsetMs(const Options& o, int rank);

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_OPTIONS_H_

// One rank process of the emulated job: builds its communicators (the first from a unique id shared through
// the bootstrap, the others split from it), drives each from its own thread through the op/size sweep with
// byte-for-byte checks and the requested faults, gathers timings and, on rank 0, prints the nccl-tests style
// report (or JSON). Returns the process exit code.
#ifndef NCCLSCOPE_TOOLS_SIM_RANK_JOB_H_
#define NCCLSCOPE_TOOLS_SIM_RANK_JOB_H_

#include "options.h"

namespace ncclscope::sim {

int RunRank(const Options& o, int rank, const std::string& rendezvous);

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_RANK_JOB_H_

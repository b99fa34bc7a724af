// Who this process is, for the labels that tell ranks apart in Prometheus (docs/metrics.md, "Identity"):
// the job id (NCCLSCOPE_JOB_ID, else SLURM_JOB_ID), the host, the global rank (RANK, SLURM_PROCID,
// OMPI_COMM_WORLD_RANK, PMI_RANK), the local rank (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID,
// MPI_LOCALRANKID) and the UUID of the CUDA device current on the calling thread.
// Identity() is computed once, at its first call (the exporters call it from their Start(), on the thread
// NCCL initialises the plugin on, where the device is set); it never blocks on anything but a CUDA driver
// the process has already loaded, and never fails: what cannot be found is left empty. Thread-safe.
#ifndef NCCLSCOPE_COMMON_PROCESS_IDENTITY_H_
#define NCCLSCOPE_COMMON_PROCESS_IDENTITY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ncclscope {

struct ProcessIdentity {
  std::string job;          // ncclscope_job
  std::string host;         // host
  std::string global_rank;  // global_rank, decimal
  std::string local_rank;   // local_rank, decimal
  std::string gpu_uuid;     // gpu_uuid: GPU-… or MIG-…

  // (label name, value) in the order above, empty values left out.
  std::vector<std::pair<std::string, std::string>> Labels() const;
};

// The label names Labels() can return.
const std::vector<std::string>& IdentityLabelNames();

const ProcessIdentity& Identity();

// The environment part (job, host, ranks; no GPU), through `getenv_fn` (tests pass a fake environment).
// A rank variable that is set but is not a non-negative decimal integer in range is skipped with a
// warning naming it, and the next variable of the list is used.
ProcessIdentity IdentityFromEnv(const std::function<const char*(const char*)>& getenv_fn, const std::string& job,
                                const std::string& host);

// The local rank from the usual launcher variables, or -1 (silent: Identity() warns about bad values).
int LocalRankFromEnv();
// The job's number of ranks (WORLD_SIZE, SLURM_NTASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE), or -1 (silent).
int WorldSizeFromEnv();
// The global rank likewise (the same variables and order as Identity().global_rank), or -1. For callers
// that must not be the first to call Identity(): its GPU lookup wants the thread NCCL initialises on.
int GlobalRankFromEnv();

// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (nvidia-smi's spelling), `MIG-…` for a MIG instance.
std::string FormatGpuUuid(const unsigned char (&bytes)[16], bool mig);

// The UUID of the device of the CUDA context current on this thread, through a libcuda.so.1 the process
// has already loaded (dlopen RTLD_NOLOAD: never loads or initialises CUDA in a process that does not use
// it); "" without a driver, without a current context, or on any error.
std::string CurrentGpuUuid();

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_PROCESS_IDENTITY_H_

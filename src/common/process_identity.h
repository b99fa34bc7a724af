// Who this process is, for the labels that tell ranks apart in Prometheus (docs/metrics.md, "Identity"):
// the job id (NCCLSCOPE_JOB_ID, else SLURM_JOB_ID, else the other launchers' variables, JobIdFromEnv), the
// host (NCCLSCOPE_NODE_NAME, else NODE_NAME as Kubernetes' downward API sets it, else the host name), the
// global rank (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK), the local rank (LOCAL_RANK,
// OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, MPI_LOCALRANKID) and the GPU of the CUDA device current on the
// calling thread: the physical GPU's UUID always (on a MIG instance its parent's, as dcgm-exporter labels it),
// with the MIG GPU instance id beside it.
// Identity() is computed once, at its first call (the exporters call it from their Start(), on the thread
// NCCL initialises the plugin on, where the device is set); it never blocks on anything but a CUDA driver
// the process has already loaded (and, on a MIG instance only, NVML's initialisation), and never fails:
// what cannot be found is left empty. Thread-safe.
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
  std::string gpu_uuid;     // gpu_uuid: GPU-…, on MIG the parent GPU's (MIG-… only where NVML cannot tell)
  std::string gpu_instance_id;  // gpu_instance_id: the MIG GPU instance id (dcgm-exporter's GPU_I_ID); "" off MIG
  // Not an identity label: the MIG device's own MIG-… UUID ("" off MIG), on ncclscope_process_info only (one
  // value per process, so it multiplies no series).
  std::string mig_uuid;
  // Not an identity label either: the GPU's PCI address (0000:17:00.0), "" unknown; on ncclscope_process_info,
  // and where the rank's NIC is inferred from the PCI distance to it (host_nics/rank_nics.h).
  std::string gpu_pci;

  // (label name, value) of the identity labels in the order above, empty values left out.
  std::vector<std::pair<std::string, std::string>> Labels() const;
};

// The label names Labels() can return.
const std::vector<std::string>& IdentityLabelNames();

const ProcessIdentity& Identity();

// The environment part (job, host, ranks; no GPU), through `getenv_fn` (tests pass a fake environment).
// `job` and `host` are taken as common/safe_text.h's SafeLabelValue makes them (valid UTF-8, no control
// characters, at most kMaxIdentityValueBytes), with a warning when that changed them: the one place the
// identity's text is made safe for every output.
// A rank variable that is set but is not a non-negative decimal integer in range is skipped with a
// warning naming it, and the next variable of the list is used.
ProcessIdentity IdentityFromEnv(const std::function<const char*(const char*)>& getenv_fn, const std::string& job,
                                const std::string& host);

// The job label: `configured` (NCCLSCOPE_JOB_ID, else SLURM_JOB_ID: the parameter) when set, else the first
// launcher variable of FLUX_JOB_ID, PBS_JOBID, LSB_JOBID, JOBSET_NAME, TORCHELASTIC_RUN_ID (torchrun's "none",
// its value without --rdzv-id, is no job id) that is set, else "".
std::string JobIdFromEnv(const std::string& configured, const std::function<const char*(const char*)>& getenv_fn);

// The host label: `node_name` (NCCLSCOPE_NODE_NAME, else NODE_NAME: the parameter) when set, else `hostname`.
std::string HostLabel(const std::string& node_name, const std::string& hostname);

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
// The PCI address of that device, as NormalizePciBusId spells it; "" likewise.
std::string CurrentGpuPciBusId();
// A PCI bus id as CUDA ("0000:17:00.0") or NVML ("00000000:17:00.0") writes it, in sysfs's spelling
// ("0000:17:00.0", lower case); "" when it is not one.
std::string NormalizePciBusId(const std::string& bus_id);

// What NVML says of a MIG device: its parent GPU's UUID and its GPU instance id (decimal).
struct MigParent {
  std::string gpu_uuid;
  std::string gpu_instance_id;
};

// Asks NVML, loaded with dlopen(`nvml_library`) (production: "libnvidia-ml.so.1"; tests name a fake), for
// the parent of the MIG device `mig_uuid`: nvmlInit_v2, nvmlDeviceGetHandleByUUID,
// nvmlDeviceGetDeviceHandleFromMigDeviceHandle, nvmlDeviceGetUUID, nvmlDeviceGetGpuInstanceId, nvmlShutdown.
// False, with `*why` naming the step that failed, on any error. The library is never unloaded.
bool MigParentFromNvml(const std::string& mig_uuid, const char* nvml_library, MigParent* out, std::string* why);

// Sets the GPU fields of `id` from the CUDA device's UUID: off MIG gpu_uuid = `cuda_uuid`; on MIG (`MIG-…`)
// mig_uuid = `cuda_uuid` and, when NVML answers, gpu_uuid = the parent's GPU-… and gpu_instance_id; when it
// does not, one warning and gpu_uuid = the MIG UUID (no instance id).
void ApplyGpuUuid(const std::string& cuda_uuid, const char* nvml_library, ProcessIdentity* id);

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_PROCESS_IDENTITY_H_

#include "common/process_identity.h"

#include <dlfcn.h>
#include <strings.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/host.h"
#include "common/log.h"
#include "common/params.h"
#include "common/safe_text.h"

namespace ncclscope {
namespace {

constexpr const char* kGlobalRankVars[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"};
// The launchers' job sizes, in the order of the global rank variables.
constexpr const char* kWorldSizeVars[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
constexpr const char* kLocalRankVars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                          "MPI_LOCALRANKID"};
// Launchers' job ids, after the parameter (NCCLSCOPE_JOB_ID, SLURM_JOB_ID): Flux, PBS, LSF, then the
// Kubernetes conventions (JobSet's name as its users and XPK export it, torchrun's rendezvous id, which
// Kubeflow's PyTorchJob passes as PET_RDZV_ID).
constexpr const char* kJobIdVars[] = {"FLUX_JOB_ID", "PBS_JOBID", "LSB_JOBID", "JOBSET_NAME",
                                      "TORCHELASTIC_RUN_ID"};
constexpr long kMaxGlobalRank = (1L << 31) - 1;
constexpr long kMaxLocalRank = 4095;

// The first variable of `vars` that holds a decimal integer in [0, max], or -1.
template <size_t N>
long RankFrom(const char* const (&vars)[N], long max, const std::function<const char*(const char*)>& getenv_fn,
              bool warn) {
  for (const char* var : vars) {
    const char* v = getenv_fn(var);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    errno = 0;
    const long r = std::strtol(v, &end, 10);
    if (*v >= '0' && *v <= '9' && *end == '\0' && errno == 0 && r >= 0 && r <= max) return r;
    if (warn) {
      NCCLSCOPE_WARN(subsys::kInit, "%s='%s' is not a rank (an integer 0..%ld); ignored for the identity labels",
                     var, v, max);
    }
  }
  return -1;
}

// The libcuda entry points used, as the driver API declares them (CUresult is an int enum, CUdevice an int,
// CUuuid 16 bytes).
using CuInitFn = int (*)(unsigned int);
using CuCtxGetDeviceFn = int (*)(int*);
using CuDeviceGetUuidFn = int (*)(unsigned char*, int);
using CuDeviceGetPciBusIdFn = int (*)(char*, int, int);

// The NVML entry points used, as nvml.h declares them (nvmlReturn_t is an int enum, nvmlDevice_t an opaque
// pointer; NVML_SUCCESS is 0).
using NvmlDevice = void*;
using NvmlInitFn = int (*)();
using NvmlShutdownFn = int (*)();
using NvmlHandleByUuidFn = int (*)(const char*, NvmlDevice*);
using NvmlParentOfMigFn = int (*)(NvmlDevice, NvmlDevice*);
using NvmlGetUuidFn = int (*)(NvmlDevice, char*, unsigned int);
using NvmlGpuInstanceIdFn = int (*)(NvmlDevice, unsigned int*);
constexpr unsigned int kNvmlUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
// NVML numbers GPU instances from 0; a real GPU has at most a handful (7 on an A100/H100/H200).
constexpr unsigned int kMaxGpuInstanceId = 1024;

// `raw` as SafeLabelValue makes it, with one warning when that changed it. The job and host labels are the
// identity's text from outside (environment, host name); made safe here, where they are read, every output
// (exposition, textfile, file_sd, dumps) carries the same valid value.
std::string SafeIdentityValue(const char* label, const char* from, const std::string& raw) {
  SafeTextReport report;
  std::string safe = SafeLabelValue(raw, kMaxIdentityValueBytes, &report);
  if (report.replaced != 0 || report.cut) {
    NCCLSCOPE_WARN(subsys::kInit,
                   "the %s label (from %s) was not plain UTF-8 text of at most %zu bytes: %zu invalid byte "
                   "sequence(s) or control character(s) replaced by U+FFFD%s; labelled '%s'",
                   label, from, kMaxIdentityValueBytes, report.replaced,
                   report.cut ? (", cut from " + std::to_string(raw.size()) + " bytes").c_str() : "",
                   safe.c_str());
  }
  return safe;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ProcessIdentity::Labels() const {
  std::vector<std::pair<std::string, std::string>> out;
  const std::vector<std::string>& names = IdentityLabelNames();
  const std::string* values[] = {&job, &host, &global_rank, &local_rank, &gpu_uuid, &gpu_instance_id};
  for (size_t i = 0; i < names.size(); ++i) {
    if (!values[i]->empty()) out.emplace_back(names[i], *values[i]);
  }
  return out;
}

const std::vector<std::string>& IdentityLabelNames() {
  static const auto* names =
      new std::vector<std::string>{"ncclscope_job", "host",     "global_rank",
                                   "local_rank",    "gpu_uuid", "gpu_instance_id"};
  return *names;
}

ProcessIdentity IdentityFromEnv(const std::function<const char*(const char*)>& getenv_fn, const std::string& job,
                                const std::string& host) {
  ProcessIdentity id;
  id.job = SafeIdentityValue("ncclscope_job", "NCCLSCOPE_JOB_ID, SLURM_JOB_ID or a launcher's job id", job);
  id.host = SafeIdentityValue("host", "NCCLSCOPE_NODE_NAME, NODE_NAME or the host name", host);
  const long global = RankFrom(kGlobalRankVars, kMaxGlobalRank, getenv_fn, true);
  if (global >= 0) id.global_rank = std::to_string(global);
  const long local = RankFrom(kLocalRankVars, kMaxLocalRank, getenv_fn, true);
  if (local >= 0) id.local_rank = std::to_string(local);
  return id;
}

std::string JobIdFromEnv(const std::string& configured, const std::function<const char*(const char*)>& getenv_fn) {
  if (!configured.empty()) return configured;
  for (const char* var : kJobIdVars) {
    const char* v = getenv_fn(var);
    if (v == nullptr || *v == '\0') continue;
    if (std::strcmp(var, "TORCHELASTIC_RUN_ID") == 0 && strcasecmp(v, "none") == 0) continue;
    return v;
  }
  return "";
}

std::string HostLabel(const std::string& node_name, const std::string& hostname) {
  return node_name.empty() ? hostname : node_name;
}

int LocalRankFromEnv() {
  return static_cast<int>(RankFrom(kLocalRankVars, kMaxLocalRank, [](const char* v) { return std::getenv(v); }, false));
}

int WorldSizeFromEnv() {
  // RankFrom takes values in [0, max]; a world of 0 ranks is no answer.
  const long n = RankFrom(kWorldSizeVars, kMaxGlobalRank, [](const char* v) { return std::getenv(v); }, false);
  return n > 0 ? static_cast<int>(n) : -1;
}

int GlobalRankFromEnv() {
  return static_cast<int>(
      RankFrom(kGlobalRankVars, kMaxGlobalRank, [](const char* v) { return std::getenv(v); }, false));
}

std::string FormatGpuUuid(const unsigned char (&b)[16], bool mig) {
  char buf[64];
  std::snprintf(buf, sizeof(buf),
                "%s-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", mig ? "MIG" : "GPU",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return buf;
}

namespace {

// The device of the CUDA context current on this thread, through a libcuda.so.1 the process has already loaded
// (RTLD_NOLOAD: never loads or initialises CUDA in a process that does not use it; the handle is never closed,
// a reference to a library that stays loaded anyway); -1 without one.
int CurrentCudaDevice(void** cuda) {
  *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (*cuda == nullptr) return -1;
  auto cu_init = reinterpret_cast<CuInitFn>(dlsym(*cuda, "cuInit"));
  auto ctx_device = reinterpret_cast<CuCtxGetDeviceFn>(dlsym(*cuda, "cuCtxGetDevice"));
  if (cu_init == nullptr || ctx_device == nullptr || cu_init(0) != 0) return -1;
  int device = -1;
  // No current context (CUDA_ERROR_INVALID_CONTEXT): no device to name; never create a context here.
  if (ctx_device(&device) != 0 || device < 0) return -1;
  return device;
}

}  // namespace

// Built and reviewed, not run here: the build and test machines have no GPU.
std::string CurrentGpuUuid() {
  void* cuda = nullptr;
  const int device = CurrentCudaDevice(&cuda);
  if (device < 0) return "";
  auto uuid_v2 = reinterpret_cast<CuDeviceGetUuidFn>(dlsym(cuda, "cuDeviceGetUuid_v2"));
  auto uuid_v1 = reinterpret_cast<CuDeviceGetUuidFn>(dlsym(cuda, "cuDeviceGetUuid"));
  if (uuid_v2 == nullptr && uuid_v1 == nullptr) return "";
  unsigned char own[16] = {};
  if (uuid_v2 != nullptr ? uuid_v2(own, device) != 0 : uuid_v1(own, device) != 0) return "";
  // _v2 returns a MIG instance's own UUID, the legacy entry point its GPU's: they differ only on MIG.
  unsigned char gpu[16] = {};
  const bool mig = uuid_v2 != nullptr && uuid_v1 != nullptr && uuid_v1(gpu, device) == 0 &&
                   std::memcmp(own, gpu, sizeof(own)) != 0;
  return FormatGpuUuid(own, mig);
}

// Built and reviewed, not run here (no GPU); its spelling is NormalizePciBusId's, which is tested.
std::string CurrentGpuPciBusId() {
  void* cuda = nullptr;
  const int device = CurrentCudaDevice(&cuda);
  if (device < 0) return "";
  auto bus_id = reinterpret_cast<CuDeviceGetPciBusIdFn>(dlsym(cuda, "cuDeviceGetPCIBusId"));
  char text[64] = {};
  if (bus_id == nullptr || bus_id(text, sizeof(text), device) != 0) return "";
  return NormalizePciBusId(text);
}

std::string NormalizePciBusId(const std::string& bus_id) {
  // CUDA writes "0000:17:00.0", NVML "00000000:17:00.0", either in upper case; sysfs "0000:17:00.0".
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  // Only hex digits and separators: sscanf's %x would also take a "0x" prefix.
  if (bus_id.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) return "";
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4 ||
      domain > 0xffff || bus > 0xff || device > 0x1f || function > 7) {
    return "";
  }
  char out[16];
  std::snprintf(out, sizeof(out), "%04x:%02x:%02x.%x", domain, bus, device, function);
  return out;
}

// Built against fakes (tests/exporters/fake_nvml.cc), not run against a real NVML here: no GPU on the
// build and test machines.
bool MigParentFromNvml(const std::string& mig_uuid, const char* nvml_library, MigParent* out, std::string* why) {
  // RTLD_LOCAL: NVML's symbols stay out of the process's namespace. Never closed: NCCL loads the same
  // library, and unloading code NVML may have left threads in is worse than keeping a mapping.
  void* nvml = dlopen(nvml_library, RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) {
    *why = std::string("cannot load ") + nvml_library;
    return false;
  }
  auto init = reinterpret_cast<NvmlInitFn>(dlsym(nvml, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<NvmlShutdownFn>(dlsym(nvml, "nvmlShutdown"));
  auto by_uuid = reinterpret_cast<NvmlHandleByUuidFn>(dlsym(nvml, "nvmlDeviceGetHandleByUUID"));
  auto parent_of = reinterpret_cast<NvmlParentOfMigFn>(dlsym(nvml, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle"));
  auto get_uuid = reinterpret_cast<NvmlGetUuidFn>(dlsym(nvml, "nvmlDeviceGetUUID"));
  auto gi_id = reinterpret_cast<NvmlGpuInstanceIdFn>(dlsym(nvml, "nvmlDeviceGetGpuInstanceId"));
  if (init == nullptr || shutdown == nullptr || by_uuid == nullptr || parent_of == nullptr || get_uuid == nullptr ||
      gi_id == nullptr) {
    *why = std::string(nvml_library) + " lacks the MIG entry points (a driver older than R470?)";
    return false;
  }
  int rc = init();
  if (rc != 0) {
    *why = "nvmlInit_v2 returned " + std::to_string(rc);
    return false;
  }
  // The steps run in order until one fails (&&), which is the one reported.
  auto step = [&](const char* name, int result) {
    if (result != 0) *why = std::string(name) + " returned " + std::to_string(result);
    return result == 0;
  };
  NvmlDevice mig = nullptr, gpu = nullptr;
  char uuid[kNvmlUuidBufferSize] = {};
  unsigned int instance = 0;
  const bool ok = step("nvmlDeviceGetHandleByUUID", by_uuid(mig_uuid.c_str(), &mig)) &&
                  step("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", parent_of(mig, &gpu)) &&
                  step("nvmlDeviceGetUUID", get_uuid(gpu, uuid, sizeof(uuid))) &&
                  step("nvmlDeviceGetGpuInstanceId", gi_id(mig, &instance));
  shutdown();
  if (!ok) return false;
  uuid[sizeof(uuid) - 1] = '\0';
  if (std::strncmp(uuid, "GPU-", 4) != 0 || instance > kMaxGpuInstanceId) {
    *why = std::string("NVML answered parent '") + uuid + "', instance " + std::to_string(instance);
    return false;
  }
  out->gpu_uuid = uuid;
  out->gpu_instance_id = std::to_string(instance);
  return true;
}

void ApplyGpuUuid(const std::string& cuda_uuid, const char* nvml_library, ProcessIdentity* id) {
  id->gpu_uuid = cuda_uuid;
  id->gpu_instance_id.clear();
  id->mig_uuid.clear();
  if (cuda_uuid.rfind("MIG-", 0) != 0) return;
  id->mig_uuid = cuda_uuid;
  MigParent parent;
  std::string why;
  if (!MigParentFromNvml(cuda_uuid, nvml_library, &parent, &why)) {
    NCCLSCOPE_WARN(subsys::kInit,
                   "MIG device %s: no parent GPU from NVML (%s); gpu_uuid stays the MIG UUID, without "
                   "gpu_instance_id, so it will not join dcgm-exporter's UUID",
                   cuda_uuid.c_str(), why.c_str());
    return;
  }
  id->gpu_uuid = parent.gpu_uuid;
  id->gpu_instance_id = parent.gpu_instance_id;
}

const ProcessIdentity& Identity() {
  static std::once_flag once;
  static ProcessIdentity* id = nullptr;  // -z nodelete global, never destroyed
  std::call_once(once, [] {
    auto getenv_fn = [](const char* v) { return std::getenv(v); };
    id = new ProcessIdentity(IdentityFromEnv(getenv_fn, JobIdFromEnv(Params().Str(ParamId::kJobId), getenv_fn),
                                             HostLabel(Params().Str(ParamId::kNodeName), HostName())));
    ApplyGpuUuid(CurrentGpuUuid(), "libnvidia-ml.so.1", id);
    id->gpu_pci = CurrentGpuPciBusId();
    NCCLSCOPE_INFO(subsys::kInit, "identity: job '%s' host %s global rank '%s' local rank '%s' gpu '%s'%s%s%s%s",
                   id->job.c_str(), id->host.c_str(), id->global_rank.c_str(), id->local_rank.c_str(),
                   id->gpu_uuid.c_str(), id->gpu_instance_id.empty() ? "" : " gpu instance ",
                   id->gpu_instance_id.c_str(), id->mig_uuid.empty() ? "" : " mig ", id->mig_uuid.c_str());
  });
  return *id;
}

}  // namespace ncclscope

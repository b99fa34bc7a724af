// A FAKE libnvidia-ml.so.1 for identity_test (no GPU or NVML on the build machines): the NVML entry points
// MigParentFromNvml() calls, for one MIG instance (MIG-6a1b2c3d-0000-4000-8000-00000000000a, GPU instance 3)
// of one GPU (GPU-9f8e7d6c-1111-4111-8111-00000000000b), the devices fake_cuda.cc plays. Tests make one
// entry point fail with fake_nvml_fail("name", code) and read the init/shutdown balance with
// fake_nvml_open_count(), both through dlsym.
#include <cstring>
#include <string>

namespace {
int g_gpu, g_mig;  // the handles are these objects' addresses
std::string g_fail;
int g_fail_code = 0;
int g_open = 0;
const char kMig[] = "MIG-6a1b2c3d-0000-4000-8000-00000000000a";
const char kGpu[] = "GPU-9f8e7d6c-1111-4111-8111-00000000000b";
constexpr int kNotFound = 6, kInvalidArgument = 2, kInsufficientSize = 7;

bool Fails(const char* name, int* rc) {
  if (g_fail != name) return false;
  *rc = g_fail_code;
  return true;
}
}  // namespace

#define FAKE_API extern "C" __attribute__((visibility("default")))

FAKE_API void fake_nvml_fail(const char* name, int code) {
  g_fail = name;
  g_fail_code = code;
}
FAKE_API int fake_nvml_open_count() { return g_open; }

FAKE_API int nvmlInit_v2() {
  int rc = 0;
  if (Fails("nvmlInit_v2", &rc)) return rc;
  ++g_open;
  return 0;
}
FAKE_API int nvmlShutdown() {
  --g_open;
  return 0;
}
FAKE_API int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  int rc = 0;
  if (Fails("nvmlDeviceGetHandleByUUID", &rc)) return rc;
  if (std::strcmp(uuid, kMig) == 0) {
    *device = &g_mig;
  } else if (std::strcmp(uuid, kGpu) == 0) {
    *device = &g_gpu;
  } else {
    return kNotFound;
  }
  return 0;
}
FAKE_API int nvmlDeviceGetDeviceHandleFromMigDeviceHandle(void* mig, void** device) {
  int rc = 0;
  if (Fails("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", &rc)) return rc;
  if (mig != &g_mig) return kInvalidArgument;
  *device = &g_gpu;
  return 0;
}
FAKE_API int nvmlDeviceGetUUID(void* device, char* uuid, unsigned int length) {
  int rc = 0;
  if (Fails("nvmlDeviceGetUUID", &rc)) return rc;
  const char* text = device == &g_gpu ? kGpu : device == &g_mig ? kMig : nullptr;
  if (text == nullptr) return kInvalidArgument;
  if (std::strlen(text) + 1 > length) return kInsufficientSize;
  std::strcpy(uuid, text);
  return 0;
}
FAKE_API int nvmlDeviceGetGpuInstanceId(void* device, unsigned int* id) {
  int rc = 0;
  if (Fails("nvmlDeviceGetGpuInstanceId", &rc)) return rc;
  if (device != &g_mig) return kInvalidArgument;
  *id = 3;
  return 0;
}

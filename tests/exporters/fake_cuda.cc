// A FAKE libcuda.so.1 for identity_test (no GPU or CUDA driver on the build machines): only the four entry
// points CurrentGpuUuid() calls. It plays a MIG instance: cuDeviceGetUuid_v2 answers the instance's own
// UUID, the legacy cuDeviceGetUuid its GPU's. The test dlopens it by path first, so that CurrentGpuUuid()'s
// dlopen("libcuda.so.1", RTLD_NOLOAD) finds it by its soname, as it finds the driver CUDA's runtime loaded.
#include <cstring>

namespace {
// MIG-6a1b2c3d-0000-4000-8000-00000000000a and GPU-9f8e7d6c-1111-4111-8111-00000000000b.
const unsigned char kMigUuid[16] = {0x6a, 0x1b, 0x2c, 0x3d, 0x00, 0x00, 0x40, 0x00,
                                    0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a};
const unsigned char kGpuUuid[16] = {0x9f, 0x8e, 0x7d, 0x6c, 0x11, 0x11, 0x41, 0x11,
                                    0x81, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b};
}  // namespace

#define FAKE_API extern "C" __attribute__((visibility("default")))

FAKE_API int cuInit(unsigned int) { return 0; }
FAKE_API int cuCtxGetDevice(int* device) {
  *device = 0;
  return 0;
}
FAKE_API int cuDeviceGetUuid_v2(unsigned char* uuid, int device) {
  if (device != 0) return 101;  // CUDA_ERROR_INVALID_DEVICE
  std::memcpy(uuid, kMigUuid, 16);
  return 0;
}
FAKE_API int cuDeviceGetUuid(unsigned char* uuid, int device) {
  if (device != 0) return 101;
  std::memcpy(uuid, kGpuUuid, 16);
  return 0;
}

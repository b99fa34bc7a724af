/*
 * A stand-in libcudart.so for running aws-ofi-nccl on a host without a GPU.
 *
 * aws-ofi-nccl built with --enable-cudart-dynamic dlopen()s "libcudart.so" at
 * its net init and fails the whole plugin if it cannot. It calls only two
 * runtime functions itself:
 *   cudaRuntimeGetVersion             -> we answer 13000 (CUDA 13.0)
 *   cudaGetDriverEntryPointByVersion  -> (runtime >= 13000) hands it driver functions
 *   cudaGetDriverEntryPoint           -> the same, for a plugin that asks the CUDA 12 way
 * and through them resolves about thirty driver functions by name. Every
 * driver function it gets here answers "no GPU": cuDriverGetVersion says
 * 13000, the error-string pair describes the error, cuThreadExchangeStreamCaptureMode
 * succeeds, cuCtxGetCurrent gives a NULL context, and everything that would need
 * a device (cuCtxGetDevice, cuDeviceGetAttribute, cuPointerGetAttributes,
 * cuMemAlloc, ...) returns CUDA_ERROR_NO_DEVICE. That is enough for host-memory
 * (NCCL_PTR_HOST) traffic over libfabric's tcp;ofi_rxm provider.
 *
 * No CUDA headers: the ABI is plain ints and pointers.
 *
 * Build:  cc -shared -fPIC -O2 -o libcudart.so standin_cudart.c
 * Use:    LD_LIBRARY_PATH=<dir with this libcudart.so>:... (before any real CUDA)
 * Manual proof only (tests/manual/ofi/ofi_proof.sh); not part of CI.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  kSuccess = 0,
  kErrorInvalidValue = 1,
  kErrorNoDevice = 100,
};

/* cudaDriverEntryPointQueryResult */
enum { kEntryPointSuccess = 0, kEntryPointSymbolNotFound = 1 };

static int trace_enabled(void) {
  static int cached = -1;
  if (cached < 0) {
    const char *v = getenv("STANDIN_CUDART_TRACE");
    cached = (v != NULL && v[0] == '1') ? 1 : 0;
  }
  return cached;
}
#define TRACE(...)                                    \
  do {                                                \
    if (trace_enabled()) {                            \
      fprintf(stderr, "standin-cudart: " __VA_ARGS__); \
      fputc('\n', stderr);                            \
    }                                                 \
  } while (0)

/* ---------------- driver functions handed out by name ---------------- */

static int st_cuDriverGetVersion(int *version) {
  if (version == NULL) return kErrorInvalidValue;
  *version = 13000;
  return kSuccess;
}

static const char *error_name(int err) {
  switch (err) {
    case kSuccess: return "CUDA_SUCCESS";
    case kErrorInvalidValue: return "CUDA_ERROR_INVALID_VALUE";
    case kErrorNoDevice: return "CUDA_ERROR_NO_DEVICE";
    default: return "CUDA_ERROR_UNKNOWN";
  }
}

static int st_cuGetErrorName(int err, const char **out) {
  if (out == NULL) return kErrorInvalidValue;
  *out = error_name(err);
  return kSuccess;
}

static int st_cuGetErrorString(int err, const char **out) {
  if (out == NULL) return kErrorInvalidValue;
  *out = (err == kErrorNoDevice) ? "no CUDA-capable device (stand-in libcudart)"
                                 : "stand-in libcudart: no GPU on this host";
  return kSuccess;
}

static int st_cuCtxGetCurrent(void **ctx) {
  if (ctx == NULL) return kErrorInvalidValue;
  *ctx = NULL; /* no context bound: the truth on a host with no GPU */
  return kSuccess;
}

static int st_cuCtxSetCurrent(void *ctx) {
  return ctx == NULL ? kSuccess : kErrorNoDevice;
}

/* Stream-capture mode exchange has nothing to do without a device. */
static int st_cuThreadExchangeStreamCaptureMode(int *mode) {
  (void)mode;
  return kSuccess;
}

/* Everything else: there is no device. Variadic-free catch-all is safe under
 * the SysV x86-64 ABI, where a callee ignoring its arguments is harmless. */
static int st_no_device(void) { return kErrorNoDevice; }

struct entry {
  const char *name;
  void *fn;
};

static const struct entry kEntries[] = {
    {"cuDriverGetVersion", (void *)st_cuDriverGetVersion},
    {"cuGetErrorName", (void *)st_cuGetErrorName},
    {"cuGetErrorString", (void *)st_cuGetErrorString},
    {"cuCtxGetCurrent", (void *)st_cuCtxGetCurrent},
    {"cuCtxSetCurrent", (void *)st_cuCtxSetCurrent},
    {"cuThreadExchangeStreamCaptureMode", (void *)st_cuThreadExchangeStreamCaptureMode},
};

static void *lookup(const char *symbol) {
  size_t i;
  if (symbol == NULL) return NULL;
  for (i = 0; i < sizeof(kEntries) / sizeof(kEntries[0]); ++i) {
    if (strcmp(kEntries[i].name, symbol) == 0) return kEntries[i].fn;
  }
  /* Any other cu* driver function: present, and it reports no device. */
  if (strncmp(symbol, "cu", 2) == 0) return (void *)st_no_device;
  return NULL;
}

/* ---------------- the runtime functions it dlsym()s ---------------- */

int cudaRuntimeGetVersion(int *version) {
  TRACE("cudaRuntimeGetVersion -> 13000");
  if (version == NULL) return kErrorInvalidValue;
  *version = 13000;
  return kSuccess;
}

int cudaDriverGetVersion(int *version) {
  TRACE("cudaDriverGetVersion -> 13000");
  if (version == NULL) return kErrorInvalidValue;
  *version = 13000;
  return kSuccess;
}

int cudaGetDeviceCount(int *count) {
  TRACE("cudaGetDeviceCount -> 0");
  if (count != NULL) *count = 0;
  return kErrorNoDevice;
}

int cudaGetDevice(int *device) {
  TRACE("cudaGetDevice -> no device");
  if (device != NULL) *device = -1;
  return kErrorNoDevice;
}

int cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                     unsigned long long flags, int *status) {
  void *p = lookup(symbol);
  (void)flags;
  TRACE("cudaGetDriverEntryPointByVersion(%s, %u) -> %s", symbol ? symbol : "(null)", version,
        p ? "stub" : "not found");
  if (fn == NULL) return kErrorInvalidValue;
  *fn = p;
  if (status != NULL) *status = p ? kEntryPointSuccess : kEntryPointSymbolNotFound;
  return kSuccess;
}

int cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags, int *status) {
  return cudaGetDriverEntryPointByVersion(symbol, fn, 0, flags, status);
}

const char *cudaGetErrorString(int err) { return error_name(err); }
const char *cudaGetErrorName(int err) { return error_name(err); }

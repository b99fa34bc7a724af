// A net plugin whose v11 and v12 tables leave NULL every entry NCCL treats as optional (setNetAttr,
// makeVDevice, getDeviceMr, irecvConsumed), as aws-ofi-nccl's tables do; every other entry is ncclscope's
// own, so the data really moves. A test fixture: it checks that the emulated job calls optional entries
// only as NCCL does (NCCL skips setNetAttr when it is NULL), where it once died on a NULL call.
#include <dlfcn.h>

#include "ncclscope/abi/net.h"

extern "C" {
__attribute__((visibility("default"))) ncclscope_net_v11_t ncclNetPlugin_v11 = {};
__attribute__((visibility("default"))) ncclscope_net_v12_t ncclNetPlugin_v12 = {};
}

namespace {

template <class Table>
void CopyWithoutOptionalEntries(void* lib, const char* symbol, Table* out) {
  const auto* in = static_cast<const Table*>(dlsym(lib, symbol));
  if (in == nullptr) return;  // left zeroed: a table without a name, which a loader refuses
  *out = *in;
  out->name = "optional-null";
  out->setNetAttr = nullptr;
  out->makeVDevice = nullptr;
  out->getDeviceMr = nullptr;
  out->irecvConsumed = nullptr;
}

// Before any loader can dlsym the tables (constructors run inside dlopen).
__attribute__((constructor)) void LoadNcclscope() {
  void* lib = dlopen(NCCLSCOPE_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return;
  CopyWithoutOptionalEntries(lib, "ncclNetPlugin_v11", &ncclNetPlugin_v11);
  CopyWithoutOptionalEntries(lib, "ncclNetPlugin_v12", &ncclNetPlugin_v12);
}

}  // namespace

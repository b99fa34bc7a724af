#include "common/nccl_version.h"

#include <dlfcn.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/tsan_lock.h"

namespace ncclscope {
namespace {

// A libnccl opened RTLD_LOCAL (a framework's extension module pulled it in) is not in the global scope:
// RTLD_NOLOAD finds it by name without loading it.
std::string LookUp() {
  using GetVersionFn = int (*)(int*);
  auto fn = reinterpret_cast<GetVersionFn>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  void* handle = nullptr;
  for (const char* lib : {"libnccl.so.2", "libnccl.so"}) {
    if (fn != nullptr) break;
    handle = dlopen(lib, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (handle != nullptr) fn = reinterpret_cast<GetVersionFn>(dlsym(handle, "ncclGetVersion"));
    if (fn == nullptr && handle != nullptr) {
      dlclose(handle);
      handle = nullptr;
    }
  }
  int code = 0;
  const bool ok = fn != nullptr && fn(&code) == 0;  // 0: ncclSuccess
  if (handle != nullptr) dlclose(handle);  // drops only the reference RTLD_NOLOAD took
  return ok ? NcclVersionString(code) : "";
}

}  // namespace

std::string NcclVersionString(int code) {
  if (code <= 0) return "";
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

// The lookup runs outside our lock, so the loader's lock and ours never nest. Never destroyed: dumps and
// scrapes may run during exit.
std::string NcclVersionInProcess() {
  struct Cache {
    absl::Mutex mu;
    std::string version ABSL_GUARDED_BY(mu);  // "" until found
  };
  static Cache* cache = new Cache();
  {
    AnnotatedLock lock(&cache->mu);
    if (!cache->version.empty()) return cache->version;
  }
  std::string version = LookUp();
  if (version.empty()) return version;
  AnnotatedLock lock(&cache->mu);
  if (cache->version.empty()) cache->version = std::move(version);  // else another caller found it first
  return cache->version;
}

}  // namespace ncclscope

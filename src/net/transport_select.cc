#include "net/transport_select.h"

#include <dirent.h>
#include <dlfcn.h>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"

namespace ncclscope::net {
namespace {

ABSL_CONST_INIT absl::Mutex hook_mu(absl::kConstInit);
std::string* fake_sysfs_root ABSL_GUARDED_BY(hook_mu) = nullptr;

int CountDirEntries(const std::string& path) {
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return 0;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

// libibverbs may exist without sysfs entries (containers that hide /sys/class); ask it too.
int CountVerbsDevicesViaLibibverbs() {
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 0;
  using GetList = void** (*)(int*);
  using FreeList = void (*)(void**);
  auto get = reinterpret_cast<GetList>(dlsym(lib, "ibv_get_device_list"));
  auto release = reinterpret_cast<FreeList>(dlsym(lib, "ibv_free_device_list"));
  int n = 0;
  if (get != nullptr) {
    void** list = get(&n);
    if (list != nullptr && release != nullptr) release(list);
    if (n < 0) n = 0;
  }
  dlclose(lib);
  return n;
}

}  // namespace

void SetSysfsRootForTest(const std::string& root) {
  absl::MutexLock lock(&hook_mu);
  delete fake_sysfs_root;
  fake_sysfs_root = root.empty() ? nullptr : new std::string(root);
}

int CountVerbsDevices() {
  std::string root;
  {
    absl::MutexLock lock(&hook_mu);
    if (fake_sysfs_root != nullptr) root = *fake_sysfs_root;
  }
  if (!root.empty()) return CountDirEntries(root + "/class/infiniband");
  int n = CountDirEntries("/sys/class/infiniband");
  if (n > 0) return n;
  return CountVerbsDevicesViaLibibverbs();
}

Result<TransportChoice> ChooseTransport(const std::string& requested) {
  if (requested == "tcp") return TransportChoice{TransportKind::kTcp, "NCCLSCOPE_TRANSPORT=tcp"};
  if (requested == "ib") {
    return InvalidUsage(
        "NCCLSCOPE_TRANSPORT=ib, but ncclscope's verbs transport is not built yet; unset it (NCCL then "
        "uses its own IB transport) or set NCCLSCOPE_TRANSPORT=tcp");
  }
  int verbs = CountVerbsDevices();
  if (verbs > 0) {
    return Unimplemented(std::to_string(verbs) +
                         " RDMA device(s) present, and ncclscope's verbs transport is not built yet: "
                         "declining so that NCCL uses its own IB transport (set NCCLSCOPE_TRANSPORT=tcp "
                         "to force TCP)");
  }
  return TransportChoice{TransportKind::kTcp, "auto: no RDMA device found"};
}

}  // namespace ncclscope::net

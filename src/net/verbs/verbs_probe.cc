#include "net/verbs/verbs_probe.h"

#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"

namespace ncclscope::net::verbs {
namespace {

ABSL_CONST_INIT absl::Mutex hook_mu(absl::kConstInit);
std::string* fake_sysfs_root ABSL_GUARDED_BY(hook_mu) = nullptr;

std::vector<std::string> DirEntries(const std::string& path) {
  std::vector<std::string> names;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// libibverbs may exist without sysfs entries (containers that hide /sys/class); ask it too.
std::vector<std::string> NamesFromLibibverbs() {
  std::vector<std::string> names;
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return names;
  using GetList = void** (*)(int*);
  using FreeList = void (*)(void**);
  using GetName = const char* (*)(void*);
  auto get = reinterpret_cast<GetList>(dlsym(lib, "ibv_get_device_list"));
  auto release = reinterpret_cast<FreeList>(dlsym(lib, "ibv_free_device_list"));
  auto name = reinterpret_cast<GetName>(dlsym(lib, "ibv_get_device_name"));
  int n = 0;
  if (get != nullptr && release != nullptr && name != nullptr) {
    void** list = get(&n);
    for (int i = 0; list != nullptr && i < n; ++i) names.emplace_back(name(list[i]));
    if (list != nullptr) release(list);
  }
  dlclose(lib);
  return names;
}

}  // namespace

std::string SysfsRoot() {
  absl::MutexLock lock(&hook_mu);
  return fake_sysfs_root != nullptr ? *fake_sysfs_root : "/sys";
}

void SetSysfsRootForTest(const std::string& root) {
  absl::MutexLock lock(&hook_mu);
  delete fake_sysfs_root;
  fake_sysfs_root = root.empty() ? nullptr : new std::string(root);
}

std::vector<std::string> ListVerbsDeviceNames() {
  const std::string root = SysfsRoot();
  std::vector<std::string> names = DirEntries(root + "/class/infiniband");
  if (names.empty() && root == "/sys") names = NamesFromLibibverbs();
  return names;
}

}  // namespace ncclscope::net::verbs

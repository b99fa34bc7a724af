#include "net/verbs/verbs_probe.h"

#include <dirent.h>

#include <algorithm>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/tsan_lock.h"
#include "net/verbs/ibv_api.h"

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

// libibverbs may exist without sysfs entries (containers that hide /sys/class); ask it too, through the
// one table the transport uses.
std::vector<std::string> NamesFromLibibverbs() {
  std::vector<std::string> names;
  Result<const IbvApi*> api = LoadIbvApi();
  if (!api.ok()) return names;
  int n = 0;
  ibv_device** list = (*api)->get_device_list(&n);
  for (int i = 0; list != nullptr && i < n; ++i) names.emplace_back((*api)->get_device_name(list[i]));
  if (list != nullptr) (*api)->free_device_list(list);
  return names;
}

}  // namespace

std::string SysfsRoot() {
  AnnotatedLock lock(&hook_mu);
  return fake_sysfs_root != nullptr ? *fake_sysfs_root : "/sys";
}

void SetSysfsRootForTest(const std::string& root) {
  AnnotatedLock lock(&hook_mu);
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

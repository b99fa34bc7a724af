#include "net/chain/default_plugin.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include "common/plugin_library.h"
#include "common/regular_file.h"

namespace ncclscope::net::chain {
namespace {

// By device and inode: a symlink, a hard link or another path to ncclscope's file is ncclscope.
bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return !a.empty() && !b.empty() && ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string LoadError() {
  const char* e = dlerror();
  return e != nullptr ? e : "no reason given";
}

}  // namespace

DefaultNetPlugin FindDefaultNetPlugin() {
  DefaultNetPlugin found;
  const std::string name = kDefaultNetPluginName;
  const std::string ours = OurLibraryFile();
  std::string file = FindInLibraryPath(name);
  if (!file.empty()) {
    if (SameFile(file, ours)) {
      found.skipped = file + " is ncclscope itself";
      return found;
    }
    if (Status regular = CheckRegularFile(file); !regular.ok()) {
      found.skipped = regular.message();
      return found;
    }
    if (dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
      found.skipped = file + " does not load (" + LoadError() + "), for NCCL either";
      return found;
    }
    found.file = file;
    return found;
  }
  // Elsewhere only the loader knows where it looks (its cache, the system folders): ask it, then ask it where.
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const std::string e = LoadError();
    if (e.rfind(name + ": cannot open shared object file", 0) != 0) {
      found.skipped = name + " does not load (" + e + "), for NCCL either";
    }
    return found;  // otherwise there is none
  }
  link_map* map = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr || !*map->l_name) {
    found.skipped = name + " loads, but the loader does not say from where";
    return found;
  }
  file = map->l_name;
  if (SameFile(file, ours)) {
    dlclose(h);  // the reference just taken on ourselves (linked -z nodelete: nothing is unmapped)
    found.skipped = file + " is ncclscope itself";
    return found;
  }
  found.file = file;
  return found;
}

}  // namespace ncclscope::net::chain

#include "common/plugin_library.h"

#include <dlfcn.h>

#include <vector>

namespace ncclscope {

void* OpenPluginLibrary(const char* kind, const std::string& value, std::string* where) {
  std::string tried;
  std::vector<std::string> names{value};
  if (value.find('/') == std::string::npos) {
    names.insert(names.begin(), std::string("libnccl-") + kind + "-" + value + ".so");
  }
  for (const std::string& name : names) {
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *where = name;
      return h;
    }
    const char* e = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(e != nullptr ? e : name);
  }
  *where = tried;
  return nullptr;
}

}  // namespace ncclscope

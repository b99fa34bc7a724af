#include "common/plugin_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "common/regular_file.h"

namespace ncclscope {
namespace {

// The library ncclscope itself was loaded from.
const void* OurBase() {
  Dl_info self{};
  return dladdr(reinterpret_cast<void*>(&CheckNotOurs), &self) != 0 ? self.dli_fbase : nullptr;
}

}  // namespace

// ld.so.cache and the system folders hold regular files, so only LD_LIBRARY_PATH is searched here. An empty
// element is the current folder.
std::string FindInLibraryPath(const std::string& name) {
  const char* path = std::getenv("LD_LIBRARY_PATH");
  if (path == nullptr) return "";
  for (std::string rest = path;;) {
    const size_t colon = rest.find_first_of(":;");
    std::string dir = rest.substr(0, colon);
    const std::string file = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (::access(file.c_str(), F_OK) == 0) return file;
    if (colon == std::string::npos) return "";
    rest = rest.substr(colon + 1);
  }
}

std::string OurLibraryFile() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&CheckNotOurs), &self) == 0 || self.dli_fname == nullptr) return "";
  return self.dli_fname;
}

void* OpenPluginLibrary(const char* kind, const std::string& value, std::string* where) {
  std::string tried;
  std::vector<std::string> names{value};
  if (value.find('/') == std::string::npos) {
    names.insert(names.begin(), std::string("libnccl-") + kind + "-" + value + ".so");
  }
  for (const std::string& name : names) {
    const std::string file = name.find('/') != std::string::npos ? name : FindInLibraryPath(name);
    Status regular = file.empty() ? Status::Ok() : CheckRegularFile(file);
    if (!regular.ok()) {
      tried += (tried.empty() ? "" : "; ") + regular.message();
      continue;
    }
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

Status CheckNotOurs(const void* table, size_t bytes, const std::string& symbol, const std::string& where) {
  const void* ours = OurBase();
  if (ours == nullptr) return Status::Ok();
  auto is_ours = [ours](const void* p) {
    Dl_info info{};
    return p != nullptr && dladdr(p, &info) != 0 && info.dli_fbase == ours;
  };
  Dl_info self{};
  dladdr(ours, &self);
  const std::string us = std::string("ncclscope itself (") + (self.dli_fname ? self.dli_fname : "?") + ")";
  if (is_ours(table)) return InvalidUsage(where + " is " + us + ": wrapping ncclscope in itself would re-enter it");
  const auto* slots = static_cast<const void* const*>(table);
  for (size_t i = 1; i < bytes / sizeof(void*); ++i) {  // slot 0 is the name
    if (is_ours(slots[i])) {
      return InvalidUsage(where + ": its " + symbol + " points back into " + us + ", at function slot " +
                          std::to_string(i) + ": wrapping ncclscope in itself would re-enter it");
    }
  }
  return Status::Ok();
}

}  // namespace ncclscope

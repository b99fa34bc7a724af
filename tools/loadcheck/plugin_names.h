// How NCCL turns an NCCL_NET_PLUGIN / NCCL_PROFILER_PLUGIN value into the names it dlopen()s, in order
// (docs/nccl-integration.md; the same rules as the sim's loader): a value containing '/' or of the form
// lib*.so is opened as given; any other value V is tried as V, then as libnccl-<kind>-V.so, through the
// dynamic loader's search (LD_LIBRARY_PATH, rpath, ldconfig).
#ifndef NCCLSCOPE_TOOLS_LOADCHECK_PLUGIN_NAMES_H_
#define NCCLSCOPE_TOOLS_LOADCHECK_PLUGIN_NAMES_H_

#include <fnmatch.h>
#include <strings.h>

#include <string>
#include <vector>

namespace ncclscope::loadcheck {

// kind: "net" or "profiler".
inline std::vector<std::string> CandidateNames(const std::string& value, const std::string& kind) {
  if (value.find('/') != std::string::npos || fnmatch("lib*.so", value.c_str(), 0) == 0) return {value};
  return {value, "libnccl-" + kind + "-" + value + ".so"};
}

// False for the values with which NCCL opens no plugin file: empty, `none` (case-insensitive), and
// STATIC_PLUGIN (NCCL compares case-insensitively over the value's length, so any prefix of it, e.g. `static`).
inline bool NamesAPlugin(const std::string& value) {
  static const std::string kStatic = "STATIC_PLUGIN";
  if (value.empty() || strcasecmp(value.c_str(), "none") == 0) return false;
  return !(value.size() <= kStatic.size() && strncasecmp(value.c_str(), kStatic.c_str(), value.size()) == 0);
}

}  // namespace ncclscope::loadcheck

#endif  // NCCLSCOPE_TOOLS_LOADCHECK_PLUGIN_NAMES_H_

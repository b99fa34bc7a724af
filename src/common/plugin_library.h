// Opening another NCCL plugin library the way NCCL resolves NCCL_NET_PLUGIN / NCCL_PROFILER_PLUGIN: a value
// with a '/' is a path, used as given; a NAME is tried as libnccl-<kind>-NAME.so, then as given. RTLD_LOCAL,
// so its symbols (the same table names as ours) never interpose on ours or on NCCL's.
#ifndef NCCLSCOPE_COMMON_PLUGIN_LIBRARY_H_
#define NCCLSCOPE_COMMON_PLUGIN_LIBRARY_H_

#include <string>

namespace ncclscope {

// `kind` is "net" or "profiler". Returns the dlopen handle and sets *where to the name that loaded; on failure
// returns null and sets *where to every name tried with dlerror's reason.
void* OpenPluginLibrary(const char* kind, const std::string& value, std::string* where);

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_PLUGIN_LIBRARY_H_

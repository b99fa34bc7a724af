// Opening another NCCL plugin library the way NCCL resolves NCCL_NET_PLUGIN / NCCL_PROFILER_PLUGIN: a value
// with a '/' is a path, used as given; a NAME is tried as libnccl-<kind>-NAME.so, then as given. RTLD_LOCAL,
// so its symbols (the same table names as ours) never interpose on ours or on NCCL's. Each name must be a
// regular file (regular_file.h): a path as given, a bare name where LD_LIBRARY_PATH finds it; a FIFO would
// block dlopen forever. Thread-safety: none needed beyond dlopen's own.
#ifndef NCCLSCOPE_COMMON_PLUGIN_LIBRARY_H_
#define NCCLSCOPE_COMMON_PLUGIN_LIBRARY_H_

#include <cstddef>
#include <string>

#include "common/status.h"

namespace ncclscope {

// `kind` is "net" or "profiler". Returns the dlopen handle and sets *where to the name that loaded; on failure
// returns null and sets *where to every name tried with dlerror's reason (or why it was not opened).
void* OpenPluginLibrary(const char* kind, const std::string& value, std::string* where);

// The file a bare name's dlopen would open first from LD_LIBRARY_PATH, or "" when none there (the loader's other
// places, its cache and the system folders, are left to dlopen).
std::string FindInLibraryPath(const std::string& name);

// The file ncclscope's own object was loaded from ("" when the loader cannot say).
std::string OurLibraryFile();

// A plugin table (its name, then function pointers: `bytes` of pointer-sized slots) found as `symbol` in the
// library loaded from `where`. InvalidUsage when the table or any slot lies inside ncclscope's own object:
// wrapping ncclscope in itself (or a copy of our table) re-enters us. dladdr only: nothing is dereferenced but
// the table's own slots.
Status CheckNotOurs(const void* table, size_t bytes, const std::string& symbol, const std::string& where);

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_PLUGIN_LIBRARY_H_

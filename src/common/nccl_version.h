// The version of the NCCL this process runs, for the dumps' identity, the ncclscope_process_info metric and the
// plugin's first log line. Found among what is already loaded (ncclGetVersion in the global scope, else in a
// libnccl.so.2 opened RTLD_LOCAL, found with RTLD_NOLOAD); ncclscope never loads NCCL. ncclGetVersion only
// writes NCCL_VERSION_CODE and needs no initialised NCCL, so it is safe from a plugin's init.
#ifndef NCCLSCOPE_COMMON_NCCL_VERSION_H_
#define NCCLSCOPE_COMMON_NCCL_VERSION_H_

#include <string>

namespace ncclscope {

// "2.28.9" from NCCL's version code (X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before); "" for 0 or less.
std::string NcclVersionString(int code);

// The NCCL version of this process, "" when no NCCL is loaded. Kept once found (NCCL stays loaded); not found,
// it is looked up again at the next call. Takes the loader's lock (dlsym, dlopen): never call it on an event
// path or under a lock the loader's callers may hold. Thread-safe.
std::string NcclVersionInProcess();

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_NCCL_VERSION_H_

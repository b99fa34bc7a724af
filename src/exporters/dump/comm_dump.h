// The per-communicator JSON dump ("ncclscope.comm.v1"): written when a communicator's profiler
// context is finalized and when the stall watch fires, to
// <NCCLSCOPE_DUMP_DIR>/ncclscope-comm-<hash as 16 hex>-rank<r>.json, atomically through common/output_dir.h.
// No file at all when NCCLSCOPE_DUMP_DIR is empty. Knows nothing about NCCL: reads a CommSnapshot.
// All functions are thread-safe (they touch only their arguments and the file system).
#ifndef NCCLSCOPE_EXPORTERS_DUMP_COMM_DUMP_H_
#define NCCLSCOPE_EXPORTERS_DUMP_COMM_DUMP_H_

#include <string>

#include "common/status.h"
#include "core/registry.h"
#include "core/snapshot.h"
#include "nlohmann/json.hpp"

namespace ncclscope::dump {

nlohmann::json CommSnapshotToJson(const CommSnapshot& snap);
// "ncclscope-comm-<hash as 16 hex>-rank<r>.json"
std::string CommDumpName(uint64_t comm_hash, int rank);
// "stall", "finalize" or "request" (SIGUSR2 or a tool).
const char* DumpReasonName(DumpReason reason);
// Writes the dump into `dir` (created if missing) with the host, job id and reason; *path receives the file name.
Status WriteCommDump(const CommSnapshot& snap, const std::string& dir, DumpReason reason, std::string* path);
// The registry hook: writes into NCCLSCOPE_DUMP_DIR when it is set. Installed at load time.
void CommDumpHook(const CommSnapshot& snap, DumpReason reason);

}  // namespace ncclscope::dump

#endif  // NCCLSCOPE_EXPORTERS_DUMP_COMM_DUMP_H_

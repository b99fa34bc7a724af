// The per-communicator dump ("ncclscope.comm.v2", docs/dump-format.md): written when a communicator's
// profiler context is finalized, when its stall watch fires and on request (the dump signal), as
// ncclscope-comm-<hash as 16 hex>-rank<r>[-stall|-request].json.gz: two gzip members, the one-line summary then
// the one-line flight recorder. One file per reason: a later dump replaces only the last one of its own reason.
// Finalize dumps go to NCCLSCOPE_DUMP_DIR, stall and request dumps to a folder per host inside it (they come
// from every rank at once). Atomic and link-safe through common/output_dir.h; no file at all when
// NCCLSCOPE_DUMP_DIR is empty. Knows nothing about NCCL: reads a CommSnapshot (and looks up
// ncclGetVersion in the process, without loading anything).
// All functions are thread-safe (they touch only their arguments and the file system).
#ifndef NCCLSCOPE_EXPORTERS_DUMP_COMM_DUMP_H_
#define NCCLSCOPE_EXPORTERS_DUMP_COMM_DUMP_H_

#include <string>

#include "common/status.h"
#include "core/registry.h"
#include "core/snapshot.h"

namespace ncclscope::dump {

// "" (finalize), "-stall" or "-request": what the names of a dump and its trace end with before the extension.
// A request dump after a stall must not replace the stall's snapshot (the wait it recorded at the stall is
// what the post-mortem needs), so each reason has its own name: at most three files per communicator and rank.
// Finalize keeps the plain name it always had.
const char* DumpReasonSuffix(DumpReason reason);
// "ncclscope-comm-<hash as 16 hex>-rank<r><DumpReasonSuffix>.json.gz"
std::string CommDumpName(uint64_t comm_hash, int rank, DumpReason reason);
// "stall", "recovered" (a stall is over), "finalize" or "request" (the dump signal or a tool).
const char* DumpReasonName(DumpReason reason);
// The folder a dump of `reason` goes to, relative to the dump directory: "" (finalize) or the host name.
std::string CommDumpSubdir(DumpReason reason);
// The whole file: two gzip members (summary, flight recorder), with NCCLSCOPE_DUMP_RECENT recent operations
// and, for a stall, at most NCCLSCOPE_DUMP_STALL_RECORDS completed records.
Result<std::string> CommDumpBytes(const CommSnapshot& snap, DumpReason reason);
// Writes the dump into `dir` (created if missing), or its per-host folder for stall and request dumps;
// *path receives the file's path. No delay: the stall watch waits a random 0-50 ms before each batch.
Status WriteCommDump(const CommSnapshot& snap, const std::string& dir, DumpReason reason, std::string* path);
// The registry hook: writes into NCCLSCOPE_DUMP_DIR when it is set (stall and request dumps into the host's
// subfolder). Installed by InstallPluginServices (src/plugin).
void CommDumpHook(const CommSnapshot& snap, DumpReason reason);

}  // namespace ncclscope::dump

#endif  // NCCLSCOPE_EXPORTERS_DUMP_COMM_DUMP_H_

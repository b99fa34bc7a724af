// NCCLSCOPE_TRACE=1: each communicator's flight recorder as a Chrome / Perfetto trace (trace event format),
// <NCCLSCOPE_DUMP_DIR>/ncclscope-trace-<hash as 16 hex>-rank<r>[-stall|-request].json, written with the dump
// (finalize, stall, signal), one per reason as the dumps. One process per rank; tracks for the communicator's
// collectives and for each (peer, direction) of its point-to-point operations, split into lanes where slices
// would overlap without nesting (which trace viewers cannot draw). An operation spans its GPU kernel when timed
// by the GPU (calibrated to the host clock), else its host start to completion. `ncclscope-analyze --trace`
// merges every rank's dumps into one trace. Knows nothing about NCCL: reads a CommSnapshot.
#ifndef NCCLSCOPE_EXPORTERS_DUMP_CHROME_TRACE_H_
#define NCCLSCOPE_EXPORTERS_DUMP_CHROME_TRACE_H_

#include <string>

#include "core/registry.h"
#include "core/snapshot.h"
#include "nlohmann/json.hpp"

namespace ncclscope::dump {

nlohmann::json CommSnapshotToChromeTrace(const CommSnapshot& snap);
std::string ChromeTraceName(uint64_t comm_hash, int rank, DumpReason reason);
// The registry hook: writes the trace when NCCLSCOPE_TRACE is on and NCCLSCOPE_DUMP_DIR is set.
void ChromeTraceHook(const CommSnapshot& snap, DumpReason reason);

}  // namespace ncclscope::dump

#endif  // NCCLSCOPE_EXPORTERS_DUMP_CHROME_TRACE_H_

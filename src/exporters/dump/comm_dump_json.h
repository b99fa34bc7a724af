// The JSON of a communicator dump ("ncclscope.comm.v2", docs/dump-format.md): the summary (member 1: what a
// verdict over every rank needs) and the flight recorder (member 2: completed records, read for suspects).
// Pure functions of their arguments; thread-safe.
#ifndef NCCLSCOPE_EXPORTERS_DUMP_COMM_DUMP_JSON_H_
#define NCCLSCOPE_EXPORTERS_DUMP_COMM_DUMP_JSON_H_

#include <cstddef>
#include <string>
#include <vector>

#include "common/nccl_version.h"
#include "core/net_errors.h"
#include "core/snapshot.h"
#include "exporters/dump/clock_sample.h"
#include "nlohmann/json.hpp"

namespace ncclscope::dump {

inline constexpr char kCommDumpSchema[] = "ncclscope.comm.v2";

// What the summary says besides the snapshot: where, why, who, and the process-wide facts.
struct DumpContext {
  std::string host;
  std::string job_id;
  std::string reason;  // "stall", "recovered", "finalize" or "request"
  nlohmann::json identity;  // {"global_rank", "local_rank", "gpu_uuid", "nccl_version"}
  ClockSample clock;
  std::vector<NetErrorRecord> net_errors;
  nlohmann::json host_nics;  // null: none (no baseline)
  size_t recent = 64;      // newest completed operations in "recent"
  size_t fr_records = 0;   // newest completed records in member 2 (what "flight_recorder.completed" counts)
};

// One flight-recorder record as v1 wrote it; in-flight ones get "age_ns" at `now_ns`, completed ones end times.
nlohmann::json RecordToJson(const OpRecord& r, bool in_flight, uint64_t now_ns);
nlohmann::json SummaryJson(const CommSnapshot& snap, const DumpContext& ctx);
// The newest `records` completed records, oldest first.
nlohmann::json FlightRecorderJson(const CommSnapshot& snap, size_t records);
// "2.28.9" from NCCL's version code (common/nccl_version.h).
using ::ncclscope::NcclVersionString;

}  // namespace ncclscope::dump

#endif  // NCCLSCOPE_EXPORTERS_DUMP_COMM_DUMP_JSON_H_

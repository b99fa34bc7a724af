#include "exporters/dump/comm_dump.h"

#include <dlfcn.h>

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/hex.h"
#include "common/host.h"
#include "common/log.h"
#include "common/output_dir.h"
#include "common/params.h"
#include "common/process_identity.h"
#include "common/tsan_lock.h"
#include "core/net_errors.h"
#include "exporters/dump/comm_dump_json.h"
#include "exporters/dump/gzip_member.h"

namespace ncclscope::dump {
namespace {

using nlohmann::json;

json IntOrNull(const std::string& decimal) {
  if (decimal.empty()) return nullptr;
  try {
    return std::stoi(decimal);
  } catch (const std::exception&) {
    return nullptr;
  }
}

// NCCL's version when the process has NCCL loaded: found among what is loaded, never loaded by us. A libnccl
// opened RTLD_LOCAL (a framework's extension module pulled it in) is not in the global scope: RTLD_NOLOAD
// finds it by name without loading it.
std::string LookUpNcclVersion() {
  using GetVersionFn = int (*)(int*);
  auto fn = reinterpret_cast<GetVersionFn>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  void* handle = nullptr;
  for (const char* lib : {"libnccl.so.2", "libnccl.so"}) {
    if (fn != nullptr) break;
    handle = dlopen(lib, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (handle != nullptr) fn = reinterpret_cast<GetVersionFn>(dlsym(handle, "ncclGetVersion"));
    if (fn == nullptr && handle != nullptr) {
      dlclose(handle);
      handle = nullptr;
    }
  }
  int code = 0;
  const bool ok = fn != nullptr && fn(&code) == 0;  // 0: ncclSuccess
  if (handle != nullptr) dlclose(handle);  // drops only the reference RTLD_NOLOAD took
  return ok ? NcclVersionString(code) : "";
}

// Kept once found: NCCL stays loaded, and a stall dumps many communicators at once. Not found (no NCCL in
// the process yet) is looked up again at the next dump. The lookup (dlsym and dlopen take the loader's lock)
// runs outside our lock, so the two never nest. Never destroyed: dumps may run during exit.
json NcclVersion() {
  struct Cache {
    absl::Mutex mu;
    std::string version ABSL_GUARDED_BY(mu);  // "" until found
  };
  static Cache* cache = new Cache();
  {
    AnnotatedLock lock(&cache->mu);
    if (!cache->version.empty()) return json(cache->version);
  }
  std::string version = LookUpNcclVersion();
  if (version.empty()) return json(nullptr);
  AnnotatedLock lock(&cache->mu);
  if (cache->version.empty()) cache->version = std::move(version);  // else another dump found it first
  return json(cache->version);
}

json IdentityJson() {
  const ProcessIdentity& id = Identity();
  const int world_size = WorldSizeFromEnv();
  return {{"global_rank", IntOrNull(id.global_rank)},
          {"local_rank", IntOrNull(id.local_rank)},
          {"world_size", world_size > 0 ? json(world_size) : json(nullptr)},
          {"gpu_uuid", id.gpu_uuid.empty() ? json(nullptr) : json(id.gpu_uuid)},
          {"nccl_version", NcclVersion()}};
}

std::string OneLine(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

}  // namespace

std::string CommDumpName(uint64_t comm_hash, int rank) {
  return "ncclscope-comm-" + Hex16(comm_hash) + "-rank" + std::to_string(rank) + ".json.gz";
}

const char* DumpReasonName(DumpReason reason) {
  switch (reason) {
    case DumpReason::kStall: return "stall";
    case DumpReason::kFinalize: return "finalize";
    default: return "request";
  }
}

std::string CommDumpSubdir(DumpReason reason) { return reason == DumpReason::kFinalize ? "" : HostName(); }

Result<std::string> CommDumpBytes(const CommSnapshot& snap, DumpReason reason) {
  DumpContext ctx;
  ctx.host = HostName();
  ctx.job_id = Identity().job;  // the parameter, else the launchers' variables, as the job label
  ctx.reason = DumpReasonName(reason);
  ctx.identity = IdentityJson();
  ctx.clock = SampleClock();
  ctx.net_errors = RecentNetErrors();
  ctx.recent = static_cast<size_t>(Params().Int(ParamId::kDumpRecent));
  // A hung job's dumps are read for a verdict first; the stall's own neighbourhood is the newest records.
  ctx.fr_records = reason == DumpReason::kStall ? static_cast<size_t>(Params().Int(ParamId::kDumpStallRecords))
                                                : snap.completed.size();
  std::string out;
  NCCLSCOPE_RETURN_IF_ERROR(AppendGzipMember(OneLine(SummaryJson(snap, ctx)), &out));
  NCCLSCOPE_RETURN_IF_ERROR(AppendGzipMember(OneLine(FlightRecorderJson(snap, ctx.fr_records)), &out));
  return out;
}

Status WriteCommDump(const CommSnapshot& snap, const std::string& dir, DumpReason reason, std::string* path) {
  const std::string name = CommDumpName(snap.comm_hash, snap.rank);
  const std::string sub = CommDumpSubdir(reason);
  Result<std::string> bytes = CommDumpBytes(snap, reason);
  if (!bytes.ok()) return ReportWriteFailure(dir + "/" + name, bytes.status(), subsys::kProfile);
  if (sub.empty()) {
    NCCLSCOPE_RETURN_IF_ERROR(WriteFileAtomically(dir, name, *bytes));
  } else {
    NCCLSCOPE_RETURN_IF_ERROR(WriteFileAtomicallyIn(dir, sub, name, *bytes));
  }
  if (path != nullptr) *path = dir + "/" + (sub.empty() ? "" : sub + "/") + name;
  return Status::Ok();
}

void CommDumpHook(const CommSnapshot& snap, DumpReason reason) {
  try {
    const std::string& dir = Params().Str(ParamId::kDumpDir);
    if (dir.empty()) return;
    if (reason == DumpReason::kFinalize && !Params().Bool(ParamId::kDumpOnFinalize)) return;
    std::string path;
    Status s = WriteCommDump(snap, dir, reason, &path);
    if (s.ok()) {  // a failure has been reported once, naming the file
      NCCLSCOPE_INFO(subsys::kProfile, "ncclscope: wrote %s (%s)", path.c_str(), DumpReasonName(reason));
    }
  } catch (const std::exception& e) {
    NCCLSCOPE_WARN(subsys::kProfile, "ncclscope: communicator dump failed: %s", e.what());
  }
}

}  // namespace ncclscope::dump

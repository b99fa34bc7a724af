#include "exporters/dump/comm_dump.h"

#include <string>

#include "common/hex.h"
#include "common/host.h"
#include "common/log.h"
#include "common/nccl_version.h"
#include "common/output_dir.h"
#include "common/params.h"
#include "common/process_identity.h"
#include "core/net_errors.h"
#include "core/net_links.h"
#include "core/net_stats.h"
#include "exporters/dump/comm_dump_json.h"
#include "common/gzip_member.h"
#include "host_nics/nic_deltas.h"
#include "nic_view/rank_nic_view.h"

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

// NCCL's version when the process has NCCL loaded (common/nccl_version.h), null when none is.
json NcclVersion() {
  std::string version = NcclVersionInProcess();
  return version.empty() ? json(nullptr) : json(std::move(version));
}

json IdentityJson() {
  const ProcessIdentity& id = Identity();
  const int world_size = WorldSizeFromEnv();
  return {{"global_rank", IntOrNull(id.global_rank)},
          {"local_rank", IntOrNull(id.local_rank)},
          {"world_size", world_size > 0 ? json(world_size) : json(nullptr)},
          {"gpu_uuid", id.gpu_uuid.empty() ? json(nullptr) : json(id.gpu_uuid)},
          {"gpu_instance_id", IntOrNull(id.gpu_instance_id)},
          {"mig_uuid", id.mig_uuid.empty() ? json(nullptr) : json(id.mig_uuid)},
          {"nccl_version", NcclVersion()}};
}

std::string OneLine(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

}  // namespace

const char* DumpReasonSuffix(DumpReason reason) {
  switch (reason) {
    case DumpReason::kStall: return "-stall";
    case DumpReason::kRecovered: return "-recovered";
    case DumpReason::kFinalize: return "";
    default: return "-request";
  }
}

std::string CommDumpName(uint64_t comm_hash, int rank, DumpReason reason) {
  return "ncclscope-comm-" + Hex16(comm_hash) + "-rank" + std::to_string(rank) + DumpReasonSuffix(reason) +
         ".json.gz";
}

const char* DumpReasonName(DumpReason reason) {
  switch (reason) {
    case DumpReason::kStall: return "stall";
    case DumpReason::kRecovered: return "recovered";
    case DumpReason::kFinalize: return "finalize";
    default: return "request";
  }
}

std::string CommDumpSubdir(DumpReason reason) { return reason == DumpReason::kFinalize ? "" : HostName(); }

// What the host's RDMA ports counted since the process's baseline, and the TCP transport's retransmissions per NIC
// over the process's life: the analyzer's evidence of a degraded NIC. Null before a baseline.
json HostNicsJson() {
  HostNicDeltas d;
  if (!HostNicDeltasSinceBaseline(&d)) return nullptr;
  json rdma = json::array(), tcp = json::array();
  for (const NicEventCounts& n : d.rdma) {
    rdma.push_back({{"nic", n.nic}, {"port", n.port}, {"retransmit", n.retransmit}, {"congestion", n.congestion},
                    {"error", n.error}, {"link_downs", n.link_downs}});
  }
  // ncclscope's TCP transport's connections and the process's others
  for (const auto& [nic, n] : TcpRetransmitsByNic(SnapshotNicTcpInfo())) {
    tcp.push_back({{"nic", nic}, {"retransmits", n}});
  }
  // Which of them this rank's traffic uses (exact or inferred, host_nics/rank_nics.h): what ties a degraded NIC
  // to the ranks behind it.
  const RankNics mine = RankNicsOf(SnapshotNetStats());
  json uses = json::array();
  for (const RankNic& n : mine.nics) {
    uses.push_back(n.device.empty() ? json{{"nic", n.netdev}} : json{{"nic", n.device}, {"port", n.port}});
  }
  // The carrier changes of the interfaces this rank uses (a flapping link), not of every veth on the host.
  json netdevs = json::array();
  for (const std::string& name : NetdevsOf(mine)) {
    for (const auto& [changed, changes] : d.carrier_changes) {
      if (changed == name) netdevs.push_back({{"nic", name}, {"carrier_changes", changes}});
    }
  }
  return {{"seconds", d.seconds}, {"rdma", rdma}, {"tcp", tcp}, {"netdevs", netdevs},
          {"rank_nics", {{"mapping", NicMappingName(mine.mapping)}, {"nics", uses}}}};
}

Result<std::string> CommDumpBytes(const CommSnapshot& snap, DumpReason reason) {
  DumpContext ctx;
  ctx.host = HostName();
  ctx.job_id = Identity().job;  // the parameter, else the launchers' variables, as the job label
  ctx.reason = DumpReasonName(reason);
  ctx.identity = IdentityJson();
  ctx.clock = SampleClock();
  ctx.net_errors = RecentNetErrors();
  ctx.host_nics = HostNicsJson();
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
  const std::string name = CommDumpName(snap.comm_hash, snap.rank, reason);
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
      NCCLSCOPE_INFO(subsys::kProfile, "wrote %s (%s)", path.c_str(), DumpReasonName(reason));
    }
  } catch (const std::exception& e) {
    NCCLSCOPE_WARN(subsys::kProfile, "communicator dump failed: %s", e.what());
  }
}

}  // namespace ncclscope::dump

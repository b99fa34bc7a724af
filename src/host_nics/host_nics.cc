#include "host_nics/host_nics.h"

#include <cstdlib>
#include <map>
#include <utility>

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "common/params.h"
#include "common/process_identity.h"
#include "common/tsan_lock.h"
#include "host_nics/host_speaker.h"
#include "host_nics/rank_nics.h"

namespace ncclscope {
namespace {

// A lock file younger than this is never swept: its job may be starting.
constexpr int kStaleLockAgeS = 600;

ABSL_CONST_INIT absl::Mutex first_read_mu(absl::kConstInit);
// (device, port) -> link_downed at this process's first read of the port. Never freed: scrapes run until exit.
std::map<std::pair<std::string, int>, uint64_t>* first_read ABSL_GUARDED_BY(first_read_mu) = nullptr;

}  // namespace

std::vector<std::optional<uint64_t>> LinkDownsSinceFirstRead(const std::vector<RdmaPort>& ports) {
  std::vector<std::optional<uint64_t>> out;
  AnnotatedLock lock(&first_read_mu);
  if (first_read == nullptr) first_read = new std::map<std::pair<std::string, int>, uint64_t>();
  for (const RdmaPort& p : ports) {
    const std::optional<uint64_t> now = LinkDowns(p);
    if (!now) {
      out.push_back(std::nullopt);
      continue;
    }
    const uint64_t first = first_read->emplace(std::make_pair(p.device, p.port), *now).first->second;
    out.push_back(*now >= first ? *now - first : *now);  // a driver reload restarts the counter: count anew
  }
  return out;
}

bool ReadHostNicsIfSpeaker(const std::vector<std::string>& rank_netdevs, HostNics* out) {
  if (Params().Str(ParamId::kHostNics) == "off") return false;
  // Made at the first scrape, when the identity (the job) is known; kept for the life of the process, and its
  // lock file removed at exit. Ended jobs' files are swept once per process.
  static HostSpeaker* const speaker = [] {
    const std::string dir = HostSpeakerLockDir(), path = HostSpeakerLockPath(dir, Identity().job, Identity().host);
    RemoveStaleHostSpeakerLocks(dir, path, kStaleLockAgeS);
    auto* s = new HostSpeaker(path);
    std::atexit([] { speaker->Release(); });
    return s;
  }();
  if (!speaker->Speaks()) return false;
  out->rdma = ReadRdmaPorts("/sys");
  out->link_downs = LinkDownsSinceFirstRead(out->rdma);
  // GPUs do not come and go: the PCI bus is walked once.
  static const auto* const gpus = new std::vector<SysfsDeviceLocation>(ReadHostGpus("/sys"));
  out->nearest_gpus = GpusNearestEachPort(out->rdma, *gpus);
  // Beside the interfaces of devices of their own: those under RDMA ports and those the rank's traffic uses,
  // virtual or not (a veth, a bond, a VLAN).
  std::vector<std::string> also = rank_netdevs;
  for (const RdmaPort& p : out->rdma) {
    if (!p.netdev.empty()) also.push_back(p.netdev);
  }
  out->netdevs = ReadNetdevs("/sys", SplitNetdevList(Params().Str(ParamId::kHostNetdevs)), also);
  return true;
}

}  // namespace ncclscope

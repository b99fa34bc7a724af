#include "host_nics/host_nics.h"

#include <cstdlib>

#include "common/params.h"
#include "common/process_identity.h"
#include "host_nics/host_speaker.h"
#include "host_nics/rank_nics.h"

namespace ncclscope {
namespace {

// A lock file younger than this is never swept: its job may be starting.
constexpr int kStaleLockAgeS = 600;

}  // namespace

bool ReadHostNicsIfSpeaker(HostNics* out) {
  if (Params().Str(ParamId::kHostNics) == "off") return false;
  // Made at the first scrape, when the identity (the job) is known; kept for the life of the process, and its
  // lock file removed at exit. Ended jobs' files are swept once per process.
  static HostSpeaker* const speaker = [] {
    const std::string dir = HostSpeakerLockDir(), path = HostSpeakerLockPath(dir, Identity().job);
    RemoveStaleHostSpeakerLocks(dir, path, kStaleLockAgeS);
    auto* s = new HostSpeaker(path);
    std::atexit([] { speaker->Release(); });
    return s;
  }();
  if (!speaker->Speaks()) return false;
  out->rdma = ReadRdmaPorts("/sys");
  // GPUs do not come and go: the PCI bus is walked once.
  static const auto* const gpus = new std::vector<SysfsDeviceLocation>(ReadHostGpus("/sys"));
  out->nearest_gpus = GpusNearestEachPort(out->rdma, *gpus);
  std::vector<std::string> under_rdma;
  for (const RdmaPort& p : out->rdma) {
    if (!p.netdev.empty()) under_rdma.push_back(p.netdev);
  }
  out->netdevs = ReadNetdevs("/sys", SplitNetdevList(Params().Str(ParamId::kHostNetdevs)), under_rdma);
  return true;
}

}  // namespace ncclscope

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

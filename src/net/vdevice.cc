#include "net/vdevice.h"

#include <algorithm>

namespace ncclscope::net {

NetProperties FusedProperties(const std::vector<const NetProperties*>& members, const int* devs, int n,
                              int speed_mbps) {
  NetProperties p = *members.front();
  for (size_t i = 1; i < members.size(); ++i) {
    const NetProperties& m = *members[i];
    p.name += "+" + m.name;
    p.ptr_support &= m.ptr_support;
    p.reg_is_global = p.reg_is_global && m.reg_is_global;
    p.force_flush = p.force_flush || m.force_flush;
    p.latency_us = std::max(p.latency_us, m.latency_us);
    p.max_comms = std::min(p.max_comms, m.max_comms);
    p.max_recvs = std::min(p.max_recvs, m.max_recvs);
  }
  p.speed_mbps = speed_mbps;
  p.vdev_count = n;
  for (int i = 0; i < kMaxDevsPerVNic; ++i) p.vdevs[i] = i < n ? devs[i] : 0;
  return p;
}

}  // namespace ncclscope::net

// NIC fusion (makeVDevice): the properties of a virtual device made of several devices, as NCCL's own IB
// transport describes its merged devices: the names joined by '+', the first member's PCI path, GUID,
// rail and plane, and what every member can do (pointer support, limits).
#ifndef NCCLSCOPE_NET_VDEVICE_H_
#define NCCLSCOPE_NET_VDEVICE_H_

#include <vector>

#include "net/net_types.h"

namespace ncclscope::net {

// `speed_mbps` is the caller's: the members' sum when traffic is split across them, one member's when not.
NetProperties FusedProperties(const std::vector<const NetProperties*>& members, const int* devs, int n,
                              int speed_mbps);

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_VDEVICE_H_

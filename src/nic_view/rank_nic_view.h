// What both exporters (the metrics endpoint and the dumps) say of this rank's NICs: host_nics' readings of the
// host joined with what core counted on ncclscope's own transports. One place, so that a scrape and a dump agree.
#ifndef NCCLSCOPE_NIC_VIEW_RANK_NIC_VIEW_H_
#define NCCLSCOPE_NIC_VIEW_RANK_NIC_VIEW_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/net_links.h"
#include "core/net_stats.h"
#include "host_nics/rank_nics.h"

namespace ncclscope {

// The NICs this rank's traffic uses: exact for those ncclscope's transports (or the wrapped plugin) carried in
// `net`, inferred otherwise (host_nics/rank_nics.h).
RankNics RankNicsOf(const NetStatsSnapshot& net);

// The interfaces of `nics` (each once, in order): the host exports these whatever kind of device they are.
std::vector<std::string> NetdevsOf(const RankNics& nics);

// Retransmitted segments of every TCP connection of this process, per NIC: ncclscope's own (`ours`, from
// SnapshotNicTcpInfo) plus the others' (a wrapped plugin's, NCCL's sockets: host_nics/process_tcp.h). The others
// are walked at most once a second, so that a dump burst or a scrape storm does not repeat the walk.
std::map<std::string, uint64_t> TcpRetransmitsByNic(const std::vector<NicTcpInfo>& ours);

}  // namespace ncclscope

#endif  // NCCLSCOPE_NIC_VIEW_RANK_NIC_VIEW_H_

// --layout tp=K: the communicators one rank creates, as Megatron builds its tensor- and data-parallel groups.
// Pure functions of (world size, K, world rank, world unique id), so every member of a group derives the same
// name, size, rank numbering and comm hash without talking to the others.
#ifndef NCCLSCOPE_TOOLS_SIM_LAYOUT_H_
#define NCCLSCOPE_TOOLS_SIM_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ncclscope::sim {

struct GroupSpec {
  std::string name;  // sim-tp-<g> or sim-dp-<i>
  int nranks = 0;
  int rank = 0;  // within the group
  uint64_t comm_hash = 0;
};

// The TP group (ranks [g*K, (g+1)*K), ranked by position) then the DP group (ranks r with r % K == rank % K,
// ranked by r / K) of world rank `rank`. world_hash is the first communicator's hash (from the unique id);
// each group's hash is a bijective mix of it and the group, so the hashes of all groups differ.
std::vector<GroupSpec> TpDpGroups(int ranks, int tp, int rank, uint64_t world_hash);

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_LAYOUT_H_

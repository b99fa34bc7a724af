#include "layout.h"

namespace ncclscope::sim {
namespace {

// splitmix64's finaliser: a bijection on 64 bits, so distinct inputs give distinct hashes.
uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Kind (1: TP, 2: DP) above bit 32 and the group index below: distinct inputs for every group of a job.
uint64_t GroupHash(uint64_t world_hash, uint64_t kind, int index) {
  return Mix(world_hash + (kind << 32) + static_cast<uint64_t>(index));
}

}  // namespace

std::vector<GroupSpec> TpDpGroups(int ranks, int tp, int rank, uint64_t world_hash) {
  const int g = rank / tp, i = rank % tp;
  GroupSpec t{"sim-tp-" + std::to_string(g), tp, i, GroupHash(world_hash, 1, g)};
  GroupSpec d{"sim-dp-" + std::to_string(i), ranks / tp, g, GroupHash(world_hash, 2, i)};
  return {t, d};
}

}  // namespace ncclscope::sim

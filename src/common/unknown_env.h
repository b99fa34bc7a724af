// NCCLSCOPE_* environment variables that ncclscope does not read: a typo (NCCLSCOPE_DUMPDIR for
// NCCLSCOPE_DUMP_DIR) would otherwise turn a feature off without a word. Known are the tunables of
// param_list.inc and the few variables the tools and tests read themselves (KnownNonParamVariables()).
// At init the plugin warns once per process for each unknown one, naming the nearest known name;
// `ncclscope-params --check` lists them and fails. Thread-safe.
#ifndef NCCLSCOPE_COMMON_UNKNOWN_ENV_H_
#define NCCLSCOPE_COMMON_UNKNOWN_ENV_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscope {

// Variables with our prefix read outside param_list.inc (the sim's ranks, which load the plugin, the analyzer,
// test and demo scripts). They must not be reported as unknown.
std::span<const char* const> KnownNonParamVariables();

// Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two neighbouring
// characters (the usual typos: PROM_PROT for PROM_PORT is one swap) each count 1.
size_t EditDistance(std::string_view a, std::string_view b);

// The name of `known` nearest to `name` (case-insensitively; the first of equal distance), "" when empty.
std::string NearestName(std::string_view name, std::span<const std::string> known);

struct UnknownVariable {
  std::string name;
  std::string nearest;  // the nearest known name
};

// The NCCLSCOPE_* variables of `environment` (as `environ`: NAME=VALUE strings, null-terminated) that are
// neither a tunable nor known, in the environment's order.
std::vector<UnknownVariable> UnknownVariables(const char* const* environment);

// One warning per unknown variable of this process's environment; only the first call in a process does
// anything (the runtime calls it at every init).
void WarnUnknownVariablesOnce();

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_UNKNOWN_ENV_H_

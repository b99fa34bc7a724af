#include "common/unknown_env.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "common/log.h"
#include "common/params.h"

namespace ncclscope {
namespace {

constexpr std::string_view kPrefix = "NCCLSCOPE_";

// Each is read by something that is not a tunable; grep the tree for the name to find the reader.
constexpr const char* kNonParam[] = {
    "NCCLSCOPE_SIM_ROOT",       // tools/sim: the launcher tells its ranks (which load the plugin) the rendezvous
    "NCCLSCOPE_SIM_SPIN",       // tools/sim: progress thread spin and nap
    "NCCLSCOPE_SIM_NAP_US",     //
    "NCCLSCOPE_ANALYZE_DEBUG",  // tools/analyze: print a traceback
    "NCCLSCOPE_TEST_KEEP",      // tests: keep temporary directories
    "NCCLSCOPE_E2E_KEEP",       //
    "NCCLSCOPE_DEMO_DIR",       // scripts/demo.sh
    "NCCLSCOPE_RDMA_GUEST",     // tests/rdma: inside the soft-RoCE guest
    "NCCLSCOPE_RDMA_ON_HOST",   //
    "NCCLSCOPE_NCCL_INCLUDE",   // tests/gpu: NCCL's headers
};

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

const std::vector<std::string>& KnownNames() {
  static const auto* names = [] {
    auto* v = new std::vector<std::string>();
    for (const ParamSpec& spec : AllParamSpecs()) v->push_back(spec.env);
    for (const char* name : kNonParam) v->push_back(name);
    return v;
  }();
  return *names;
}

}  // namespace

std::span<const char* const> KnownNonParamVariables() { return kNonParam; }

size_t EditDistance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic-programming table: the swap looks two rows back.
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string NearestName(std::string_view name, std::span<const std::string> known) {
  // The distance costs length x length per known name: a pathological 100 KB name must not stall an init, and
  // the nearest of the known names (all far shorter) is decided by its start anyway.
  constexpr size_t kComparedBytes = 128;
  const std::string upper = Upper(name.substr(0, kComparedBytes));
  std::string best;
  size_t best_distance = 0;
  for (const std::string& k : known) {
    const size_t d = EditDistance(upper, Upper(k));
    if (best.empty() || d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

std::vector<UnknownVariable> UnknownVariables(const char* const* environment) {
  std::vector<UnknownVariable> out;
  if (environment == nullptr) return out;
  const std::vector<std::string>& known = KnownNames();
  for (const char* const* e = environment; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    if (name.substr(0, kPrefix.size()) != kPrefix) continue;
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    out.push_back({std::string(name), NearestName(name, known)});
  }
  return out;
}

void WarnUnknownVariablesOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const UnknownVariable& v : UnknownVariables(environ)) {
      NCCLSCOPE_WARN(subsys::kEnv, "%s is not an ncclscope variable and is ignored; did you mean %s? "
                     "(ncclscope-params lists them all)", v.name.c_str(), v.nearest.c_str());
    }
  });
}

}  // namespace ncclscope

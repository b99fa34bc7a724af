// Tunables: declared once in param_list.inc, parsed and validated here. A bad value logs a warning
// naming the variable, the bad value and the default kept. Params() is the process-wide snapshot,
// parsed at first use and again by ReloadParams() (the runtime calls it when a new init cycle starts).
// Params() is safe to call from any thread; ReloadParams() must not race with readers' references.
#ifndef NCCLSCOPE_COMMON_PARAMS_H_
#define NCCLSCOPE_COMMON_PARAMS_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ncclscope {

enum class ParamKind { kInt, kSize, kBool, kString, kEnum };

enum class ParamId {
#define NCCLSCOPE_PARAM(id, kind, env, fallback, def, min, max, choices, doc) id,
#include "common/param_list.inc"
#undef NCCLSCOPE_PARAM
  kCount
};

struct ParamSpec {
  ParamId id;
  ParamKind kind;
  const char* env;
  const char* fallback_env;  // may be nullptr
  const char* default_text;
  int64_t min;
  int64_t max;
  const char* choices;  // '|'-separated, kEnum only
  const char* doc;
};

std::span<const ParamSpec> AllParamSpecs();
const ParamSpec& SpecOf(ParamId id);
const char* ParamKindName(ParamKind kind);

// One parsed value per tunable. Int/Size/Bool values live in `number`; String/Enum in `text`
// (enums are lower-cased to their canonical choice).
class ParamValues {
 public:
  int64_t Int(ParamId id) const { return values_[static_cast<size_t>(id)].number; }
  bool Bool(ParamId id) const { return values_[static_cast<size_t>(id)].number != 0; }
  const std::string& Str(ParamId id) const { return values_[static_cast<size_t>(id)].text; }
  // True when the value came from the environment rather than the default.
  bool IsSet(ParamId id) const { return values_[static_cast<size_t>(id)].from_env; }
  // The variable the value came from (the tunable's own or its fallback, e.g. SLURM_JOB_ID); "" for the default.
  const std::string& SourceVar(ParamId id) const { return values_[static_cast<size_t>(id)].source_var; }
  // Why the environment's value was refused (the warning's text, the default being kept); "" when it was not.
  const std::string& Problem(ParamId id) const { return values_[static_cast<size_t>(id)].problem; }

 private:
  friend ParamValues ParseParams(const std::function<const char*(const char*)>& getenv_fn);
  struct Value {
    int64_t number = 0;
    std::string text;
    bool from_env = false;
    std::string source_var;
    std::string problem;
  };
  std::vector<Value> values_{static_cast<size_t>(ParamId::kCount)};
};

// A whole string as a decimal or 0x hex int64; false on junk or overflow.
bool ParseInt(const char* s, int64_t* out);

// Parses every tunable through `getenv_fn` (tests pass a fake environment).
ParamValues ParseParams(const std::function<const char*(const char*)>& getenv_fn);

const ParamValues& Params();
void ReloadParams();

// The README table: one Markdown row per tunable.
std::string ParamsMarkdownTable();

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_PARAMS_H_

#include "common/params.h"

#include <strings.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "common/tsan_lock.h"

namespace ncclscope {
namespace {

constexpr ParamSpec kSpecs[] = {
#define NCCLSCOPE_PARAM(id, kind, env, fallback, def, min, max, choices, doc) \
  {ParamId::id, ParamKind::kind, env, fallback, def, min, max, choices, doc},
#include "common/param_list.inc"
#undef NCCLSCOPE_PARAM
};
static_assert(sizeof(kSpecs) / sizeof(kSpecs[0]) == static_cast<size_t>(ParamId::kCount));

bool ParseSize(const char* s, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || v < 0) return false;
  int64_t mult = 1;
  if (*end != '\0') {
    switch (*end) {
      case 'k': case 'K': mult = int64_t{1} << 10; break;
      case 'm': case 'M': mult = int64_t{1} << 20; break;
      case 'g': case 'G': mult = int64_t{1} << 30; break;
      default: return false;
    }
    ++end;
    if (*end == 'i' || *end == 'B') ++end;  // accept 4Mi, 4MB, 4MiB
    if (*end == 'B') ++end;
    if (*end != '\0') return false;
  }
  if (v > INT64_MAX / mult) return false;
  *out = v * mult;
  return true;
}

bool ParseBool(const char* s, int64_t* out) {
  for (const char* t : {"1", "true", "yes", "on"}) {
    if (strcasecmp(s, t) == 0) { *out = 1; return true; }
  }
  for (const char* f : {"0", "false", "no", "off"}) {
    if (strcasecmp(s, f) == 0) { *out = 0; return true; }
  }
  return false;
}

bool MatchChoice(const char* s, const char* choices, std::string* out) {
  std::stringstream ss(choices);
  std::string choice;
  while (std::getline(ss, choice, '|')) {
    if (strcasecmp(s, choice.c_str()) == 0) { *out = choice; return true; }
  }
  return false;
}

// Parses `text` for `spec`; on failure fills `why` and returns false.
bool ParseOne(const ParamSpec& spec, const char* text, int64_t* number, std::string* str, std::string* why) {
  switch (spec.kind) {
    case ParamKind::kInt:
    case ParamKind::kSize: {
      bool ok = spec.kind == ParamKind::kInt ? ParseInt(text, number) : ParseSize(text, number);
      if (!ok) {
        *why = spec.kind == ParamKind::kInt ? "is not an integer" : "is not a size (e.g. 65536, 64K, 4M, 1G)";
        return false;
      }
      if (*number < spec.min || *number > spec.max) {
        *why = "is outside [" + std::to_string(spec.min) + ", " + std::to_string(spec.max) + "]";
        return false;
      }
      return true;
    }
    case ParamKind::kBool:
      if (!ParseBool(text, number)) { *why = "is not a boolean (0/1, true/false, yes/no, on/off)"; return false; }
      return true;
    case ParamKind::kEnum:
      if (!MatchChoice(text, spec.choices, str)) { *why = std::string("is not one of ") + spec.choices; return false; }
      return true;
    case ParamKind::kString:
      *str = text;
      return true;
  }
  return false;
}

}  // namespace

bool ParseInt(const char* s, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0') return false;
  *out = v;
  return true;
}

std::span<const ParamSpec> AllParamSpecs() { return kSpecs; }
const ParamSpec& SpecOf(ParamId id) { return kSpecs[static_cast<size_t>(id)]; }

const char* ParamKindName(ParamKind kind) {
  switch (kind) {
    case ParamKind::kInt: return "integer";
    case ParamKind::kSize: return "size";
    case ParamKind::kBool: return "boolean";
    case ParamKind::kString: return "string";
    case ParamKind::kEnum: return "enum";
  }
  return "?";
}

ParamValues ParseParams(const std::function<const char*(const char*)>& getenv_fn) {
  ParamValues out;
  for (const ParamSpec& spec : kSpecs) {
    ParamValues::Value& v = out.values_[static_cast<size_t>(spec.id)];
    std::string why;
    // The defaults are compile-time literals; a bad one is our bug and fails the unit tests.
    ParseOne(spec, spec.default_text, &v.number, &v.text, &why);

    const char* env_name = spec.env;
    const char* text = getenv_fn(spec.env);
    // An empty value means "unset" (the default or the fallback variable applies), except for a string
    // with neither a fallback nor an empty default: there the empty value is the user's choice
    // (NCCLSCOPE_PROM_BIND='' must reach the endpoint, which refuses it, rather than bind 0.0.0.0).
    if (text != nullptr && *text == '\0' && spec.kind == ParamKind::kString && spec.fallback_env == nullptr &&
        *spec.default_text != '\0') {
      v.text.clear();
      v.from_env = true;
      v.source_var = spec.env;
      continue;
    }
    if ((text == nullptr || *text == '\0') && spec.fallback_env != nullptr) {
      env_name = spec.fallback_env;
      text = getenv_fn(spec.fallback_env);
    }
    if (text == nullptr || *text == '\0') continue;

    int64_t number = 0;
    std::string str;
    if (ParseOne(spec, text, &number, &str, &why)) {
      v.number = number;
      v.text = std::move(str);
      v.from_env = true;
      v.source_var = env_name;
    } else {
      v.problem = std::string(env_name) + "='" + text + "' " + why + "; keeping the default " +
                  (*spec.default_text ? spec.default_text : "(empty)");
      NCCLSCOPE_WARN(subsys::kEnv, "%s", v.problem.c_str());
    }
  }
  return out;
}

namespace {
std::atomic<const ParamValues*> g_params{nullptr};
// Serialises reloads; old snapshots are kept so readers never dangle.
ABSL_CONST_INIT absl::Mutex g_params_mu(absl::kConstInit);
std::vector<const ParamValues*>* g_params_history ABSL_GUARDED_BY(g_params_mu) = nullptr;

const ParamValues* LoadParamsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_params_mu) {
  auto* fresh = new ParamValues(ParseParams([](const char* n) { return std::getenv(n); }));
  if (g_params_history == nullptr) g_params_history = new std::vector<const ParamValues*>();
  g_params_history->push_back(fresh);
  g_params.store(fresh, std::memory_order_release);
  return fresh;
}
}  // namespace

const ParamValues& Params() {
  if (const ParamValues* p = g_params.load(std::memory_order_acquire)) return *p;
  AnnotatedLock lock(&g_params_mu);
  if (const ParamValues* p = g_params.load(std::memory_order_acquire)) return *p;
  return *LoadParamsLocked();
}

void ReloadParams() {
  AnnotatedLock lock(&g_params_mu);
  // Keep at most a handful of old snapshots: reloads happen once per init cycle, and references to
  // a snapshot are only held for the duration of a call.
  if (g_params_history != nullptr && g_params_history->size() > 8) {
    delete g_params_history->front();
    g_params_history->erase(g_params_history->begin());
  }
  LoadParamsLocked();
}

std::string ParamsMarkdownTable() {
  std::string out = "| variable | type | default | range / choices | meaning |\n|---|---|---|---|---|\n";
  for (const ParamSpec& s : kSpecs) {
    std::string var = std::string("`") + s.env + "`";
    if (s.fallback_env != nullptr) var += std::string(" (or `") + s.fallback_env + "`)";
    std::string def = *s.default_text ? std::string("`") + s.default_text + "`" : "(empty)";
    std::string range;
    if (s.kind == ParamKind::kInt || s.kind == ParamKind::kSize) {
      range = std::to_string(s.min) + " … " + std::to_string(s.max);
    } else if (s.kind == ParamKind::kEnum) {
      // A '|' inside a table cell would split it, even in code spans: list the choices instead.
      std::string choices = s.choices;
      range = "`";
      for (char c : choices) range += c == '|' ? std::string("`, `") : std::string(1, c);
      range += "`";
    } else if (s.kind == ParamKind::kBool) {
      range = "0 / 1";
    }
    out += "| " + var + " | " + ParamKindName(s.kind) + " | " + def + " | " + range + " | " + s.doc + " |\n";
  }
  return out;
}

}  // namespace ncclscope

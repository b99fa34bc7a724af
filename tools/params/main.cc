// ncclscope-params: prints the tunables table (the README's configuration section is generated from
// it) or, with --check, parses the current environment and prints every value with its source; --json prints
// that state for a program. A value the plugin would refuse, or an NCCLSCOPE_* variable it does not know (a
// typo that would leave a feature off), makes --check and --json exit 1.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/params.h"
#include "common/unknown_env.h"

namespace {

constexpr const char* kUsage =
    "usage: ncclscope-params           print the tunables table (Markdown, as in the README)\n"
    "       ncclscope-params --check   parse this environment and print every tunable's value and its source\n"
    "       ncclscope-params --json    the same as one JSON object: per tunable its value, default, source\n"
    "                                  (env, fallback or default), the variable it came from, and whether it is\n"
    "                                  valid (with the problem when not)\n"
    "       ncclscope-params --version print ncclscope-params <version>\n"
    "       ncclscope-params --help    this text\n"
    "       --check and --json also name every NCCLSCOPE_* variable of the environment that is no tunable (a\n"
    "       typo), with the nearest known name.\n"
    "Exit status: 0 done (every value valid); 1 with --check or --json, a value the plugin would refuse (it\n"
    "keeps the default, and names it in a warning) or an unknown NCCLSCOPE_* variable; 2 bad command line.\n";

int UsageError(const std::string& what) {
  std::fprintf(stderr, "ncclscope-params: %s (try --help)\n", what.c_str());
  return 2;
}

bool IsText(const ncclscope::ParamSpec& spec) {
  return spec.kind == ncclscope::ParamKind::kString || spec.kind == ncclscope::ParamKind::kEnum;
}

// "env" (the tunable's own variable), "fallback" (NCCL's or the launcher's variable) or "default".
const char* SourceOf(const ncclscope::ParamValues& values, const ncclscope::ParamSpec& spec) {
  const std::string& var = values.SourceVar(spec.id);
  if (var.empty()) return "default";
  return var == spec.env ? "env" : "fallback";
}

int Check() {
  const ncclscope::ParamValues& values = ncclscope::Params();
  int invalid = 0;
  for (const ncclscope::ParamSpec& spec : ncclscope::AllParamSpecs()) {
    const std::string& problem = values.Problem(spec.id);
    const std::string value = IsText(spec) ? values.Str(spec.id) : std::to_string(values.Int(spec.id));
    std::string source = SourceOf(values, spec);
    if (source == "fallback") source += " " + values.SourceVar(spec.id);
    if (!problem.empty()) source = "INVALID: " + problem;
    std::printf("%s=%s (%s)\n", spec.env, value.c_str(), source.c_str());
    invalid += !problem.empty();
  }
  const std::vector<ncclscope::UnknownVariable> unknown = ncclscope::UnknownVariables(environ);
  for (const ncclscope::UnknownVariable& v : unknown) {
    std::printf("%s (UNKNOWN: not an ncclscope variable; did you mean %s?)\n", v.name.c_str(), v.nearest.c_str());
  }
  if (invalid != 0) std::fprintf(stderr, "ncclscope-params: %d invalid value(s)\n", invalid);
  if (!unknown.empty()) std::fprintf(stderr, "ncclscope-params: %zu unknown NCCLSCOPE_* variable(s)\n", unknown.size());
  return invalid != 0 || !unknown.empty() ? 1 : 0;
}

int Json() {
  const ncclscope::ParamValues& values = ncclscope::Params();
  nlohmann::json params = nlohmann::json::array();
  bool all_valid = true;
  for (const ncclscope::ParamSpec& spec : ncclscope::AllParamSpecs()) {
    const std::string& problem = values.Problem(spec.id);
    const std::string& var = values.SourceVar(spec.id);
    nlohmann::json p = {{"name", spec.env},
                        {"type", ncclscope::ParamKindName(spec.kind)},
                        {"default", spec.default_text},
                        {"source", SourceOf(values, spec)},
                        {"variable", var.empty() ? nlohmann::json(nullptr) : nlohmann::json(var)},
                        {"valid", problem.empty()},
                        {"problem", problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(problem)}};
    if (IsText(spec)) p["value"] = values.Str(spec.id);
    else p["value"] = values.Int(spec.id);
    if (spec.fallback_env != nullptr) p["fallback"] = spec.fallback_env;
    all_valid &= problem.empty();
    params.push_back(std::move(p));
  }
  nlohmann::json unknown = nlohmann::json::array();
  for (const ncclscope::UnknownVariable& v : ncclscope::UnknownVariables(environ)) {
    unknown.push_back({{"name", v.name}, {"nearest", v.nearest}});
  }
  all_valid &= unknown.empty();
  nlohmann::json out = {{"tool", "ncclscope-params"}, {"version", NCCLSCOPE_VERSION}, {"valid", all_valid},
                        {"parameters", std::move(params)}, {"unknown_variables", std::move(unknown)}};
  // Environment text may be any bytes: invalid UTF-8 is replaced rather than failing the dump.
  std::fputs((out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
  return all_valid ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode;  // "", "--check" or "--json"
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--version") {
      std::printf("ncclscope-params %s\n", NCCLSCOPE_VERSION);
      return 0;
    }
    const bool mode_option = a == "--check" || a == "--json";
    if (mode_option && mode.empty()) mode = a;
    else if (a.size() > 1 && a[0] == '-' && !mode_option) return UsageError("unknown option '" + a + "'");
    else return UsageError("unexpected argument '" + a + "'");
  }
  if (mode == "--check") return Check();
  if (mode == "--json") return Json();
  std::fputs(ncclscope::ParamsMarkdownTable().c_str(), stdout);
  return 0;
}

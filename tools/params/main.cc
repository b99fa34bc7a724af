// ncclscope-params: prints the tunables table (the README's configuration section is generated from
// it) or, with --check, parses the current environment and prints every value with its source.
#include <cstdio>
#include <string>

#include "common/params.h"

namespace {

constexpr const char* kUsage =
    "usage: ncclscope-params           print the tunables table (Markdown, as in the README)\n"
    "       ncclscope-params --check   parse this environment and print every tunable's value and its source\n"
    "       ncclscope-params --help    this text\n";

int UsageError(const std::string& what) {
  std::fprintf(stderr, "ncclscope-params: %s (try --help)\n", what.c_str());
  return 2;
}

int Check() {
  const ncclscope::ParamValues& values = ncclscope::Params();
  for (const ncclscope::ParamSpec& spec : ncclscope::AllParamSpecs()) {
    bool text = spec.kind == ncclscope::ParamKind::kString || spec.kind == ncclscope::ParamKind::kEnum;
    if (text) {
      std::printf("%s=%s (%s)\n", spec.env, values.Str(spec.id).c_str(), values.IsSet(spec.id) ? "env" : "default");
    } else {
      std::printf("%s=%lld (%s)\n", spec.env, static_cast<long long>(values.Int(spec.id)),
                  values.IsSet(spec.id) ? "env" : "default");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a == "--check" && !check) check = true;
    else if (a.size() > 1 && a[0] == '-' && a != "--check") return UsageError("unknown option '" + a + "'");
    else return UsageError("unexpected argument '" + a + "'");
  }
  if (check) return Check();
  std::fputs(ncclscope::ParamsMarkdownTable().c_str(), stdout);
  return 0;
}

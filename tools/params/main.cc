// ncclscope-params: prints the tunables table (the README's configuration section is generated from
// it) or, with --check, parses the current environment and prints every value with its source.
#include <cstdio>
#include <cstring>

#include "common/params.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--check") == 0) {
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
  std::fputs(ncclscope::ParamsMarkdownTable().c_str(), stdout);
  return 0;
}

// main() of every verbs guest test: runs the tests where a verbs device is usable (the soft-RoCE guest of the
// `rdma` tier), and elsewhere prints SKIP with the reason and exits 77 (ctest's SKIP_RETURN_CODE).
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "net/verbs/devices.h"
#include "net/verbs/ibv_api.h"

int main(int argc, char** argv) {
  using namespace ncclscope::net::verbs;
  constexpr const char* kSkip = "SKIP: no verbs device on this host (runs in the soft-RoCE guest: ctest -L rdma)";
  ncclscope::Result<const IbvApi*> api = LoadIbvApi();
  if (!api.ok()) {
    std::printf("%s [%s]\n", kSkip, api.status().message().c_str());
    return 77;
  }
  ncclscope::Result<std::vector<VerbsDevice>> devices = EnumerateDevices(*api.value(), "/sys");
  if (!devices.ok() || devices->empty()) {
    std::printf("%s\n", kSkip);
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

// NCCLSCOPE_DUMP_SIGNAL: a real SIGUSR2 sent to the process makes every live communicator write its dump
// within a stall-watch tick, and the process survives the signal.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "common/host.h"
#include "dump_reader.h"
#include "plugin/services/plugin_services.h"
#include "profiler/profiler.h"

namespace ncclscope::profiler {
namespace {

TEST(DumpSignal, SigusrTwoDumpsEveryLiveCommunicator) {
  char dir[] = "/tmp/ncclscope-sigdump-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("NCCLSCOPE_DUMP_DIR", dir, 1);
  unsetenv("NCCLSCOPE_DUMP_SIGNAL");
  InstallPluginServices();  // the stall watch (it takes the signal) and the dump hooks
  void* ctx = nullptr;
  int mask = 0;
  InitArgs args;
  args.comm_hash = 0xabcdef0123456789ull;
  args.nranks = 4;
  args.rank = 2;
  args.activation_mask = &mask;
  ASSERT_TRUE(Init(args, &ctx).ok());

  // Request dumps go to the host's folder (docs/dump-format.md).
  const std::string file = std::string(dir) + "/" + HostName() + "/ncclscope-comm-abcdef0123456789-rank2-request.json.gz";
  struct stat st;
  ASSERT_NE(stat(file.c_str(), &st), 0) << "dump exists before any signal";
  ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  bool written = false;
  while (!written && std::chrono::steady_clock::now() < deadline) {
    written = stat(file.c_str(), &st) == 0;
    if (!written) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(written) << "no dump within 2 s of SIGUSR2";
  if (written) {
    nlohmann::json j = ncclscope::testing::ReadDump(file);
    ASSERT_TRUE(j.is_object()) << file;
    EXPECT_EQ(j["reason"], "request");
    EXPECT_EQ(j["rank"], 2);
  }
  Finalize(ctx);
  unsetenv("NCCLSCOPE_DUMP_DIR");
  std::string cleanup = std::string("rm -rf ") + dir;
  ASSERT_EQ(system(cleanup.c_str()), 0);
}

}  // namespace
}  // namespace ncclscope::profiler

// Every writer of the plugin (dump, Chrome trace, node_exporter textfile, file_sd target, recording) with a
// symlink planted by "another user" at every name it could use — the final names and the temporary names
// the earlier writers used, which anyone could predict from the host, the pid and the communicator hash on
// /metrics, and the per-host folder of stall and request dumps. The links' targets must stay untouched and
// every output must still be written, as a regular file (a request dump, refused at the linked host folder, is
// the exception: it is not written at all).
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/call_recorder.h"
#include "common/hex.h"
#include "common/host.h"
#include "core/registry.h"
#include "plugin/services/plugin_services.h"
#include "profiler/profiler.h"

namespace ncclscope {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> RegularFiles(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = d != nullptr ? readdir(d) : nullptr) {
    std::string n = e->d_name;
    struct stat st;
    if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        lstat((dir + "/" + n).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      names.push_back(n);
    }
  }
  if (d != nullptr) closedir(d);
  return names;
}

TEST(PlantedLinks, NoWriterFollowsALinkAtAnyNameItCouldUse) {
  char dir_buf[] = "/tmp/ncclscope-links-XXXXXX";
  char victim_dir[] = "/tmp/ncclscope-victim-XXXXXX";
  ASSERT_NE(mkdtemp(dir_buf), nullptr);
  ASSERT_NE(mkdtemp(victim_dir), nullptr);
  const std::string dir = dir_buf;
  const std::string victim = std::string(victim_dir) + "/victim";
  std::ofstream(victim) << "precious\n";

  const uint64_t hash = 0x5afe11f0c0ffee00ull;
  const std::string host_pid = HostName() + "-" + std::to_string(getpid());
  const std::string dump = "ncclscope-comm-" + Hex16(hash) + "-rank1.json.gz";
  const std::string dump_v1 = "ncclscope-comm-" + Hex16(hash) + "-rank1.json";
  const std::string trace = "ncclscope-trace-" + Hex16(hash) + "-rank1.json";
  const std::string pid = std::to_string(getpid());
  const std::vector<std::string> planted = {
      dump, dump + ".tmp", dump + ".tmp." + pid, dump_v1, dump_v1 + ".tmp", trace, trace + ".tmp", trace + ".tmp." + pid,
      "ncclscope-" + host_pid + ".prom", "ncclscope-" + host_pid + ".prom.tmp",   // textfile
      "ncclscope-" + host_pid + ".json", "ncclscope-" + host_pid + ".json.tmp",   // file_sd
      "ncclscope-record-" + host_pid + ".jsonl"};
  for (const std::string& n : planted) ASSERT_EQ(symlink(victim.c_str(), (dir + "/" + n).c_str()), 0) << n;
  // The host folder of stall and request dumps, linked to the victim's folder.
  ASSERT_EQ(symlink(victim_dir, (dir + "/" + HostName()).c_str()), 0);

  for (const char* var : {"NCCLSCOPE_DUMP_DIR", "NCCLSCOPE_PROM_TEXTFILE_DIR", "NCCLSCOPE_SD_DIR", "NCCLSCOPE_RECORD_DIR"}) {
    setenv(var, dir.c_str(), 1);
  }
  setenv("NCCLSCOPE_TRACE", "1", 1);

  InstallPluginServices();  // every writer's hook and service, as NCCL's first init installs them
  int mask = 0;
  profiler::InitArgs args;
  args.comm_hash = hash;
  args.nranks = 2;
  args.rank = 1;
  args.activation_mask = &mask;
  void* ctx = nullptr;
  ASSERT_TRUE(profiler::Init(args, &ctx).ok());
  record::Recorder* recorder = record::Recorder::Get();
  ASSERT_NE(recorder, nullptr);
  recorder->Write("test", [](record::Line& l) { l.Int("x", 1); });
  recorder->Flush();
  EXPECT_EQ(RegularFiles(dir, ".json").size(), 1u) << "the file_sd target, while the endpoint runs";
  // A request dump (as the dump signal makes) aims at the linked host folder.
  for (const CommSnapshot& c : CommRegistry::Instance().Snapshot().comms) {
    if (c.comm_hash == hash) CommRegistry::Instance().RunDumpHooks(c, DumpReason::kRequest);
  }
  profiler::Finalize(ctx);

  EXPECT_EQ(ReadFile(victim), "precious\n") << "a writer followed a planted link";
  EXPECT_EQ(RegularFiles(victim_dir, ".gz").size(), 0u) << "a request dump went through the linked host folder";
  struct stat host_st;
  ASSERT_EQ(lstat((dir + "/" + HostName()).c_str(), &host_st), 0);
  EXPECT_TRUE(S_ISLNK(host_st.st_mode)) << "the planted host folder link was replaced";
  struct stat st;
  for (const std::string& n : {dump, trace}) {
    ASSERT_EQ(lstat((dir + "/" + n).c_str(), &st), 0) << n;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << n << " is still the planted link";
  }
  EXPECT_EQ(RegularFiles(dir, ".prom").size(), 1u) << "the textfile, under a name of its own";
  std::vector<std::string> records = RegularFiles(dir, ".jsonl");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_NE(ReadFile(dir + "/" + records[0]).find("\"call\":\"test\""), std::string::npos);
  EXPECT_EQ(RegularFiles(dir, ".json").size(), 2u)
      << "trace and the file_sd target (it outlives the process by NCCLSCOPE_OUTPUT_GRACE_S)";
  EXPECT_EQ(RegularFiles(dir, ".json.gz").size(), 1u) << "the finalize dump";
}

}  // namespace
}  // namespace ncclscope

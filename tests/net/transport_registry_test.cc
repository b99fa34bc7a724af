// The transport registry is a table the choice iterates: a third transport, registered here through the
// table alone (a fake, for this test only: it carries nothing), is chosen by name and by `auto`.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <fstream>

#include <string>
#include <vector>

#include "common/params.h"
#include "net/api/transport_registry.h"
#include "net/chain/default_plugin.h"
#include "net/verbs/verbs_probe.h"

namespace ncclscope::net {
namespace {

// Fake for the test: devices it can list, a listen/connect that refuse.
class PigeonTransport : public Transport {
 public:
  const char* name() const override { return "pigeon"; }
  Status Open() override {
    ++opened;
    props_.name = "loft0";
    return Status::Ok();
  }
  int device_count() const override { return 1; }
  const NetProperties& properties(int) const override { return props_; }
  Status MakeVDevice(const int*, int, int*) override { return Unimplemented("pigeons do not fuse"); }
  Status Listen(NetContext*, int, void*, ListenComm**) override { return Unimplemented("no loft"); }
  Status Connect(NetContext*, int, void*, SendComm**, ncclscope_net_device_handle_t**) override {
    return Unimplemented("no loft");
  }
  int opened = 0;

 private:
  NetProperties props_;
};

PigeonTransport& Pigeon() {
  static PigeonTransport t;
  return t;
}
Transport& GetPigeon() { return Pigeon(); }
int pigeon_lofts = 1;  // what the probe sees
TransportProbe ProbePigeon() {
  return TransportProbe{pigeon_lofts, pigeon_lofts, std::to_string(pigeon_lofts) + " loft(s)"};
}
std::vector<std::string> PresentPigeon() { return std::vector<std::string>(pigeon_lofts, "loft0"); }
const char* NeverOff(const ChoiceInputs&) { return nullptr; }

TransportEntry PigeonEntry(AutoRule rule) {
  return {.name = "pigeon", .devices = "loft", .get = &GetPigeon, .probe = &ProbePigeon,
          .present = &PresentPigeon, .disabled = &NeverOff, .in_auto = rule};
}

TransportTable WithPigeon(AutoRule rule, bool first) {
  TransportTable t = BuiltinTransports();
  t.insert(first ? t.begin() : t.end(), PigeonEntry(rule));
  return t;
}

TEST(TransportRegistry, AThirdTransportInTheTableIsChosenByName) {
  pigeon_lofts = 1;
  const TransportTable table = WithPigeon(AutoRule::kSkip, /*first=*/false);
  auto c = ChooseTransport(table, "pigeon", {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->entry, &table.back());
  EXPECT_EQ(c->reason, "NCCLSCOPE_TRANSPORT=pigeon: 1 loft(s)");
  // The entry's factory is what the net plugin opens (net_api.cc: choice->entry->get()).
  Transport& t = c->entry->get();
  EXPECT_EQ(&t, &Pigeon());
  ASSERT_TRUE(t.Open().ok());
  EXPECT_EQ(t.properties(0).name, "loft0");
  // The built-in table does not know it, and says what it knows.
  auto unknown = ChooseTransport(BuiltinTransports(), "pigeon", {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidUsage);
  EXPECT_NE(unknown.status().message().find("(auto, chain, ib, tcp)"), std::string::npos) << unknown.status().message();
}

TEST(TransportRegistry, ANamedTransportWithNothingUsableFailsNamingWhatItSaw) {
  pigeon_lofts = 0;
  auto c = ChooseTransport(WithPigeon(AutoRule::kSkip, false), "pigeon", {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "NCCLSCOPE_TRANSPORT=pigeon, but no loft is usable (0 loft(s)); unset it (NCCL then uses its own "
            "transports) or set NCCLSCOPE_TRANSPORT=tcp");
  pigeon_lofts = 1;
}

// A host without RDMA devices, whatever this one has: an empty sysfs.
class AutoChoice : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ncclscope-registry-sysfs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    verbs::SetSysfsRootForTest(root_);
  }
  void TearDown() override {
    verbs::SetSysfsRootForTest("");
    rmdir(root_.c_str());
  }
  std::string root_;
};

TEST_F(AutoChoice, GoesThroughTheTableInOrder) {
  pigeon_lofts = 1;
  TransportTable first = WithPigeon(AutoRule::kTake, /*first=*/true);
  auto c = ChooseTransport(first, "auto", {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_STREQ(c->entry->name, "pigeon");

  // After the built-in entries it is never reached: TCP is taken first.
  TransportTable last = WithPigeon(AutoRule::kTake, /*first=*/false);
  c = ChooseTransport(last, "auto", {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_STREQ(c->entry->name, "tcp");

  // A transport that steps aside when its devices are present makes `auto` decline, with its own status.
  TransportTable declining = WithPigeon(AutoRule::kDeclineIfPresent, /*first=*/true);
  c = ChooseTransport(declining, "auto", {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kDeclined);
  EXPECT_NE(c.status().message().find("1 loft(s): loft0"), std::string::npos) << c.status().message();
  pigeon_lofts = 0;
  c = ChooseTransport(declining, "auto", {});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->reason,
            "auto: no loft found, no net plugin to wrap (NCCLSCOPE_NET_CHAIN unset, no libnccl-net.so to wrap), no "
            "RDMA device found");
  pigeon_lofts = 1;
}

// The plugin NCCL would load by itself (libnccl-net.so), put on LD_LIBRARY_PATH in a folder of the test's.
class DefaultPlugin : public AutoChoice {
 protected:
  void SetUp() override {
    AutoChoice::SetUp();
    char tmpl[] = "/tmp/ncclscope-default-plugin-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    file_ = dir_ + "/" + chain::kDefaultNetPluginName;
    if (const char* old = getenv("LD_LIBRARY_PATH")) old_ = old, had_ = true;
    setenv("LD_LIBRARY_PATH", dir_.c_str(), 1);
  }
  void TearDown() override {
    unlink(file_.c_str());
    rmdir(dir_.c_str());
    if (had_) {
      setenv("LD_LIBRARY_PATH", old_.c_str(), 1);
    } else {
      unsetenv("LD_LIBRARY_PATH");
    }
    AutoChoice::TearDown();
  }
  std::string dir_, file_, old_;
  bool had_ = false;
};

TEST_F(DefaultPlugin, AnInstalledPluginIsWrappedByAuto) {
  ASSERT_EQ(symlink(NCCLSCOPE_PLUGIN_PATH, file_.c_str()), 0);  // a real plugin, another file than this test's
  const chain::DefaultNetPlugin d = chain::FindDefaultNetPlugin();
  EXPECT_EQ(d.file, file_);
  EXPECT_EQ(d.skipped, "");
  auto c = ChooseTransport(BuiltinTransports(), "auto", {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_STREQ(c->entry->name, "chain");
  EXPECT_EQ(c->reason, "auto: wrapping " + file_ + ", the net plugin NCCL loads by itself when NCCL_NET_PLUGIN is unset");
  // A transport named keeps priority.
  c = ChooseTransport(BuiltinTransports(), "tcp", {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_STREQ(c->entry->name, "tcp");
}

TEST_F(DefaultPlugin, OurOwnFileUnderTheNameIsNotWrapped) {
  // The code under test is linked into this executable: it is "ncclscope itself" here, by inode.
  char self[PATH_MAX] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
  ASSERT_EQ(symlink(self, file_.c_str()), 0);
  const chain::DefaultNetPlugin d = chain::FindDefaultNetPlugin();
  EXPECT_EQ(d.file, "");
  EXPECT_EQ(d.skipped, file_ + " is ncclscope itself");
  auto c = ChooseTransport(BuiltinTransports(), "auto", {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_STREQ(c->entry->name, "tcp");
}

TEST_F(DefaultPlugin, AFileNcclCouldNotLoadIsPassedOver) {
  std::ofstream(file_) << "not a library\n";
  chain::DefaultNetPlugin d = chain::FindDefaultNetPlugin();
  EXPECT_EQ(d.file, "");
  EXPECT_NE(d.skipped.find(file_ + " does not load ("), std::string::npos) << d.skipped;
  auto c = ChooseTransport(BuiltinTransports(), "auto", {});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_STREQ(c->entry->name, "tcp");
  // A FIFO is never handed to dlopen (which would block on it).
  unlink(file_.c_str());
  ASSERT_EQ(mkfifo(file_.c_str(), 0600), 0);
  d = chain::FindDefaultNetPlugin();
  EXPECT_EQ(d.file, "");
  EXPECT_NE(d.skipped.find("FIFO"), std::string::npos) << d.skipped;
}

// NCCLSCOPE_TRANSPORT's values in the parameter list (what ncclscope-params prints and the parser accepts)
// are `auto` and the built-in table's names: adding a table line without the name fails here.
TEST(TransportRegistry, TheParameterListsExactlyTheTablesNames) {
  std::string names = "auto";
  for (const TransportEntry& e : BuiltinTransports()) names += std::string("|") + e.name;
  EXPECT_EQ(std::string(SpecOf(ParamId::kTransport).choices), names);
}

}  // namespace
}  // namespace ncclscope::net

// The transport registry is a table the choice iterates: a third transport, registered here through the
// table alone (a fake, for this test only: it carries nothing), is chosen by name and by `auto`.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <unistd.h>

#include <string>
#include <vector>

#include "common/params.h"
#include "net/api/transport_registry.h"
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
  EXPECT_EQ(c->reason, "auto: no loft found, no RDMA device found");
  pigeon_lofts = 1;
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

// NCCL_IB_HCA grammar: prefixes, ^exclusion, =exact names, dev:port, dev:port:rail:plane, empty fields,
// and bad syntax (warned, whole value replaced by the default); NCCLSCOPE_IB_HCA wins over NCCL_IB_HCA.
#include "common/hca_filter.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/params.h"

namespace ncclscope::net::verbs {
namespace {

bool Selects(const HcaFilter& f, const char* dev, int port) { return f.Match(dev, port).has_value(); }

TEST(HcaFilter, EmptySelectsEverythingWithoutRails) {
  HcaFilter f = HcaFilter::Parse("");
  EXPECT_TRUE(f.selects_all());
  auto m = f.Match("mlx5_0", 1);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->rail, -1);
  EXPECT_EQ(m->plane, -1);
}

TEST(HcaFilter, PrefixMatchByDefault) {
  HcaFilter f = HcaFilter::Parse("mlx5");
  EXPECT_TRUE(Selects(f, "mlx5_0", 1));
  EXPECT_TRUE(Selects(f, "mlx5_10", 2));
  EXPECT_FALSE(Selects(f, "rxe0", 1));
  EXPECT_FALSE(Selects(f, "mlx4_0", 1));
  HcaFilter rxe = HcaFilter::Parse("rxe");
  EXPECT_TRUE(Selects(rxe, "rxe0", 1));
  EXPECT_TRUE(Selects(rxe, "rxe1", 1));
}

TEST(HcaFilter, ExactNamesWithEquals) {
  HcaFilter f = HcaFilter::Parse("=mlx5_1");
  EXPECT_TRUE(f.exact());
  EXPECT_TRUE(Selects(f, "mlx5_1", 1));
  EXPECT_FALSE(Selects(f, "mlx5_10", 1));
  EXPECT_FALSE(Selects(f, "mlx5_0", 1));
  // Without '=', mlx5_1 is a prefix of mlx5_10.
  EXPECT_TRUE(Selects(HcaFilter::Parse("mlx5_1"), "mlx5_10", 1));
}

TEST(HcaFilter, CaretExcludesTheList) {
  HcaFilter f = HcaFilter::Parse("^rxe0");
  EXPECT_TRUE(f.exclude());
  EXPECT_FALSE(Selects(f, "rxe0", 1));
  EXPECT_TRUE(Selects(f, "rxe1", 1));
  // Prefix exclusion: ^mlx5_1 also drops mlx5_10; ^=mlx5_1 does not.
  EXPECT_FALSE(Selects(HcaFilter::Parse("^mlx5_1"), "mlx5_10", 1));
  EXPECT_TRUE(Selects(HcaFilter::Parse("^=mlx5_1"), "mlx5_10", 1));
  EXPECT_FALSE(Selects(HcaFilter::Parse("^=mlx5_1"), "mlx5_1", 1));
  // Excluded lists never hand out rails.
  auto m = HcaFilter::Parse("^mlx5_0:1:3").Match("mlx5_1", 1);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->rail, -1);
}

TEST(HcaFilter, PortRestrictsTheEntry) {
  HcaFilter f = HcaFilter::Parse("mlx5_0:1,mlx5_1:2");
  EXPECT_TRUE(Selects(f, "mlx5_0", 1));
  EXPECT_FALSE(Selects(f, "mlx5_0", 2));
  EXPECT_FALSE(Selects(f, "mlx5_1", 1));
  EXPECT_TRUE(Selects(f, "mlx5_1", 2));
  HcaFilter ex = HcaFilter::Parse("^rxe0:1");
  EXPECT_FALSE(Selects(ex, "rxe0", 1));
  EXPECT_TRUE(Selects(ex, "rxe0", 2));
}

TEST(HcaFilter, RailAndPlaneComeFromTheFirstMatchingEntry) {
  HcaFilter f = HcaFilter::Parse("mlx5_0:1:0:1,mlx5_1:1:1:0,mlx5_2::2,mlx5_3:::4,mlx5");
  auto a = f.Match("mlx5_0", 1);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rail, 0);
  EXPECT_EQ(a->plane, 1);
  EXPECT_EQ(a->entry, 0);
  auto b = f.Match("mlx5_1", 1);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->rail, 1);
  EXPECT_EQ(b->plane, 0);
  auto c = f.Match("mlx5_2", 7);  // empty port field: any port
  ASSERT_TRUE(c);
  EXPECT_EQ(c->rail, 2);
  EXPECT_EQ(c->plane, -1);
  auto d = f.Match("mlx5_3", 1);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->rail, -1);
  EXPECT_EQ(d->plane, 4);
  auto e = f.Match("mlx5_0", 2);  // entry 0 wants port 1; the bare "mlx5" entry catches it
  ASSERT_TRUE(e);
  EXPECT_EQ(e->rail, -1);
  EXPECT_EQ(e->entry, 4);
}

TEST(HcaFilter, EmptyEntriesAreSkippedLikeNccl) {
  HcaFilter f = HcaFilter::Parse("mlx5_0,,mlx5_1,");
  ASSERT_EQ(f.entries().size(), 2u);
  EXPECT_TRUE(Selects(f, "mlx5_1", 1));
}

TEST(HcaFilter, BadSyntaxWarnsAndFallsBackToTheDefault) {
  for (const char* bad : {"mlx5_0:x", "mlx5_0:0", "mlx5_0:1:-2", "mlx5_0:1:2:3:4", ":1", "^", "=", "mlx5_0:1:99999",
                          "mlx5_0,mlx5_1:one"}) {
    std::string error;
    HcaFilter f = HcaFilter::Parse(bad, &error);
    EXPECT_FALSE(error.empty()) << bad;
    EXPECT_TRUE(f.selects_all()) << bad;
    EXPECT_TRUE(Selects(f, "anything", 1)) << bad;
  }
}

TEST(HcaFilter, MaySelectDeviceSkipsUnnamedDevices) {
  HcaFilter f = HcaFilter::Parse("=rxe1");
  EXPECT_TRUE(f.MaySelectDevice("rxe1"));
  EXPECT_FALSE(f.MaySelectDevice("rxe0"));
  EXPECT_TRUE(HcaFilter::Parse("^rxe1").MaySelectDevice("rxe1"));  // ports may survive an exclusion
}

TEST(HcaFilter, OurVariableTakesPrecedenceOverNccls) {
  std::map<std::string, std::string> env = {{"NCCL_IB_HCA", "mlx5_0"}};
  auto get = [&env](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(ParseParams(get).Str(ParamId::kIbHca), "mlx5_0");
  env["NCCLSCOPE_IB_HCA"] = "^rxe";
  EXPECT_EQ(ParseParams(get).Str(ParamId::kIbHca), "^rxe");
}

}  // namespace
}  // namespace ncclscope::net::verbs

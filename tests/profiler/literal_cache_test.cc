// The event path's name cache: which addresses it trusts without comparing the string again.
#include <memory>
#include <string>

#include "core/op_types.h"
#include "gtest/gtest.h"
#include "profiler/literal_cache.h"

namespace ncclscope::profiler {
namespace {

const char kLiteral[] = "ncclFloat16";

TEST(LiteralCache, TrustsLiteralsOfLoadedObjectsOnly) {
  EXPECT_TRUE(InLoadedReadOnlySegment("AllReduce"));
  EXPECT_TRUE(InLoadedReadOnlySegment(kLiteral));
  char stack[16] = "AllReduce";
  EXPECT_FALSE(InLoadedReadOnlySegment(stack));
  auto heap = std::make_unique<std::string>("AllReduce");
  EXPECT_FALSE(InLoadedReadOnlySegment(heap->c_str()));
  static char writable[16] = "AllReduce";  // .data: writable, so never trusted
  EXPECT_FALSE(InLoadedReadOnlySegment(writable));
}

TEST(LiteralCache, AWritableBufferIsConfirmedOnEveryHit) {
  static char name[16] = "Broadcast";
  EXPECT_EQ((CachedParse<Func, ParseFunc, FuncName>(name)), Func::kBroadcast);
  EXPECT_EQ((CachedParse<Func, ParseFunc, FuncName>(name)), Func::kBroadcast);  // a hit
  std::snprintf(name, sizeof(name), "%s", "ReduceScatter");  // same address, another name
  EXPECT_EQ((CachedParse<Func, ParseFunc, FuncName>(name)), Func::kReduceScatter);
  EXPECT_EQ((CachedParse<Func, ParseFunc, FuncName>("AllGather")), Func::kAllGather);
  EXPECT_EQ((CachedParse<Func, ParseFunc, FuncName>("AllGather")), Func::kAllGather);  // a trusted hit
}

}  // namespace
}  // namespace ncclscope::profiler

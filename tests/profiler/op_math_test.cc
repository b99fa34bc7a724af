// nccl-tests byte base and bandwidth formulas, checked against hand-computed figures.
#include "core/op_types.h"
#include "gtest/gtest.h"

namespace ncclscope {
namespace {

TEST(OpMath, ByteBase) {
  EXPECT_EQ(OpBytes(Func::kAllReduce, 1 << 20, 4, 8), 4u << 20);
  EXPECT_EQ(OpBytes(Func::kBroadcast, 1000, 2, 8), 2000u);
  EXPECT_EQ(OpBytes(Func::kReduce, 1000, 8, 8), 8000u);
  EXPECT_EQ(OpBytes(Func::kSend, 1000, 4, 8), 4000u);
  EXPECT_EQ(OpBytes(Func::kRecv, 1000, 4, 8), 4000u);
  // Per-rank counts: × nranks.
  EXPECT_EQ(OpBytes(Func::kAllGather, 1000, 1, 8), 8000u);
  EXPECT_EQ(OpBytes(Func::kReduceScatter, 1000, 4, 8), 32000u);
  EXPECT_EQ(OpBytes(Func::kAlltoAll, 1000, 4, 8), 32000u);
}

TEST(OpMath, BusBandwidthLikeNcclTests) {
  // nccl-tests all_reduce_perf, 8 ranks, 128 MiB in 1.5 ms: algbw 89.478 GB/s, busbw 156.59 GB/s.
  const uint64_t bytes = 134217728, ns = 1'500'000;
  EXPECT_NEAR(AlgBwGBps(bytes, ns), 89.478485, 1e-5);
  EXPECT_NEAR(BusBwGBps(Func::kAllReduce, bytes, ns, 8), 89.478485 * 14.0 / 8.0, 1e-5);
  EXPECT_NEAR(BusBwGBps(Func::kAllGather, bytes, ns, 8), 89.478485 * 7.0 / 8.0, 1e-5);
  EXPECT_NEAR(BusBwGBps(Func::kReduceScatter, bytes, ns, 8), 89.478485 * 7.0 / 8.0, 1e-5);
  EXPECT_NEAR(BusBwGBps(Func::kAlltoAll, bytes, ns, 8), 89.478485 * 7.0 / 8.0, 1e-5);
  EXPECT_NEAR(BusBwGBps(Func::kBroadcast, bytes, ns, 8), 89.478485, 1e-5);
  EXPECT_NEAR(BusBwGBps(Func::kReduce, bytes, ns, 8), 89.478485, 1e-5);
  EXPECT_NEAR(BusBwGBps(Func::kSend, bytes, ns, 2), 89.478485, 1e-5);
  EXPECT_DOUBLE_EQ(BusBwFactor(Func::kAllReduce, 1), 0.0);
  EXPECT_EQ(AlgBwGBps(100, 0), 0.0);
}

TEST(OpMath, Parsing) {
  EXPECT_EQ(ParseFunc("AllReduce"), Func::kAllReduce);
  EXPECT_EQ(ParseFunc("ReduceScatter"), Func::kReduceScatter);
  EXPECT_EQ(ParseFunc("Recv"), Func::kRecv);
  EXPECT_EQ(ParseFunc("Bogus"), Func::kOther);
  EXPECT_EQ(ParseFunc(nullptr), Func::kOther);
  EXPECT_EQ(ParseAlgo("NVLS_TREE"), Algo::kNvlsTree);
  EXPECT_EQ(ParseProto("LL128"), Proto::kLL128);
  EXPECT_EQ(DatatypeSize("ncclFloat32"), 4);
  EXPECT_EQ(DatatypeSize("ncclBfloat16"), 2);
  EXPECT_EQ(DatatypeSize("ncclFloat64"), 8);
  EXPECT_EQ(DatatypeSize("ncclInt8"), 1);
  EXPECT_EQ(DatatypeSize("Unknown"), 1);  // how NCCL prints ncclUint8
  EXPECT_EQ(SizeClass(0), 0);
  EXPECT_EQ(SizeClass(1), 1);
  EXPECT_EQ(SizeClass(1024), 11);
  EXPECT_EQ(SizeClass(1023), 10);
}

}  // namespace
}  // namespace ncclscope

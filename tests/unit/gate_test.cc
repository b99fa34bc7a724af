// The gates map Status codes onto NCCL's result codes and never let an exception escape.
#include <gtest/gtest.h>

#include <stdexcept>

#include "common/gate.h"

namespace ncclscope {
namespace {

TEST(Gate, NetGateMapsStatusCodes) {
  EXPECT_EQ(NetGate("t", [] { return Status::Ok(); }), NCCLSCOPE_SUCCESS);
  EXPECT_EQ(NetGate("t", [] { return SystemError("x"); }), NCCLSCOPE_SYSTEM_ERROR);
  EXPECT_EQ(NetGate("t", [] { return RemoteError("peer 10.0.0.1:5000 reset"); }), NCCLSCOPE_REMOTE_ERROR);
  EXPECT_EQ(NetGate("t", [] { return InvalidUsage("x"); }), NCCLSCOPE_INVALID_USAGE);
  EXPECT_EQ(NetGate("t", [] { return InvalidArgument("x"); }), NCCLSCOPE_INVALID_ARGUMENT);
  EXPECT_EQ(NetGate("t", [] { return Unimplemented("x"); }), NCCLSCOPE_INTERNAL_ERROR);
}

TEST(Gate, NetGateCatchesExceptions) {
  EXPECT_EQ(NetGate("t", []() -> Status { throw std::runtime_error("boom"); }), NCCLSCOPE_INTERNAL_ERROR);
  EXPECT_EQ(NetGate("t", []() -> Status { throw std::bad_alloc(); }), NCCLSCOPE_SYSTEM_ERROR);
  EXPECT_EQ(NetGate("t", []() -> Status { throw 42; }), NCCLSCOPE_INTERNAL_ERROR);
}

TEST(Gate, ProfilerEventGateAlwaysSucceeds) {
  EXPECT_EQ(ProfilerEventGate("t", [] { throw std::runtime_error("boom"); }), NCCLSCOPE_SUCCESS);
  EXPECT_EQ(ProfilerEventGate("t", [] {}), NCCLSCOPE_SUCCESS);
}

TEST(Gate, ProfilerInitGateMayFail) {
  EXPECT_EQ(ProfilerInitGate("t", [] { return InvalidUsage("no"); }), NCCLSCOPE_INVALID_USAGE);
  EXPECT_EQ(ProfilerInitGate("t", []() -> Status { throw std::runtime_error("boom"); }), NCCLSCOPE_INTERNAL_ERROR);
}

}  // namespace
}  // namespace ncclscope

// The verbs connection tunables (net/verbs/verbs_comm.h VerbsConfig): NCCL's defaults, NCCLSCOPE_IB_<X> over
// NCCL_IB_<X>, and out-of-range or malformed values warned about by the tunables parser (the default stays).
#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/params.h"
#include "net/verbs/verbs_comm.h"

namespace ncclscope::net::verbs {
namespace {

class VerbsConfigTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* n : {"NCCL_IB_QPS_PER_CONNECTION", "NCCLSCOPE_IB_QPS_PER_CONNECTION", "NCCL_IB_TIMEOUT",
                          "NCCLSCOPE_IB_TIMEOUT", "NCCL_IB_RETRY_CNT", "NCCL_IB_SL", "NCCL_IB_TC",
                          "NCCL_IB_SPLIT_DATA_ON_QPS"}) {
      unsetenv(n);
    }
    ReloadParams();
  }
};

TEST_F(VerbsConfigTest, DefaultsAreNccls) {
  ReloadParams();
  VerbsConfig c = VerbsConfig::Load();
  EXPECT_EQ(c.qps_per_connection, 1);
  EXPECT_EQ(c.timeout, 20);
  EXPECT_EQ(c.retry_cnt, 7);
  EXPECT_EQ(c.sl, 0);
  EXPECT_EQ(c.tc, 0);
  EXPECT_FALSE(c.split_data);  // NCCL's default: each message on one QP in turn
}

TEST_F(VerbsConfigTest, OursWinsOverNcclsAndNcclsIsRead) {
  setenv("NCCL_IB_QPS_PER_CONNECTION", "2", 1);
  setenv("NCCL_IB_TIMEOUT", "14", 1);
  setenv("NCCLSCOPE_IB_TIMEOUT", "16", 1);
  setenv("NCCL_IB_RETRY_CNT", "3", 1);
  setenv("NCCL_IB_SL", "5", 1);
  setenv("NCCL_IB_TC", "106", 1);
  setenv("NCCL_IB_SPLIT_DATA_ON_QPS", "1", 1);
  ReloadParams();
  VerbsConfig c = VerbsConfig::Load();
  EXPECT_EQ(c.qps_per_connection, 2);
  EXPECT_EQ(c.timeout, 16);
  EXPECT_EQ(c.retry_cnt, 3);
  EXPECT_EQ(c.sl, 5);
  EXPECT_EQ(c.tc, 106);
  EXPECT_TRUE(c.split_data);
}

TEST_F(VerbsConfigTest, BadValuesKeepTheDefault) {
  setenv("NCCL_IB_QPS_PER_CONNECTION", "9", 1);  // more than kMaxQps
  setenv("NCCL_IB_TIMEOUT", "14x", 1);
  setenv("NCCL_IB_RETRY_CNT", "8", 1);
  setenv("NCCL_IB_SPLIT_DATA_ON_QPS", "2", 1);
  ReloadParams();
  VerbsConfig c = VerbsConfig::Load();
  EXPECT_EQ(c.qps_per_connection, 1);
  EXPECT_EQ(c.timeout, 20);
  EXPECT_EQ(c.retry_cnt, 7);
  EXPECT_FALSE(c.split_data);
}

TEST(VerbsWire, LayoutsAreFixed) {
  // Both ends of a connection must agree byte for byte; a change here is a wire-version bump.
  EXPECT_EQ(sizeof(CtsEntry), 32u);
  EXPECT_EQ(sizeof(CtsSlot), 32u * kMaxRecvs);
  EXPECT_EQ(sizeof(ConnInfo), 160u);  // kConnVersion 5: identity (4: fuse_id, fuse_index, fuse_count)
  EXPECT_EQ(kConnVersion, 5);
  EXPECT_LE(sizeof(VerbsHandlePayload), static_cast<size_t>(kHandlePayloadBytes));
}

}  // namespace
}  // namespace ncclscope::net::verbs

// How a fused device cuts a message into one share per member: contiguous, in member order, 4 KiB-aligned
// boundaries, covering every byte exactly once; small messages go whole to the first member.
#include <gtest/gtest.h>

#include "net/vdevice.h"
#include "net/verbs/fused_comm.h"

namespace ncclscope::net::verbs {
namespace {

TEST(FusedShare, SharesTileTheMessageInOrder) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{8193}, size_t{1} << 20,
                      (size_t{3} << 20) + 13}) {
    for (int n = 1; n <= kMaxDevsPerVNic; ++n) {
      size_t next = 0;
      for (int k = 0; k < n; ++k) {
        size_t off = 0;
        const size_t len = FusedShare(size, n, k, &off);
        EXPECT_EQ(off, next) << size << " bytes, member " << k << " of " << n;
        if (off + len < size) {
          EXPECT_EQ((off + len) % 4096, 0u);  // every boundary inside the message
        }
        next = off + len;
      }
      EXPECT_EQ(next, size) << size << " bytes over " << n;
    }
  }
}

TEST(FusedShare, SmallMessagesGoWholeToTheFirstMember) {
  size_t off = 0;
  EXPECT_EQ(FusedShare(100, 2, 0, &off), 100u);
  EXPECT_EQ(FusedShare(100, 2, 1, &off), 0u);
  EXPECT_EQ(off, 100u);
}

TEST(FusedProperties, JoinsNamesAndKeepsWhatEveryMemberCan) {
  NetProperties a, b;
  a.name = "mlx5_0";
  b.name = "mlx5_1";
  a.ptr_support = 0x7;
  b.ptr_support = 0x3;
  a.max_recvs = 8;
  b.max_recvs = 4;
  a.rail_id = 2;
  const int devs[2] = {0, 1};
  NetProperties f = FusedProperties({&a, &b}, devs, 2, 400000);
  EXPECT_EQ(f.name, "mlx5_0+mlx5_1");
  EXPECT_EQ(f.ptr_support, 0x3);
  EXPECT_EQ(f.max_recvs, 4);
  EXPECT_EQ(f.speed_mbps, 400000);
  EXPECT_EQ(f.vdev_count, 2);
  EXPECT_EQ(f.vdevs[1], 1);
  EXPECT_EQ(f.rail_id, 2);
}

}  // namespace
}  // namespace ncclscope::net::verbs

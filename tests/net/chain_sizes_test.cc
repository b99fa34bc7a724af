// The chain's receive completions: a wrapped plugin whose test() reports an impossible size for a receive (more
// than was posted, up to INT_MAX, or negative) is counted as a protocol error each time, the size NCCL gets and the
// byte count are clamped to what was posted, and one line per comm says so. A fake inner, in process.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "common/log.h"
#include "core/net_stats.h"
#include "log_capture.h"
#include "net/chain/chain_comm.h"

namespace ncclscope::net::chain {
namespace {

using testing::LogCapture;

// An inner whose receives complete at once with the sizes the test sets in `report`.
class FakeInner final : public InnerPlugin {
 public:
  FakeInner() {
    version_ = 12;
    name_ = "fake-sizes";
    path_ = "/fake/libnccl-net-fake-sizes.so";
    who_ = "the wrapped net plugin 'fake-sizes' (" + path_ + ")";
  }
  std::vector<int> report;

  ncclscope_result_t Init(void**, uint64_t, int, ncclscope_logger_t, ncclscope_profiler_callback_t) override {
    return NCCLSCOPE_SUCCESS;
  }
  ncclscope_result_t Finalize(void*) override { return NCCLSCOPE_SUCCESS; }
  ncclscope_result_t Devices(int* n) override { return *n = 1, NCCLSCOPE_SUCCESS; }
  ncclscope_result_t GetProperties(int, NetProperties*) override { return NCCLSCOPE_SUCCESS; }
  ncclscope_result_t MakeVDevice(const int*, int, int*) override { return NCCLSCOPE_INVALID_USAGE; }
  ncclscope_result_t SetNetAttr(void*, ncclscope_net_attr_t*) override { return NCCLSCOPE_SUCCESS; }
  ncclscope_result_t Listen(void*, int, void*, void**) override { return NCCLSCOPE_INTERNAL_ERROR; }
  ncclscope_result_t Connect(void*, int, int, void*, void**, ncclscope_net_device_handle_t**) override {
    return NCCLSCOPE_INTERNAL_ERROR;
  }
  ncclscope_result_t Accept(void*, void**, ncclscope_net_device_handle_t**) override { return NCCLSCOPE_INTERNAL_ERROR; }
  ncclscope_result_t RegMr(void*, void*, size_t, int, void**) override { return NCCLSCOPE_SUCCESS; }
  ncclscope_result_t RegMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) override {
    return NCCLSCOPE_SUCCESS;
  }
  ncclscope_result_t DeregMr(void*, void*) override { return NCCLSCOPE_SUCCESS; }
  ncclscope_result_t Isend(void*, void*, size_t, int, void*, void*, void**) override { return NCCLSCOPE_INTERNAL_ERROR; }
  ncclscope_result_t Irecv(void*, int, void**, const size_t*, const int*, void**, void**, void** req) override {
    *req = this;
    return NCCLSCOPE_SUCCESS;
  }
  ncclscope_result_t Iflush(void*, int, void**, int*, void**, void** req) override {
    *req = nullptr;
    return NCCLSCOPE_SUCCESS;
  }
  ncclscope_result_t Test(void*, int* done, int* sizes) override {
    *done = 1;
    for (size_t i = 0; i < report.size(); ++i) sizes[i] = report[i];
    return NCCLSCOPE_SUCCESS;
  }
  ncclscope_result_t CloseSend(void*) override { return NCCLSCOPE_SUCCESS; }
  ncclscope_result_t CloseRecv(void*) override { return NCCLSCOPE_SUCCESS; }
  ncclscope_result_t CloseListen(void*) override { return NCCLSCOPE_SUCCESS; }
  ncclscope_result_t GetDeviceMr(void*, void*, void**) override { return NCCLSCOPE_INVALID_USAGE; }
  ncclscope_result_t IrecvConsumed(void*, int, void*) override { return NCCLSCOPE_SUCCESS; }
};

constexpr char kNic[] = "fake-sizes0";

NetStatsRow NicRow() {
  for (const NetStatsRow& r : SnapshotNetStats().rows) {
    if (r.nic == kNic && r.nic_total) return r;
  }
  return {};
}

uint64_t ProtocolErrors() { return NicRow().errors[static_cast<int>(NetErrorKind::kProtocol)]; }

// One receive of `posted` sizes completed with the inner's `reported` ones; what NCCL got.
std::vector<int> Receive(ChainRecvComm* comm, FakeInner& inner, std::vector<size_t> posted, std::vector<int> reported) {
  const int n = static_cast<int>(posted.size());
  void* data[kMaxRecvs] = {};
  int tags[kMaxRecvs] = {};
  void* mhs[kMaxRecvs] = {};
  Request* req = nullptr;
  EXPECT_TRUE(comm->Irecv(n, data, posted.data(), tags, mhs, nullptr, false, &req).ok());
  EXPECT_NE(req, nullptr);
  inner.report = std::move(reported);
  int done = 0;
  int got[kMaxRecvs] = {};
  EXPECT_TRUE(req->Test(&done, got).ok());
  EXPECT_EQ(done, 1);
  return std::vector<int>(got, got + n);
}

size_t ImpossibleSizeLines() {
  size_t n = 0;
  for (const std::string& w : LogCapture::AllWarnings()) {
    if (w.find("fake-sizes") != std::string::npos && w.find("impossible, clamped") != std::string::npos) ++n;
  }
  return n;
}

TEST(ChainReceiveSizes, ImpossibleSizesAreProtocolErrorsClampedToWhatWasPostedWithOneLinePerComm) {
  SetNcclLogger(&LogCapture::Logger);
  LogCapture::Clear();
  FakeInner inner;
  NetContext ctx;
  ctx.comm_id = 0x5153;
  auto* comm = new ChainRecvComm(inner, &inner, kNic, &ctx, /*device_offload=*/false);
  const uint64_t errors_before = ProtocolErrors();
  const uint64_t bytes_before = NicRow().bytes_received;

  // Sizes within what was posted: nothing to say.
  EXPECT_EQ(Receive(comm, inner, {100, 200}, {100, 50}), (std::vector<int>{100, 50}));
  EXPECT_EQ(ProtocolErrors(), errors_before);
  EXPECT_EQ(ImpossibleSizeLines(), 0u);

  // More than posted and negative: two errors, clamped to 100 and 0, one line.
  EXPECT_EQ(Receive(comm, inner, {100, 200}, {150, -5}), (std::vector<int>{100, 0}));
  EXPECT_EQ(ProtocolErrors(), errors_before + 2);
  EXPECT_EQ(ImpossibleSizeLines(), 1u);
  EXPECT_TRUE(LogCapture::Logged("reported 150 bytes received into a buffer of 100 posted"));

  // Up to INT_MAX: counted again, no second line for this comm.
  EXPECT_EQ(Receive(comm, inner, {64}, {INT_MAX}), (std::vector<int>{64}));
  EXPECT_EQ(ProtocolErrors(), errors_before + 3);
  EXPECT_EQ(ImpossibleSizeLines(), 1u);

  // The bytes counted are the clamped ones: 150 + 100 + 64.
  EXPECT_EQ(NicRow().bytes_received - bytes_before, 314u);
  // The comm goes on (an implausible size is not a failure of the comm).
  EXPECT_EQ(Receive(comm, inner, {8}, {8}), (std::vector<int>{8}));
  EXPECT_TRUE(comm->Close().ok());
  if (HasFailure()) LogCapture::Print(stderr);
}

}  // namespace
}  // namespace ncclscope::net::chain

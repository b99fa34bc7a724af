// The verbs transport through the BUILT plugin's exported tables, on real soft-RoCE devices (the guest
// tier: rxe0 on 198.51.100.1/24, rxe1 on 203.0.113.1/24). Each case runs in its own forked process that
// dlopens the library as NCCL does, so every init reads the environment afresh:
//  - NCCLSCOPE_TRANSPORT=ib: every table version v8..v12 lists rxe0 and rxe1 with the speed the kernel
//    reports, and the init log names each port's link layer and GID;
//  - NCCL_IB_HCA / NCCLSCOPE_IB_HCA in each syntax selects what it says (v12 rail and plane included);
//  - auto declines and says why; tcp carries the job.
// On a host without a verbs device it prints SKIP with the reason and exits 77.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "harness.h"
#include "log_capture.h"
#include "plugin_net.h"

namespace ncclscope::testing {
namespace {

bool Logged(const std::string& needle) { return LogCapture::Logged(needle); }
void DumpLog() { LogCapture::Print(stderr); }

// The port's speed as the kernel states it ("2.5 Gb/sec (1X SDR)"), in Mbps.
int KernelSpeedMbps(const std::string& dev) {
  std::ifstream in("/sys/class/infiniband/" + dev + "/ports/1/rate");
  double gbps = 0;
  in >> gbps;
  return static_cast<int>(gbps * 1000 + 0.5);
}

using Env = std::vector<std::pair<std::string, std::string>>;

Env IbEnv(const std::string& hca = "") {
  Env env = {{"NCCLSCOPE_TRANSPORT", "ib"}, {"NCCLSCOPE_PROM_PORT", "-1"}};
  if (!hca.empty()) env.push_back({"NCCL_IB_HCA", hca});
  return env;
}

// The names the table lists after an init with `env` (rail and plane of the first device in *rail/*plane).
struct Listing {
  int rc = -1;
  std::vector<std::string> names;
};

int ListInChild(int version, const std::vector<std::string>& want, const std::vector<int>& want_rail = {}) {
  std::string err;
  auto net = PluginNet::Open(version, TableSource::kDlopen, &err);
  CHILD_CHECK(net != nullptr);
  if (net->Init(0x1b, LogCapture::Logger, nullptr) != 0) {
    DumpLog();
    return 10;
  }
  int n = 0;
  CHILD_CHECK(net->Devices(&n) == 0);
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    PropsView p;
    CHILD_CHECK(net->Props(i, &p) == 0);
    names.push_back(p.name);
    CHILD_CHECK(p.speed == KernelSpeedMbps(p.name));
    CHILD_CHECK(p.ptr_support == NCCLSCOPE_PTR_HOST);
    CHILD_CHECK(p.max_recvs > 0 && p.max_comms > 0);
    if (version >= 12 && i < static_cast<int>(want_rail.size())) CHILD_CHECK(p.rail == want_rail[i]);
  }
  if (names != want) {
    for (const std::string& s : names) std::fprintf(stderr, "  listed: %s\n", s.c_str());
    DumpLog();
    return 11;
  }
  CHILD_CHECK(net->Finalize() == 0);
  return 0;
}

TEST(VerbsPluginGuest, EveryTableListsBothSoftRoceDevicesWithRealSpeedLinkLayerAndGid) {
  for (int v = 8; v <= 12; ++v) {
    pid_t pid = Spawn(
        [v] {
          int rc = ListInChild(v, {"rxe0", "rxe1"});
          if (rc != 0) return rc;
          // One line per port: link layer, speed and the RoCE v2 IPv4-mapped GID of its address.
          CHILD_CHECK(Logged("rxe0:1 Ethernet") && Logged("::ffff:198.51.100.1") && Logged("chosen"));
          CHILD_CHECK(Logged("rxe1:1 Ethernet") && Logged("::ffff:203.0.113.1"));
          return 0;
        },
        IbEnv());
    EXPECT_EQ(Reap(pid, 60), 0) << "v" << v;
  }
}

TEST(VerbsPluginGuest, IbHcaSelectsWhatEachSyntaxSays) {
  struct Case {
    std::string hca;
    std::vector<std::string> want;
  };
  const Case cases[] = {{"rxe1", {"rxe1"}},         {"=rxe0:1", {"rxe0"}},  {"^rxe0", {"rxe1"}},
                        {"rxe", {"rxe0", "rxe1"}}, {"=rxe", {}},           {"^=rxe1", {"rxe0"}},
                        {"rxe1,rxe0", {"rxe0", "rxe1"}}};
  for (const Case& c : cases) {
    pid_t pid = Spawn([&c] { return ListInChild(11, c.want); }, IbEnv(c.hca));
    int rc = Reap(pid, 60);
    if (c.want.empty()) {
      EXPECT_EQ(rc, 10) << "NCCL_IB_HCA=" << c.hca << " selects nothing: init must fail";
    } else {
      EXPECT_EQ(rc, 0) << "NCCL_IB_HCA=" << c.hca;
    }
  }
}

TEST(VerbsPluginGuest, RailAndPlaneFromTheHcaSyntaxReachV12Properties) {
  pid_t pid = Spawn([] { return ListInChild(12, {"rxe0", "rxe1"}, {3, 5}); }, IbEnv("rxe0:1:3:0,rxe1:1:5:1"));
  EXPECT_EQ(Reap(pid, 60), 0);
}

TEST(VerbsPluginGuest, OurVariableWinsOverNccls) {
  Env env = IbEnv("rxe0");
  env.push_back({"NCCLSCOPE_IB_HCA", "=rxe1"});
  pid_t pid = Spawn([] { return ListInChild(11, {"rxe1"}); }, env);
  EXPECT_EQ(Reap(pid, 60), 0);
}

TEST(VerbsPluginGuest, AutoDeclinesAndSaysWhy) {
  pid_t pid = Spawn(
      [] {
        std::string err;
        auto net = PluginNet::Open(11, TableSource::kDlopen, &err);
        CHILD_CHECK(net != nullptr);
        CHILD_CHECK(net->Init(0x1c, LogCapture::Logger, nullptr) != 0);
        CHILD_CHECK(Logged("2 RDMA device(s): rxe0, rxe1") && Logged("declining"));
        CHILD_CHECK(Logged("NCCLSCOPE_TRANSPORT=ib"));
        return 0;
      },
      {{"NCCLSCOPE_TRANSPORT", "auto"}, {"NCCLSCOPE_PROM_PORT", "-1"}});
  EXPECT_EQ(Reap(pid, 60), 0);
}

TEST(VerbsPluginGuest, IbDisableMakesAutoTakeTcp) {
  pid_t pid = Spawn(
      [] {
        std::string err;
        auto net = PluginNet::Open(11, TableSource::kDlopen, &err);
        CHILD_CHECK(net != nullptr);
        CHILD_CHECK(net->Init(0x1d, LogCapture::Logger, nullptr) == 0);
        CHILD_CHECK(Logged("transport TCP") && Logged("NCCL_IB_DISABLE"));
        CHILD_CHECK(net->Finalize() == 0);
        return 0;
      },
      {{"NCCLSCOPE_TRANSPORT", "auto"}, {"NCCL_IB_DISABLE", "1"}, {"NCCLSCOPE_PROM_PORT", "-1"},
       {"NCCLSCOPE_SOCKET_IFNAME", "lo"}});
  EXPECT_EQ(Reap(pid, 60), 0);
}

}  // namespace
}  // namespace ncclscope::testing

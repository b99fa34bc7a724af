// End-to-end: per-NIC telemetry from NCCL IB's QP NetPlugin events. ncclscope-sim --ib-events D:Q raises, through
// the profiler, the events NCCL's own IB transport raises when built with NET_PROFILER=1 (one per QP per request,
// parented by the ProxyStep) while the bytes move through our TCP transport. Each rank's final node_exporter
// textfile must then show, under nic="nccl-ib<N>", exactly the bytes the sim's ring plan moved on device N (and
// the same total as our TCP net half counted for itself, under its own nic name); with the NetPlugin bit off,
// or without --ib-events (our TCP's own socket-type events), no nccl-ib figures at all.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "ncclscope-ib-e2e-XXXXXX").string();
    path_ = mkdtemp(t.data());
  }
  ~TempDir() {
    if (getenv("NCCLSCOPE_E2E_KEEP") == nullptr) fs::remove_all(path_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct SimRun {
  int rc = -1;
  std::string err;
  json j;
};

// Runs the sim (--json) with the textfile exporter writing into <dir>/prom and no HTTP endpoint.
SimRun RunSim(const std::string& args, const std::string& mask, const std::string& dir) {
  SimRun r;
  const std::string plugin_dir = fs::path(NCCLSCOPE_PLUGIN_PATH).parent_path().string();
  const std::string out = dir + "/sim.out", err = dir + "/sim.err";
  const std::string cmd = "cd '" + dir + "' && env LD_LIBRARY_PATH='" + plugin_dir +
                          "' NCCLSCOPE_METRICS_LEVEL=full NCCLSCOPE_PROM_PORT=-1 NCCLSCOPE_PROM_TEXTFILE_DIR='" + dir + "/prom' NCCLSCOPE_DUMP_DIR='" +
                          dir + "/dump' NCCLSCOPE_EVENT_MASK=" + mask + " '" SIM_BINARY "' --json " + args + " > '" +
                          out + "' 2> '" + err + "'";
  int st = std::system(cmd.c_str());
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = ReadFile(err);
  r.j = json::parse(ReadFile(out), nullptr, false);
  return r;
}

// One process's final textfile: ncclscope_nic_* and ncclscope_comm_net_* byte counters by nic (comm rows summed).
struct NicBytes {
  std::map<std::string, uint64_t> sent, received, comm_sent, comm_received;
};
std::vector<NicBytes> ReadTextfiles(const std::string& dir) {
  std::vector<NicBytes> out;
  const std::regex line(R"re(^ncclscope_(nic|comm_net)_(sent|received)_bytes_total\{nic="([^"]+)"[^}]*\} (\S+)$)re");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".prom") continue;
    NicBytes b;
    std::istringstream in(ReadFile(e.path()));
    std::string l;
    std::smatch m;
    while (std::getline(in, l)) {
      if (!std::regex_match(l, m, line)) continue;
      const bool nic = m[1] == "nic", sent = m[2] == "sent";
      auto& to = nic ? (sent ? b.sent : b.received) : (sent ? b.comm_sent : b.comm_received);
      to[m[3]] += static_cast<uint64_t>(std::stod(m[4]));
    }
    out.push_back(b);
  }
  return out;
}

bool IsIb(const std::string& nic) { return nic.rfind("nccl-ib", 0) == 0; }

// The bytes rank r's ring AllReduce sends on each IB device, as the sim plans it (tools/sim/ring_plan.cc:
// channel split, n ring chunks, 2n-2 ring steps, step-sized slices) and net_ib splits each request over its QPs
// (ceil(ceil(size/qps)/128)*128 per QP, the last ones what is left), QP i on device i % devs.
std::vector<uint64_t> AllReduceIbSent(int r, int n, size_t count, int channels, size_t step, int devs, int qps) {
  std::vector<uint64_t> dev(devs, 0);
  auto mod = [n](long v) { return static_cast<int>(((v % n) + n) % n); };
  for (int c = 0; c < channels; ++c) {
    const size_t lo = count * c / channels, hi = count * (c + 1) / channels, len = hi - lo;
    for (int t = 0; t < 2 * n - 2; ++t) {
      const int i = mod(r - t);
      const size_t bytes = (len * (i + 1) / n - len * i / n) * sizeof(float);
      for (size_t off = 0; off < bytes; off += step) {
        const size_t slice = std::min(step, bytes - off);
        const size_t chunk = ((slice + qps - 1) / qps + 127) / 128 * 128;
        size_t left = slice;
        for (int q = 0; q < qps; ++q) {
          const size_t b = std::min(chunk, left);
          dev[q % devs] += b;
          left -= b;
        }
      }
    }
  }
  return dev;
}

TEST(SimIbEvents, PerDeviceBytesEqualWhatTheSimMoved) {
  TempDir d;
  constexpr int kRanks = 3, kChannels = 2, kDevs = 2, kQps = 3, kOps = 3;  // --iters 2 --warmup 1
  constexpr size_t kStep = 4000;  // 4000 / 3 QPs: 1408 bytes per QP with NCCL's 128-byte rounding
  // 40004 bytes = 10001 floats: uneven channel parts, ring chunks and slices, and QPs left with 0 bytes.
  SimRun r = RunSim("--ranks 3 --ops allreduce --sizes 40004:40004 --iters 2 --warmup 1 --channels 2 --step-bytes 4000 "
                    "--ib-events 2:3",
                    "0xc6", d.path());
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_TRUE(r.j.is_object());
  ASSERT_EQ(r.j["wrong"], 0);
  ASSERT_EQ(r.j["ib_events"]["devices"], kDevs);
  const size_t count = r.j["results"][0]["count"];
  ASSERT_EQ(count, 10001u);

  // Expected per rank: {sent per device, received per device}; rank r receives what rank r-1 sends.
  std::vector<std::vector<uint64_t>> sent(kRanks);
  for (int k = 0; k < kRanks; ++k) {
    sent[k] = AllReduceIbSent(k, kRanks, count, kChannels, kStep, kDevs, kQps);
    for (auto& b : sent[k]) b *= kOps;
  }
  std::vector<std::pair<std::vector<uint64_t>, std::vector<uint64_t>>> want, got;
  for (int k = 0; k < kRanks; ++k) want.push_back({sent[k], sent[(k + kRanks - 1) % kRanks]});
  ASSERT_NE(want[0], want[1]) << "the case must tell ranks apart";

  const std::vector<NicBytes> files = ReadTextfiles(d.path() + "/prom");
  ASSERT_EQ(files.size(), static_cast<size_t>(kRanks));
  for (const NicBytes& f : files) {
    std::vector<uint64_t> s(kDevs), rcv(kDevs);
    uint64_t ib_sent = 0, own_sent = 0;
    for (const auto& [nic, v] : f.sent) {
      if (!IsIb(nic)) {
        own_sent += v;  // our TCP net half, under its interface name
        continue;
      }
      const int dev = std::stoi(nic.substr(7));
      ASSERT_LT(dev, kDevs) << nic;
      s[dev] = v;
      ib_sent += v;
      EXPECT_EQ(f.comm_sent.at(nic), v) << "one communicator: its row equals the NIC total, " << nic;
    }
    for (const auto& [nic, v] : f.received) {
      if (IsIb(nic)) rcv[std::stoi(nic.substr(7))] = v;
    }
    EXPECT_EQ(ib_sent, own_sent) << "IB QP events and our TCP transport saw the same data";
    got.push_back({s, rcv});
  }
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
}

TEST(SimIbEvents, NoIbFiguresWithoutTheNetPluginBitOrWithoutIbEvents) {
  struct Case {
    const char* args;
    const char* mask;
  };
  // NetPlugin bit off (ProxyOp/ProxyStep on); bit on but only our TCP's own socket-type NetPlugin events.
  for (const Case c : {Case{"--ib-events 2:3", "0x5e"}, Case{"", "0xde"}}) {
    TempDir d;
    SimRun r = RunSim(std::string("--ranks 2 --ops allreduce --sizes 64K:64K --iters 2 --warmup 1 ") + c.args, c.mask,
                      d.path());
    ASSERT_EQ(r.rc, 0) << r.err;
    const std::vector<NicBytes> files = ReadTextfiles(d.path() + "/prom");
    ASSERT_EQ(files.size(), 2u) << c.mask;
    for (const NicBytes& f : files) {
      uint64_t own = 0;
      for (const auto& [nic, v] : f.sent) {
        EXPECT_FALSE(IsIb(nic)) << nic << " with mask " << c.mask << " " << c.args;
        own += v;
      }
      EXPECT_EQ(own, 3u * 64 * 1024) << "our TCP counts itself, once";
    }
  }
}

}  // namespace

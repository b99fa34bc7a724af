// bench_host_nics: what the host's NIC counters add to one scrape of the speaking rank, on a host of 8 RDMA
// NICs with mlx5's counter files (the 21 IB performance counters and 30 hw_counters of a ConnectX-6 port, each
// port over its own RoCE netdev) and 2 front-end interfaces: reading them (ReadRdmaPorts + ReadNetdevs), and
// reading them, building the families and writing the text exposition, per metrics level; counters: the series
// per host and the exposition's bytes. Then the same on this machine's real /sys, for scale.
// This machine has no RDMA device, so the 8 NICs are a tree of files in /dev/shm laid out as sysfs lays them
// out; on a real mlx5 a read of hw_counters asks the firmware, which costs more (docs/measurements.md).
// BM_WalkProcessTcp: what counting the process's other TCP connections adds to each rank's scrape
// (OtherTcpRetransmits walks /proc/self/fd), with Arg(0) descriptors of which Arg(1) are loopback TCP connections
// (half of them each end), as an NCCL process holds device files, pipes and sockets.
// Usage: bench_host_nics [--benchmark_filter=…]
#include <benchmark/benchmark.h>
#include <prometheus/text_serializer.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "exporters/prometheus/host_families.h"
#include "host_nics/netdevs.h"
#include "host_nics/process_tcp.h"
#include "host_nics/rdma_ports.h"

namespace {

namespace fs = std::filesystem;
using ncclscope::HostNics;
namespace prom = ncclscope::prom;

constexpr const char* kPortCounters[] = {
    "VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
    "local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets", "port_rcv_constraint_errors",
    "port_rcv_data", "port_rcv_errors", "port_rcv_packets", "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors", "port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards",
    "port_xmit_packets", "port_xmit_wait", "symbol_error", "unicast_rcv_packets", "unicast_xmit_packets"};
constexpr const char* kHwCounters[] = {
    "duplicate_request", "implied_nak_seq_err", "lifespan", "local_ack_timeout_err", "np_cnp_sent",
    "np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence", "packet_seq_err", "req_cqe_error",
    "req_cqe_flush_error", "req_remote_access_errors", "req_remote_invalid_request", "resp_cqe_error",
    "resp_cqe_flush_error", "resp_local_length_error", "resp_remote_access_errors", "rnr_nak_retry_err",
    "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
    "roce_slow_restart_trans", "rp_cnp_handled", "rp_cnp_ignored", "rx_atomic_requests", "rx_dct_connect",
    "rx_icrc_encapsulated", "rx_read_requests", "rx_write_requests"};
constexpr const char* kNetdevStats[] = {"rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_errors",
                                        "tx_errors", "rx_dropped", "tx_dropped"};

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

void AddNetdev(const fs::path& net, const std::string& name) {
  fs::create_directories(net / name / "device");
  Write(net / name / "operstate", "up");
  Write(net / name / "speed", "200000");
  Write(net / name / "carrier_changes", "2");
  for (const char* s : kNetdevStats) Write(net / name / "statistics" / s, "123456789");
}

// The 8-NIC host, made once for the process and removed at exit.
const std::string& EightNicHost() {
  static const std::string* root = [] {
    char tmpl[] = "/dev/shm/ncclscope-bench-sysfs-XXXXXX";
    auto* path = new std::string(::mkdtemp(tmpl));
    const fs::path sys(*path);
    for (int i = 0; i < 8; ++i) {
      const std::string dev = "mlx5_" + std::to_string(i), ndev = "ens" + std::to_string(i) + "np0";
      const fs::path port = sys / "class/infiniband" / dev / "ports/1";
      Write(port / "state", "4: ACTIVE");
      Write(port / "rate", "200 Gb/sec (4X HDR)");
      Write(port / "link_layer", "Ethernet");
      Write(port / "gid_attrs/ndevs/0", ndev);
      Write(sys / "class/infiniband" / dev / "device/numa_node", std::to_string(i / 4));
      for (const char* c : kPortCounters) Write(port / "counters" / c, "987654321");
      for (const char* c : kHwCounters) Write(port / "hw_counters" / c, "42");
      AddNetdev(sys / "class/net", ndev);
    }
    AddNetdev(sys / "class/net", "eth0");
    AddNetdev(sys / "class/net", "eth1");
    std::atexit([] { fs::remove_all(EightNicHost()); });
    return path;
  }();
  return *root;
}

HostNics Read(const std::string& sysfs) {
  HostNics nics;
  nics.rdma = ncclscope::ReadRdmaPorts(sysfs);
  std::vector<std::string> under;
  for (const auto& p : nics.rdma) under.push_back(p.netdev);
  nics.netdevs = ncclscope::ReadNetdevs(sysfs, {}, under);
  return nics;
}

void BM_ReadEightNics(benchmark::State& state) {
  const std::string& sys = EightNicHost();
  for (auto _ : state) benchmark::DoNotOptimize(Read(sys));
  const HostNics nics = Read(sys);
  state.counters["rdma_ports"] = static_cast<double>(nics.rdma.size());
  state.counters["netdevs"] = static_cast<double>(nics.netdevs.size());
}
BENCHMARK(BM_ReadEightNics)->Unit(benchmark::kMicrosecond);

// Read, families, text: the host's whole share of a scrape. Arg: the level (0 basic, 1 detailed, 2 full).
void ScrapeShare(benchmark::State& state, const std::string& sys) {
  const auto level = static_cast<prom::Level>(state.range(0));
  size_t series = 0, bytes = 0;
  for (auto _ : state) {
    std::vector<prometheus::MetricFamily> families;
    ncclscope::AppendHostNicFamilies(Read(sys), level, &families);
    const std::string text = prometheus::TextSerializer().Serialize(families);
    series = 0;
    for (const auto& f : families) series += f.metric.size();
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["series_per_host"] = static_cast<double>(series);
  state.counters["series_per_rank_of_8"] = static_cast<double>(series) / 8;
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
}
void BM_ScrapeEightNics(benchmark::State& state) { ScrapeShare(state, EightNicHost()); }
BENCHMARK(BM_ScrapeEightNics)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);
void BM_ScrapeThisHost(benchmark::State& state) { ScrapeShare(state, "/sys"); }
BENCHMARK(BM_ScrapeThisHost)->Arg(0)->Unit(benchmark::kMicrosecond);

// A loopback TCP connection's two ends.
void LoopbackConnection(std::vector<int>* fds) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::listen(listener, 1);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  fds->push_back(client);
  fds->push_back(::accept(listener, nullptr, nullptr));
  ::close(listener);
}

void BM_WalkProcessTcp(benchmark::State& state) {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;  // NCCL processes raise it too
  ::setrlimit(RLIMIT_NOFILE, &limit);
  std::vector<int> fds;
  for (int i = 0; i < state.range(1) / 2; ++i) LoopbackConnection(&fds);
  while (static_cast<int64_t>(fds.size()) < state.range(0)) fds.push_back(::open("/dev/null", O_RDONLY));
  size_t nics = 0;
  for (auto _ : state) nics = ncclscope::OtherTcpRetransmits({}).size();
  state.counters["nics"] = static_cast<double>(nics);
  for (int fd : fds) ::close(fd);
}
BENCHMARK(BM_WalkProcessTcp)->Args({64, 8})->Args({1024, 64})->Args({4096, 256})->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

// The host's NIC counters as metric families: what each level exports for the same counters.
#include "exporters/prometheus/host_families.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ncclscope {
namespace {

using prometheus::MetricFamily;

HostNics TwoPortsAndAnInterface() {
  HostNics nics;
  RdmaPort up;
  up.device = "mlx5_0";
  up.port = 1;
  up.netdev = "ens1";
  up.active = true;
  up.rate_bytes_per_s = 25e9;
  up.counters = {{"port_rcv_data", RdmaCounterKind::kBytesReceived, 400},
                 {"port_xmit_data", RdmaCounterKind::kBytesSent, 800},
                 {"port_xmit_packets", RdmaCounterKind::kPacketsSent, 9},
                 {"symbol_error", RdmaCounterKind::kError, 1},
                 {"unicast_xmit_packets", RdmaCounterKind::kOther, 5},
                 {"tx_bytes", RdmaCounterKind::kBytesSent, 7777},  // a second source: never a second series
                 {"out_of_sequence", RdmaCounterKind::kRetransmit, 3},
                 {"packet_seq_err", RdmaCounterKind::kRetransmit, 4}};
  RdmaPort down = up;
  down.device = "mlx5_1";
  down.active = false;
  nics.rdma = {up, down};
  nics.link_downs = {2, 0};  // since the first read: the first port went down twice
  Netdev ens1;
  ens1.name = "ens1";
  ens1.up = true;
  ens1.tx_errors = 2;
  ens1.rx_errors = 3;
  nics.netdevs = {ens1};
  return nics;
}

const MetricFamily* Find(const std::vector<MetricFamily>& families, const std::string& name) {
  for (const MetricFamily& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string Label(const prometheus::ClientMetric& m, const std::string& name) {
  for (const auto& l : m.label) {
    if (l.name == name) return l.value;
  }
  return "<none>";
}

size_t Series(const std::vector<MetricFamily>& families) {
  size_t n = 0;
  for (const MetricFamily& f : families) n += f.metric.size();
  return n;
}

TEST(HostFamiliesTest, BasicSumsEachKindPerPortAndLeavesInterfacesToThePorts) {
  std::vector<MetricFamily> out;
  AppendHostNicFamilies(TwoPortsAndAnInterface(), prom::Level::kBasic, &out);
  // Per port: rate, bytes sent and received, retransmit, error (no congestion counter here); and the link downs
  // of the port that went down, not of the other.
  EXPECT_EQ(Series(out), 11u);
  const MetricFamily* downs = Find(out, "ncclscope_host_rdma_port_link_downs_total");
  ASSERT_NE(downs, nullptr);
  ASSERT_EQ(downs->metric.size(), 1u);
  EXPECT_EQ(Label(downs->metric[0], "device"), "mlx5_0");
  EXPECT_EQ(downs->metric[0].counter.value, 2);
  const MetricFamily* retransmit = Find(out, "ncclscope_host_rdma_port_retransmit_events_total");
  ASSERT_NE(retransmit, nullptr);
  EXPECT_EQ(retransmit->metric[0].counter.value, 7);
  EXPECT_EQ(Label(retransmit->metric[0], "counter"), "<none>");
  const MetricFamily* bytes = Find(out, "ncclscope_host_rdma_port_bytes_total");
  ASSERT_NE(bytes, nullptr);
  ASSERT_EQ(bytes->metric.size(), 4u);
  EXPECT_EQ(Label(bytes->metric[0], "direction"), "received");
  EXPECT_EQ(bytes->metric[1].counter.value, 800);  // counters/ wins over hw tx_bytes
  const MetricFamily* rate = Find(out, "ncclscope_host_rdma_port_rate_bytes_per_second");
  ASSERT_NE(rate, nullptr);
  EXPECT_EQ(rate->metric[0].gauge.value, 25e9);
  EXPECT_EQ(Label(rate->metric[0], "netdev"), "ens1");
  EXPECT_EQ(rate->metric[1].gauge.value, 0);  // not ACTIVE
  EXPECT_EQ(Find(out, "ncclscope_host_netdev_bytes_total"), nullptr);
  EXPECT_EQ(Find(out, "ncclscope_host_rdma_port_packets_total"), nullptr);
}

TEST(HostFamiliesTest, DetailedNamesEachDriverCounterAndAddsTheInterfaces) {
  std::vector<MetricFamily> out;
  AppendHostNicFamilies(TwoPortsAndAnInterface(), prom::Level::kDetailed, &out);
  const MetricFamily* retransmit = Find(out, "ncclscope_host_rdma_port_retransmit_events_total");
  ASSERT_NE(retransmit, nullptr);
  ASSERT_EQ(retransmit->metric.size(), 4u);
  EXPECT_EQ(Label(retransmit->metric[0], "counter"), "out_of_sequence");
  ASSERT_NE(Find(out, "ncclscope_host_rdma_port_packets_total"), nullptr);
  ASSERT_NE(Find(out, "ncclscope_host_rdma_port_info"), nullptr);
  EXPECT_EQ(Find(out, "ncclscope_host_rdma_port_other_events_total"), nullptr);
  const MetricFamily* downs = Find(out, "ncclscope_host_rdma_port_link_downs_total");
  ASSERT_NE(downs, nullptr);
  EXPECT_EQ(downs->metric.size(), 2u);  // every port, from the first scrape on
  const MetricFamily* info = Find(out, "ncclscope_host_netdev_info");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(Label(info->metric[0], "rdma_device"), "mlx5_1");  // the last port over it
  const MetricFamily* errors = Find(out, "ncclscope_host_netdev_errors_total");
  ASSERT_NE(errors, nullptr);
  EXPECT_EQ(errors->metric.size(), 2u);
}

TEST(HostFamiliesTest, FullAddsTheOtherCounters) {
  std::vector<MetricFamily> out;
  AppendHostNicFamilies(TwoPortsAndAnInterface(), prom::Level::kFull, &out);
  ASSERT_NE(Find(out, "ncclscope_host_rdma_port_other_events_total"), nullptr);
}

TEST(HostFamiliesTest, ATcpHostExportsItsInterfacesAtTheBasicLevel) {
  HostNics nics = TwoPortsAndAnInterface();
  nics.rdma.clear();
  std::vector<MetricFamily> out;
  AppendHostNicFamilies(nics, prom::Level::kBasic, &out);
  const MetricFamily* errors = Find(out, "ncclscope_host_netdev_errors_total");
  ASSERT_NE(errors, nullptr);
  ASSERT_EQ(errors->metric.size(), 1u);
  EXPECT_EQ(errors->metric[0].counter.value, 5);
  EXPECT_EQ(Series(out), 7u);  // info, up, carrier changes, bytes x2, errors, dropped
}

}  // namespace
}  // namespace ncclscope

// The transports' handshake checks (net/tcp/handshake.h, net/verbs/handshake.h), which tcp_transport.cc and
// verbs/connect.cc run on the bytes a peer sends and tests/fuzz fuzzes: what they accept and refuse.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "net/tcp/handshake.h"
#include "net/verbs/handshake.h"

namespace ncclscope::net {
namespace {

tcp::TcpHandlePayload TcpPayload() {
  tcp::TcpHandlePayload p{};
  p.addr.in4.sin_family = AF_INET;
  p.addr.in4.sin_port = htons(5000);
  inet_pton(AF_INET, "192.0.2.2", &p.addr.in4.sin_addr);
  p.nsocks = 4;
  p.wire_version = tcp::kWireVersion;
  p.listener_id = 77;
  p.identity.global_rank_plus1 = 4;
  p.identity.pid = 4242;
  strcpy(p.identity.host, "node-a");
  return p;
}

TEST(TcpHandshake, AHandleDecodesAsItWasEncoded) {
  char handle[kHandleBytes];
  tcp::EncodeTcpHandle(handle, TcpPayload());
  Result<tcp::TcpHandlePayload> h = tcp::DecodeTcpHandle(handle);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->nsocks, 4);
  EXPECT_EQ(h->listener_id, 77u);
  EXPECT_EQ(tcp::ListenerOf(*h).Describe(), "192.0.2.2:5000 (global rank 3, pid 4242 on node-a)");
}

TEST(TcpHandshake, AHandleWithABadFamilyOrSocketCountIsRefused) {
  for (int nsocks : {0, tcp::kMaxSockets + 1}) {
    tcp::TcpHandlePayload p = TcpPayload();
    p.nsocks = static_cast<uint16_t>(nsocks);
    char handle[kHandleBytes];
    tcp::EncodeTcpHandle(handle, p);
    Result<tcp::TcpHandlePayload> h = tcp::DecodeTcpHandle(handle);
    ASSERT_FALSE(h.ok());
    EXPECT_NE(h.status().message().find("peer 192.0.2.2:5000"), std::string::npos) << h.status().message();
  }
  tcp::TcpHandlePayload p = TcpPayload();
  p.addr.sa.sa_family = AF_UNIX;
  char handle[kHandleBytes];
  tcp::EncodeTcpHandle(handle, p);
  Result<tcp::TcpHandlePayload> h = tcp::DecodeTcpHandle(handle);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("an unknown peer"), std::string::npos) << h.status().message();
}

TEST(TcpHandshake, AHelloIsJudgedAsSoonAsItCanBe) {
  const tcp::Hello h = tcp::MakeHello(4, 77, 3, 9, WireIdentity{});
  for (size_t got = 0; got < sizeof(h); ++got) {
    tcp::Hello part{};
    memcpy(&part, &h, got);
    EXPECT_EQ(tcp::JudgeHello(part, got, 77, 4), tcp::HelloVerdict::kIncomplete) << got;
  }
  EXPECT_EQ(tcp::JudgeHello(h, sizeof(h), 77, 4), tcp::HelloVerdict::kComplete);
  EXPECT_EQ(tcp::JudgeHello(h, sizeof(h), 78, 4), tcp::HelloVerdict::kMalformed);  // another listener
  EXPECT_EQ(tcp::JudgeHello(h, sizeof(h), 77, 3), tcp::HelloVerdict::kMalformed);  // index 3 of 3 sockets
  tcp::Hello old = h;
  old.version = 1;  // an older build: refused once magic and version are in, not after 88 bytes
  EXPECT_EQ(tcp::JudgeHello(old, offsetof(tcp::Hello, nsocks), 77, 4), tcp::HelloVerdict::kMalformed);
}

verbs::ConnInfo Info() {
  verbs::ConnInfo in{};
  in.magic = verbs::kConnMagic;
  in.version = verbs::kConnVersion;
  in.nqps = 2;
  in.listener_id = 77;
  in.mtu = IBV_MTU_4096;
  in.fuse_count = 1;
  return in;
}

TEST(VerbsHandshake, AConnInfoIsCheckedBeforeItsQpsAreUsed) {
  EXPECT_TRUE(verbs::CheckConnInfo(Info(), 77, "peer p").ok());
  EXPECT_FALSE(verbs::CheckConnInfo(Info(), 78, "peer p").ok());
  verbs::ConnInfo in = Info();
  in.nqps = verbs::kMaxQps + 1;
  EXPECT_FALSE(verbs::CheckConnInfo(in, 77, "peer p").ok());
  // An MTU outside ibv_mtu was cast and handed to ibv_modify_qp as the peer sent it.
  for (uint32_t mtu : {0u, 6u, 0xffffffffu}) {
    in = Info();
    in.mtu = mtu;
    Status s = verbs::CheckConnInfo(in, 77, "peer p");
    ASSERT_FALSE(s.ok()) << mtu;
    EXPECT_NE(s.message().find("MTU " + std::to_string(mtu)), std::string::npos) << s.message();
  }
}

TEST(VerbsHandshake, AFusedMemberMustFitItsCount) {
  verbs::ConnInfo in = Info();
  EXPECT_TRUE(verbs::CheckFuseMember(in, "peer p").ok());
  for (auto [index, count] : {std::pair{0, 0}, {2, 2}, {0, kMaxDevsPerVNic + 1}}) {
    in.fuse_index = static_cast<uint16_t>(index);
    in.fuse_count = static_cast<uint16_t>(count);
    EXPECT_FALSE(verbs::CheckFuseMember(in, "peer p").ok()) << index << " of " << count;
  }
}

TEST(VerbsHandshake, AConnInfoIsJudgedOnceWholeOrFromAnOlderBuild) {
  verbs::ConnInfo in = Info();
  EXPECT_FALSE(verbs::ConnInfoReadyToJudge(in, sizeof(in) - 1));
  EXPECT_TRUE(verbs::ConnInfoReadyToJudge(in, sizeof(in)));
  in.version = verbs::kConnVersion - 1;
  EXPECT_FALSE(verbs::ConnInfoReadyToJudge(in, offsetof(verbs::ConnInfo, nqps) - 1));
  EXPECT_TRUE(verbs::ConnInfoReadyToJudge(in, offsetof(verbs::ConnInfo, nqps)));
}

TEST(VerbsHandshake, AHandleListsTheListenerHostsAddresses) {
  verbs::VerbsHandlePayload p{};
  p.addr.in4.sin_family = AF_INET;
  p.addr.in4.sin_addr.s_addr = htonl(0xc0000202);
  p.alt_addrs[1] = htonl(0xc0000302);
  char handle[kHandleBytes];
  verbs::EncodeVerbsHandle(handle, p);
  Result<verbs::VerbsHandlePayload> h = verbs::DecodeVerbsHandle(handle);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(verbs::ListenerHostAddresses(*h), (std::vector<uint32_t>{htonl(0xc0000202), htonl(0xc0000302)}));
  p.addr.sa.sa_family = AF_UNIX;
  verbs::EncodeVerbsHandle(handle, p);
  EXPECT_FALSE(verbs::DecodeVerbsHandle(handle).ok());
}

}  // namespace
}  // namespace ncclscope::net

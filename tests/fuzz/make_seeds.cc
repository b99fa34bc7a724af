// Writes the binary seeds of fuzz_tcp_handshake and fuzz_verbs_handshake into DIR/<target>/, from the
// transports' own encoders (EncodeTcpHandle, MakeHello, EncodeVerbsHandle) where they have one; the verbs
// ConnInfo is filled field by field as VerbsComm::FillInfo does (that needs an open device). Fixed values,
// so that a rerun writes the same bytes: `fuzz_make_seeds tests/fuzz/corpus`.
#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "net/tcp/handshake.h"
#include "net/verbs/handshake.h"

namespace {

using ncclscope::net::kHandleBytes;
using ncclscope::net::WireIdentity;
namespace tcp = ncclscope::net::tcp;
namespace verbs = ncclscope::net::verbs;

constexpr uint32_t kListenerId = 0x1234abcd;

WireIdentity FixedIdentity() {
  WireIdentity w{};
  w.global_rank_plus1 = 4;  // global rank 3
  w.pid = 4242;
  strcpy(w.host, "node-a.example");
  return w;
}

ncclscope::sock::SockAddr Ipv4(const char* addr, int port) {
  ncclscope::sock::SockAddr a{};
  a.in4.sin_family = AF_INET;
  a.in4.sin_port = htons(port);
  inet_pton(AF_INET, addr, &a.in4.sin_addr);
  return a;
}

ncclscope::sock::SockAddr Ipv6(const char* addr, int port) {
  ncclscope::sock::SockAddr a{};
  a.in6.sin6_family = AF_INET6;
  a.in6.sin6_port = htons(port);
  inet_pton(AF_INET6, addr, &a.in6.sin6_addr);
  return a;
}

using Bytes = std::vector<uint8_t>;

template <class T>
void Append(Bytes* out, const T& record, size_t bytes = sizeof(T)) {
  const auto* p = reinterpret_cast<const uint8_t*>(&record);
  out->insert(out->end(), p, p + bytes);
}

bool Write(const std::string& dir, const std::string& name, const Bytes& bytes) {
  const std::string path = dir + "/" + name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) fprintf(stderr, "fuzz_make_seeds: cannot write %s\n", path.c_str());
  return static_cast<bool>(f);
}

Bytes TcpHandle(const ncclscope::sock::SockAddr& addr, int nsocks) {
  tcp::TcpHandlePayload p{};
  p.addr = addr;
  p.nsocks = static_cast<uint16_t>(nsocks);
  p.wire_version = tcp::kWireVersion;
  p.listener_id = kListenerId;
  p.identity = FixedIdentity();
  Bytes handle(kHandleBytes);
  tcp::EncodeTcpHandle(handle.data(), p);
  return handle;
}

bool WriteTcpSeeds(const std::string& dir) {
  const WireIdentity me = FixedIdentity();
  Bytes v4 = TcpHandle(Ipv4("192.0.2.2", 5000), 2);
  Bytes v4_only = v4;
  Append(&v4, tcp::MakeHello(2, kListenerId, 1, 77, me));
  Bytes v6 = TcpHandle(Ipv6("2001:db8::2", 5000), 16);
  Append(&v6, tcp::MakeHello(16, kListenerId, 15, 78, me));
  // A build before wire version 2: its hello stops after conn_id.
  Bytes old = TcpHandle(Ipv4("192.0.2.2", 5000), 2);
  tcp::Hello v1 = tcp::MakeHello(2, kListenerId, 0, 79, me);
  v1.version = 1;
  Append(&old, v1, offsetof(tcp::Hello, identity));
  return Write(dir, "ipv4_handle_and_hello", v4) && Write(dir, "ipv4_handle_only", v4_only) &&
         Write(dir, "ipv6_handle_and_hello_16_sockets", v6) && Write(dir, "old_build_hello", old);
}

Bytes VerbsHandle(int alt_addrs) {
  verbs::VerbsHandlePayload p{};
  p.addr = Ipv4("192.0.2.2", 5001);
  p.listener_id = kListenerId;
  const uint8_t roce_v4_gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 2};
  memcpy(p.gid, roce_v4_gid, sizeof(p.gid));
  for (int i = 0; i < alt_addrs; ++i) p.alt_addrs[i] = htonl(0xc0000302 + (static_cast<uint32_t>(i) << 8));
  Bytes handle(kHandleBytes);
  verbs::EncodeVerbsHandle(handle.data(), p);
  return handle;
}

// As VerbsComm::FillInfo writes it, for `nqps` QPs on a RoCE port, member `index` of `count`.
verbs::ConnInfo Info(int nqps, int index, int count) {
  verbs::ConnInfo in{};
  in.magic = verbs::kConnMagic;
  in.version = verbs::kConnVersion;
  in.nqps = static_cast<uint16_t>(nqps);
  in.listener_id = kListenerId;
  in.mtu = IBV_MTU_1024;
  for (int q = 0; q < nqps; ++q) in.qpn[q] = 0x11 + static_cast<uint32_t>(q);
  const uint8_t gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1};
  memcpy(in.gid, gid, sizeof(in.gid));
  in.link_layer = 2;  // LinkLayer::kEthernet
  in.rkey = 0x1234;
  in.addr = 0x7f0000001000;
  in.fuse_id = count > 1 ? 0xf00d : 0;
  in.fuse_index = static_cast<uint16_t>(index);
  in.fuse_count = static_cast<uint16_t>(count);
  in.identity = FixedIdentity();
  return in;
}

bool WriteVerbsSeeds(const std::string& dir) {
  Bytes one = VerbsHandle(0);
  Append(&one, Info(1, 0, 1));
  Bytes fused = VerbsHandle(3);
  Append(&fused, Info(8, 2, 4));
  // A build before ConnInfo version 5: shorter, judged on magic and version alone.
  Bytes old = VerbsHandle(1);
  verbs::ConnInfo v4 = Info(2, 0, 1);
  v4.version = 4;
  Append(&old, v4, offsetof(verbs::ConnInfo, identity));
  return Write(dir, "handle_and_conninfo", one) && Write(dir, "handle_alt_addrs_fused_member", fused) &&
         Write(dir, "old_build_conninfo", old) && Write(dir, "handle_only", VerbsHandle(2));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fuzz_make_seeds CORPUS_DIR (writes CORPUS_DIR/fuzz_{tcp,verbs}_handshake/*)\n");
    return 2;
  }
  const std::string root = argv[1];
  const bool ok = WriteTcpSeeds(root + "/fuzz_tcp_handshake") && WriteVerbsSeeds(root + "/fuzz_verbs_handshake");
  return ok ? 0 : 1;
}

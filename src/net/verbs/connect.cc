#include "net/verbs/connect.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/random.h"
#include "net/handle.h"
#include "net/verbs/fused_comm.h"
#include "net/verbs/gid_select.h"
#include "net/verbs/handshake.h"
#include "net/verbs/recv_comm.h"
#include "net/verbs/send_comm.h"
#include "net/verbs/subnet_route.h"
#include "socket/interfaces.h"
#include "socket/socket_io.h"
#include "socket/socket_util.h"

namespace ncclscope::net::verbs {
namespace {

using sock::SockAddr;
using sock::SockAddrToString;

// False when a partial send/receive found the peer gone (EOF counts as ECONNRESET) or the socket failed
// (errno in *err); true while the handshake can go on.
bool Alive(sock::Io io, int* err) {
  if (io == sock::Io::kEof) *err = ECONNRESET;
  return io != sock::Io::kEof && io != sock::Io::kError;
}

// The IPv4 address to listen on: the one inside a RoCE GID, else the first non-loopback interface's.
Result<SockAddr> ListenAddress(const VerbsNetDevice& dev) {
  SockAddr a{};
  if (dev.link_layer == LinkLayer::kEthernet && GidFamily(dev.gid.raw) == AF_INET) {
    a.in4.sin_family = AF_INET;
    memcpy(&a.in4.sin_addr, dev.gid.raw.data() + 12, 4);
    return a;
  }
  for (const sock::Interface& i : sock::DiscoverInterfaces("")) {
    if (!i.loopback) return i.addr;
  }
  return SystemError("no IPv4 address for the handshake of " + dev.device_name +
                     " (not RoCE v4 and no non-loopback interface)");
}

// The port a connection should use instead of NCCL's `dev`, given the GID of the peer's port and those of
// its host's other ports (the connector learns them from the handle). With subnet-aware routing on: `dev`
// if it shares a subnet with the peer's port, else a port that does (logged), else `dev` if it shares one
// with another port of the peer's host (the acceptor will move there), else any port that does. Off: `dev`,
// with a warning (once per process) when it shares no subnet with the peer's RoCE port.
int PortFor(const std::vector<VerbsNetDevice>& ports, int dev, const RawGid& peer_gid,
            const std::vector<RawGid>& peer_host_gids, const VerbsConfig& cfg, const std::string& peer) {
  const int len = cfg.subnet_prefix_len;
  const bool comparable = ports[dev].link_layer == LinkLayer::kEthernet && GidIpv4(peer_gid) != 0;
  if (!comparable || PortReaches(ports[dev], {peer_gid}, len)) return dev;
  char peer_addr[INET_ADDRSTRLEN] = "";
  const uint32_t a = GidIpv4(peer_gid);
  inet_ntop(AF_INET, &a, peer_addr, sizeof peer_addr);
  if (!cfg.subnet_aware) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      NCCLSCOPE_WARN(subsys::kNet, "verbs: port %s shares no /%d subnet with %s's port (%s): the "
                     "connection may fail; NCCL_IB_SUBNET_AWARE_ROUTING=1 picks a port that does (warned once)",
                     PortLabel(ports[dev]).c_str(), len, peer.c_str(), peer_addr);
    }
    return dev;
  }
  int chosen = ChoosePortBySubnet(ports, dev, {peer_gid}, len);
  if (chosen == dev && !PortReaches(ports[dev], peer_host_gids, len)) {
    chosen = ChoosePortBySubnet(ports, dev, peer_host_gids, len);
  }
  if (chosen != dev) {
    NCCLSCOPE_INFO(subsys::kNet, "verbs: subnet-aware routing: %s's port (%s) is not on the subnet of %s; "
                   "using %s", peer.c_str(), peer_addr, PortLabel(ports[dev]).c_str(),
                   PortLabel(ports[chosen]).c_str());
  } else if (!PortReaches(ports[dev], peer_host_gids, len)) {
    NCCLSCOPE_WARN(subsys::kNet, "verbs: subnet-aware routing: no port shares a /%d subnet with %s's "
                   "host (%s); keeping %s", len, peer.c_str(), peer_addr, PortLabel(ports[dev]).c_str());
  }  // else the peer's host has a port on our subnet: its acceptor moves there
  return chosen;
}

class VerbsListenComm final : public ListenComm {
 public:
  VerbsListenComm(int fd, uint32_t id, std::string addr, std::vector<VerbsNetDevice> ports, std::vector<int> members,
                  NetContext* ctx)
      : fd_(fd), id_(id), addr_(std::move(addr)), ports_(std::move(ports)), members_(std::move(members)), ctx_(ctx) {}
  ~VerbsListenComm() override {
    close(fd_);
    for (Pending& p : pending_) {
      if (p.fd >= 0) close(p.fd);
    }
  }
  Status Close() override {
    delete this;
    return Status::Ok();
  }

  Status Accept(RecvComm** recv_comm, ncclscope_net_device_handle_t** /*dev_comm*/) override {
    *recv_comm = nullptr;
    for (;;) {
      SockAddr peer{};
      int fd = -1, err = 0;
      const sock::AcceptResult r = sock::Accept(fd_, &fd, &peer, &err);
      if (r == sock::AcceptResult::kEmpty) break;
      if (r == sock::AcceptResult::kOutOfFds) {  // the connection stays queued for a later accept
        return SystemError("accept on " + addr_ + ": out of file descriptors (" + strerror(err) +
                           "); raise `ulimit -n`");
      }
      if (r == sock::AcceptResult::kFailed) return SystemError("accept on " + addr_ + " failed: " + strerror(err));
      pending_.emplace_back();
      pending_.back().fd = fd;
      pending_.back().peer = SockAddrToString(peer);
    }
    for (size_t i = 0; i < pending_.size(); ++i) {
      Pending& p = pending_[i];
      int err = 0;
      Status s = Step(p, &err);
      if (s.ok() && err == 0 && !p.done) continue;
      std::unique_ptr<VerbsRecvComm> comm = std::move(p.comm);
      int fd = p.fd;
      const ConnInfo in = p.in;
      pending_.erase(pending_.begin() + static_cast<long>(i));
      if (!s.ok() || err != 0) {
        close(fd);
        if (!s.ok()) return s;
        --i;  // the connector went away mid-handshake: drop that socket only
        continue;
      }
      comm->AdoptSocket(fd);
      if (in.fuse_count <= 1) {
        *recv_comm = comm.release();
        return Status::Ok();
      }
      if ((*recv_comm = Gather(in, std::move(comm))) != nullptr) return Status::Ok();
      --i;
    }
    return Status::Ok();
  }

 private:
  struct Pending {
    int fd = -1;
    std::string peer;
    int stage = 0;  // 0 read their info, 1 send ours, 2 read the ready byte
    ConnInfo in{}, out{};
    size_t moved = 0;
    char ready = 0;
    bool done = false;
    std::unique_ptr<VerbsRecvComm> comm;
  };

  Status Step(Pending& p, int* err) {
    if (p.stage == 0) {
      if (!Alive(sock::RecvSome(p.fd, &p.in, sizeof(p.in), &p.moved, err), err)) return Status::Ok();
      if (!ConnInfoReadyToJudge(p.in, p.moved)) return Status::Ok();
      NCCLSCOPE_RETURN_IF_ERROR(CheckConnInfo(p.in, id_, "peer " + p.peer));
      NCCLSCOPE_RETURN_IF_ERROR(CheckFuseMember(p.in, "peer " + p.peer));
      VerbsConfig cfg = VerbsConfig::Load();
      cfg.qps_per_connection = p.in.nqps;  // the connector's choices rule the connection
      cfg.split_data = p.in.split_data != 0;
      RawGid peer_gid{};
      if (p.in.link_layer == static_cast<uint16_t>(LinkLayer::kEthernet)) memcpy(peer_gid.data(), p.in.gid, 16);
      // A fused connection pairs the connector's member k with ours k (mod our count); otherwise NCCL's
      // port, or the one subnet-aware routing picks.
      const int port = p.in.fuse_count > 1 ? members_[p.in.fuse_index % members_.size()]
                                           : PortFor(ports_, members_[0], peer_gid, {}, cfg, "peer " + p.peer);
      Result<VerbsDeviceCtx*> dev = OpenVerbsDevice(ports_[port]);
      if (!dev.ok()) return dev.status();
      p.comm = std::make_unique<VerbsRecvComm>(*dev, cfg, ctx_, p.peer, NetDir::kRecv);
      NCCLSCOPE_RETURN_IF_ERROR(p.comm->Create(VerbsRecvComm::kCtrlBytes));
      NCCLSCOPE_RETURN_IF_ERROR(p.comm->ConnectQps(p.in));
      p.comm->FillInfo(&p.out, 0);  // the size table is at the start of the control block
      p.out.listener_id = id_;
      p.stage = 1;
      p.moved = 0;
    }
    if (p.stage == 1) {
      const sock::Io io = sock::SendSome(p.fd, &p.out, sizeof(p.out), &p.moved, err);
      if (!Alive(io, err) || p.moved < sizeof(p.out)) return Status::Ok();
      p.stage = 2;
      p.moved = 0;
    }
    if (!Alive(sock::RecvSome(p.fd, &p.ready, 1, &p.moved, err), err) || p.moved < 1) return Status::Ok();
    p.done = true;
    return Status::Ok();
  }

  // Keeps one member of a fused connection until all have arrived; then the fused comm.
  RecvComm* Gather(const ConnInfo& in, std::unique_ptr<VerbsRecvComm> comm) {
    auto it = std::find_if(fusing_.begin(), fusing_.end(), [&](const Fusing& f) { return f.id == in.fuse_id; });
    if (it == fusing_.end()) {
      fusing_.emplace_back();
      it = fusing_.end() - 1;
      it->id = in.fuse_id;
      it->members.resize(in.fuse_count);
    }
    if (it->members.size() != in.fuse_count || it->members[in.fuse_index] != nullptr) {
      return nullptr;  // a member that contradicts the others (a confused or hostile peer): dropped with its comm
    }
    it->members[in.fuse_index] = std::move(comm);
    if (!std::all_of(it->members.begin(), it->members.end(), [](const auto& m) { return m != nullptr; })) {
      return nullptr;
    }
    std::vector<VerbsRecvComm*> members;
    for (auto& m : it->members) members.push_back(m.release());
    fusing_.erase(it);
    return new FusedRecvComm(std::move(members));
  }

  struct Fusing {
    uint32_t id = 0;
    std::vector<std::unique_ptr<VerbsRecvComm>> members;
  };

  int fd_;
  uint32_t id_;
  std::string addr_;
  std::vector<VerbsNetDevice> ports_;  // the transport's, for subnet-aware routing
  std::vector<int> members_;           // the ports of the device NCCL listens on (several: fused)
  NetContext* ctx_;
  std::vector<Pending> pending_;
  std::vector<Fusing> fusing_;
};

class Connector final : public PendingConnect {
 public:
  Connector(const VerbsHandlePayload& h, VerbsDeviceCtx* dev, const VerbsConfig& cfg, NetContext* ctx,
            uint32_t fuse_id = 0, int fuse_index = 0, int fuse_count = 1)
      : h_(h), peer_(SockAddrToString(h.addr)), dev_(dev), cfg_(cfg), ctx_(ctx), fuse_id_(fuse_id),
        fuse_index_(fuse_index), fuse_count_(fuse_count) {}
  ~Connector() override {
    if (fd_ >= 0) close(fd_);
  }
  std::string peer() const override { return "peer " + peer_; }

  Status Progress(SendComm** comm) override {
    int err = 0;
    if (stage_ == 0) {
      Result<int> fd = sock::NewSocket(h_.addr.sa.sa_family, "connect to peer " + peer_);
      if (!fd.ok()) return fd.status();
      fd_ = *fd;
      if (connect(fd_, &h_.addr.sa, sock::SockAddrLen(h_.addr)) != 0 && errno != EINPROGRESS) {
        return ConnectError(errno);
      }
      stage_ = 1;
    }
    if (stage_ == 1) {
      err = sock::ConnectResult(fd_);
      if (err < 0) return Status::Ok();
      if (err != 0) return ConnectError(err);
      comm_ = std::make_unique<VerbsSendComm>(dev_, cfg_, ctx_, peer_, NetDir::kSend);
      NCCLSCOPE_RETURN_IF_ERROR(comm_->Create(VerbsSendComm::kCtrlBytes));
      comm_->FillInfo(&out_, 0);  // the FIFO is at the start of the control block
      out_.listener_id = h_.listener_id;
      out_.fuse_id = fuse_id_;
      out_.fuse_index = static_cast<uint16_t>(fuse_index_);
      out_.fuse_count = static_cast<uint16_t>(fuse_count_);
      stage_ = 2;
    }
    if (stage_ == 2) {
      if (!Alive(sock::SendSome(fd_, &out_, sizeof(out_), &moved_, &err), &err)) return ConnectError(err);
      if (moved_ < sizeof(out_)) return Status::Ok();
      stage_ = 3;
      moved_ = 0;
    }
    if (stage_ == 3) {
      if (!Alive(sock::RecvSome(fd_, &in_, sizeof(in_), &moved_, &err), &err)) return ConnectError(err);
      if (moved_ < sizeof(in_)) return Status::Ok();
      NCCLSCOPE_RETURN_IF_ERROR(CheckConnInfo(in_, h_.listener_id, "peer " + peer_));
      NCCLSCOPE_RETURN_IF_ERROR(comm_->ConnectQps(in_));
      stage_ = 4;
      moved_ = 0;
    }
    char ready = 1;
    if (!Alive(sock::SendSome(fd_, &ready, 1, &moved_, &err), &err)) return ConnectError(err);
    if (moved_ < 1) return Status::Ok();
    comm_->AdoptSocket(fd_);
    fd_ = -1;
    *comm = comm_.release();
    return Status::Ok();
  }

 private:
  Status ConnectError(int err) {
    NetCountersFor(dev_->info.props.name, 0, true)->AddError(NetErrorKind::kConnect);
    Status s = RemoteError("verbs connect to peer " + peer_ + " failed: " + strerror(err) +
                           (err == ECONNREFUSED ? " (peer gone or its listen comm closed)" : ""));
    // The handle has no room for the listener's identity: the address only (the ConnInfo names it later).
    RecordConnectionFailure(dev_->info.props.name, ctx_, NetErrorKind::kConnect, s, PeerInfo{peer_});
    return s;
  }

  VerbsHandlePayload h_;
  std::string peer_;
  VerbsDeviceCtx* dev_;
  VerbsConfig cfg_;
  NetContext* ctx_;
  uint32_t fuse_id_;
  int fuse_index_;
  int fuse_count_;
  int fd_ = -1;
  int stage_ = 0;
  size_t moved_ = 0;
  ConnInfo out_{}, in_{};
  std::unique_ptr<VerbsSendComm> comm_;
};

// A fused device's connect: one Connector per member port, each its own socket and handshake with the
// same listener, stepped together; the fused comm once all are connected.
class FusedConnector final : public PendingConnect {
 public:
  FusedConnector(std::vector<std::unique_ptr<Connector>> parts, std::string peer)
      : parts_(std::move(parts)), done_(parts_.size(), nullptr), peer_(std::move(peer)) {}
  ~FusedConnector() override {
    for (SendComm* c : done_) {
      if (c != nullptr) c->Close();
    }
  }
  std::string peer() const override { return peer_; }

  Status Progress(SendComm** comm) override {
    for (size_t k = 0; k < parts_.size(); ++k) {
      if (done_[k] == nullptr) NCCLSCOPE_RETURN_IF_ERROR(parts_[k]->Progress(&done_[k]));
    }
    if (std::find(done_.begin(), done_.end(), nullptr) != done_.end()) return Status::Ok();
    std::vector<VerbsSendComm*> members;
    for (SendComm*& c : done_) members.push_back(static_cast<VerbsSendComm*>(std::exchange(c, nullptr)));
    *comm = new FusedSendComm(std::move(members));
    return Status::Ok();
  }

 private:
  std::vector<std::unique_ptr<Connector>> parts_;
  std::vector<SendComm*> done_;
  std::string peer_;
};

}  // namespace

Status VerbsListen(const std::vector<VerbsNetDevice>& ports, const std::vector<int>& members, NetContext* ctx,
                   void* handle, ListenComm** listen_comm) {
  const VerbsNetDevice& info = ports[members[0]];
  Result<SockAddr> addr = ListenAddress(info);
  if (!addr.ok()) return addr.status();
  VerbsHandlePayload payload{};
  if (info.link_layer == LinkLayer::kEthernet) memcpy(payload.gid, info.gid.raw.data(), 16);
  // Subnet-aware routing: a connector may reach only another of this host's ports, so the socket listens on
  // all of them (the handshake still checks the listener id) and the handle lists their addresses.
  SockAddr bind_addr = *addr;
  int nalt = 0;
  if (VerbsConfig::Load().subnet_aware && addr->sa.sa_family == AF_INET) {
    bind_addr.in4.sin_addr.s_addr = htonl(INADDR_ANY);
    for (const VerbsNetDevice& p : ports) {
      const uint32_t a = GidIpv4(p.gid.raw);
      const bool seen = a == addr->in4.sin_addr.s_addr ||
                        std::find(payload.alt_addrs, payload.alt_addrs + nalt, a) != payload.alt_addrs + nalt;
      if (p.link_layer == LinkLayer::kEthernet && a != 0 && !seen && nalt < kHandleAltAddrs) payload.alt_addrs[nalt++] = a;
    }
  }
  Result<int> fd = sock::NewSocket(addr->sa.sa_family, "listen on " + info.device_name);
  if (!fd.ok()) return fd.status();
  socklen_t len = sock::SockAddrLen(bind_addr);
  if (bind(*fd, &bind_addr.sa, len) != 0 || listen(*fd, 16384) != 0 || getsockname(*fd, &bind_addr.sa, &len) != 0) {
    int err = errno;
    close(*fd);
    return SystemError("verbs listen on " + info.device_name + " (" + SockAddrToString(bind_addr) + ") failed: " +
                       strerror(err));
  }
  Result<VerbsDeviceCtx*> opened = OpenVerbsDevice(info);
  if (!opened.ok()) {
    close(*fd);
    return opened.status();
  }
  SockAddr a = *addr;
  a.in4.sin_port = bind_addr.in4.sin_port;  // same offset in sockaddr_in6
  payload.addr = a;
  payload.listener_id = static_cast<uint32_t>(RandomU64());
  EncodeVerbsHandle(handle, payload);
  *listen_comm = new VerbsListenComm(*fd, payload.listener_id, SockAddrToString(a), ports, members, ctx);
  return Status::Ok();
}

Status VerbsConnect(const std::vector<VerbsNetDevice>& ports, const std::vector<int>& members, NetContext* ctx,
                    void* handle, SendComm** send_comm) {
  *send_comm = nullptr;
  Result<VerbsHandlePayload> decoded = DecodeVerbsHandle(handle);
  if (!decoded.ok()) return decoded.status();
  VerbsHandlePayload payload = *decoded;
  const std::string from = HandlePeer(payload);
  // Decided at the first call only: later ones step the pending connect.
  return StepConnect(
      handle,
      [&]() -> Result<std::unique_ptr<PendingConnect>> {
        const VerbsConfig cfg = VerbsConfig::Load();
        RawGid peer_gid;
        memcpy(peer_gid.data(), payload.gid, 16);
        const std::vector<uint32_t> addrs = ListenerHostAddresses(payload);
        std::vector<RawGid> host_gids;
        for (uint32_t a : addrs) host_gids.push_back(MappedGid(a));
        if (members.size() > 1) {  // fused: member k to the listener's member k, no subnet override
          const uint32_t fuse_id = static_cast<uint32_t>(RandomU64());
          std::vector<std::unique_ptr<Connector>> parts;
          for (size_t k = 0; k < members.size(); ++k) {
            Result<VerbsDeviceCtx*> opened = OpenVerbsDevice(ports[members[k]]);
            if (!opened.ok()) return opened.status();
            parts.push_back(std::make_unique<Connector>(payload, *opened, cfg, ctx, fuse_id, static_cast<int>(k),
                                                        static_cast<int>(members.size())));
          }
          return std::unique_ptr<PendingConnect>(new FusedConnector(std::move(parts), from));
        }
        const int port = PortFor(ports, members[0], peer_gid, host_gids, cfg, from);
        if (cfg.subnet_aware && payload.addr.sa.sa_family == AF_INET) {
          payload.addr.in4.sin_addr.s_addr = ChooseListenerAddress(addrs, ports, cfg.subnet_prefix_len);
        }
        Result<VerbsDeviceCtx*> opened = OpenVerbsDevice(ports[port]);
        if (!opened.ok()) return opened.status();
        return std::unique_ptr<PendingConnect>(new Connector(payload, *opened, cfg, ctx));
      },
      send_comm);
}

}  // namespace ncclscope::net::verbs

#include "net/tcp/tcp_transport.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <memory>

#include "common/log.h"
#include "common/random.h"
#include "core/net_stats.h"
#include "net/comm_accounting.h"
#include "net/handle.h"
#include "net/peer_identity.h"
#include "net/tcp/handshake.h"
#include "net/tcp/recv_comm.h"
#include "net/tcp/send_comm.h"
#include "net/vdevice.h"
#include "socket/socket_io.h"
#include "socket/socket_util.h"

namespace ncclscope::net::tcp {
namespace {

void CloseAll(std::vector<int>& fds) {
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
  fds.clear();
}

// ---- accepting side ----

class TcpListenComm final : public ListenComm {
 public:
  TcpListenComm(int fd, int nsocks, uint32_t id, std::string addr, const TcpConfig& cfg, NetContext* ctx,
                std::string nic)
      : fd_(fd), nsocks_(nsocks), id_(id), addr_(std::move(addr)), cfg_(cfg), ctx_(ctx), nic_(std::move(nic)) {}
  ~TcpListenComm() override {
    close(fd_);
    for (Pending& p : pending_) close(p.fd);
  }

  Status Accept(RecvComm** recv_comm, ncclscope_net_device_handle_t** /*dev_comm*/) override {
    *recv_comm = nullptr;
    for (;;) {
      sock::SockAddr peer{};
      int fd = -1, err = 0;
      const sock::AcceptResult r = sock::Accept(fd_, &fd, &peer, &err);
      if (r == sock::AcceptResult::kEmpty) break;
      if (r == sock::AcceptResult::kOutOfFds) {
        NetCountersFor(nic_, 0, true)->AddError(NetErrorKind::kResource);
        return SystemError("accept on " + addr_ + ": out of file descriptors (" + strerror(err) +
                           "); raise `ulimit -n` or lower NCCLSCOPE_NET_NSOCKS");
      }
      if (r == sock::AcceptResult::kFailed) return SystemError("accept on " + addr_ + " failed: " + strerror(err));
      pending_.push_back(Pending{fd, sock::SockAddrToString(peer)});
    }
    for (size_t i = 0; i < pending_.size(); ++i) {
      Pending& p = pending_[i];
      if (p.got == sizeof(Hello)) continue;
      int err = 0;
      const sock::Io io = sock::RecvSome(p.fd, &p.hello, sizeof(Hello), &p.got, &err);
      if (io == sock::Io::kEof || io == sock::Io::kError) {
        // A connector that went away before finishing its hello: drop that socket only.
        close(p.fd);
        pending_.erase(pending_.begin() + static_cast<long>(i--));
        continue;
      }
      const HelloVerdict verdict = JudgeHello(p.hello, p.got, id_, nsocks_);
      if (verdict == HelloVerdict::kIncomplete) continue;
      if (verdict == HelloVerdict::kMalformed) {
        Status error = MalformedHelloError(p.hello, p.peer, addr_, nsocks_);
        close(p.fd);
        pending_.erase(pending_.begin() + static_cast<long>(i));
        NetCountersFor(nic_, 0, true)->AddError(NetErrorKind::kProtocol);
        return error;
      }
    }
    // A connection is complete when all of its sockets have said hello.
    for (const Pending& p : pending_) {
      if (p.got != sizeof(Hello)) continue;
      std::vector<int> fds(nsocks_, -1);
      int have = 0;
      for (const Pending& q : pending_) {
        if (q.got == sizeof(Hello) && q.hello.conn_id == p.hello.conn_id && fds[q.hello.index] < 0) {
          fds[q.hello.index] = q.fd;
          ++have;
        }
      }
      if (have < nsocks_) continue;
      PeerInfo peer = PeerFromWire(p.peer, p.hello.identity);  // every socket's hello carries the same
      uint64_t conn = p.hello.conn_id;
      std::erase_if(pending_, [&](const Pending& q) {
        return q.got == sizeof(Hello) && q.hello.conn_id == conn &&
               std::find(fds.begin(), fds.end(), q.fd) != fds.end();
      });
      for (int fd : fds) ConfigureDataSocket(fd, cfg_);
      auto comm = std::make_unique<TcpRecvComm>(std::move(fds), peer, cfg_, ctx_, nic_);
      NCCLSCOPE_RETURN_IF_ERROR(comm->Start());
      *recv_comm = comm.release();
      return Status::Ok();
    }
    return Status::Ok();
  }

  Status Close() override {
    delete this;
    return Status::Ok();
  }

 private:
  struct Pending {
    int fd;
    std::string peer;
    Hello hello{};
    size_t got = 0;
  };
  int fd_;
  int nsocks_;
  uint32_t id_;
  std::string addr_;
  TcpConfig cfg_;
  NetContext* ctx_;
  std::string nic_;
  std::vector<Pending> pending_;
};

// ---- connecting side ----

class Connector final : public PendingConnect {
 public:
  Connector(const TcpHandlePayload& h, const TcpConfig& cfg, NetContext* ctx, std::string nic)
      : addr_(h.addr),
        peer_info_(ListenerOf(h)),
        peer_(peer_info_.Describe()), nsocks_(h.nsocks), listener_id_(h.listener_id), cfg_(cfg), ctx_(ctx),
        nic_(std::move(nic)), conn_id_(RandomU64()), identity_(LocalWireIdentity()) {}
  ~Connector() override { CloseAll(fds_); }
  std::string peer() const override { return "peer " + peer_; }

  // Advances every socket as far as it goes without blocking; sets *comm when all are ready.
  Status Progress(SendComm** comm) override {
    if (fds_.empty()) {
      for (int i = 0; i < nsocks_; ++i) {
        Result<int> fd = sock::NewSocket(addr_.sa.sa_family, "connect to peer " + peer_);
        if (!fd.ok()) return fd.status();
        fds_.push_back(*fd);
        sent_.push_back(0);
        SizeSocketBuffers(*fd, cfg_);
        if (connect(*fd, &addr_.sa, sock::SockAddrLen(addr_)) != 0 && errno != EINPROGRESS) {
          return ConnectError(errno);
        }
      }
    }
    int ready = 0;
    for (int i = 0; i < nsocks_; ++i) {
      if (sent_[i] == sizeof(Hello)) {
        ++ready;
        continue;
      }
      int err = sock::ConnectResult(fds_[i]);
      if (err < 0) continue;
      if (err != 0) return ConnectError(err);
      Hello h = MakeHello(nsocks_, listener_id_, i, conn_id_, identity_);
      if (sock::SendSome(fds_[i], &h, sizeof(h), &sent_[i], &err) == sock::Io::kError) return ConnectError(err);
      if (sent_[i] == sizeof(Hello)) ++ready;
    }
    if (ready < nsocks_) return Status::Ok();
    for (int fd : fds_) ConfigureDataSocket(fd, cfg_);
    auto c = std::make_unique<TcpSendComm>(std::move(fds_), peer_info_, cfg_, ctx_, nic_);
    fds_.clear();
    NCCLSCOPE_RETURN_IF_ERROR(c->Start());
    *comm = c.release();
    return Status::Ok();
  }

 private:
  Status ConnectError(int err) {
    NetCountersFor(nic_, 0, true)->AddError(NetErrorKind::kConnect);
    Status s = RemoteError("connect to peer " + peer_ + " failed: " + strerror(err) +
                           (err == ECONNREFUSED ? " (peer gone or its listen comm closed)" : ""));
    // A refused connect is how a survivor first meets a dead peer when the job is still wiring up.
    RecordConnectionFailure(nic_, ctx_, NetErrorKind::kConnect, s, peer_info_);
    return s;
  }

  sock::SockAddr addr_;
  PeerInfo peer_info_;
  std::string peer_;  // peer_info_.Describe(), for the errors
  int nsocks_;
  uint32_t listener_id_;
  TcpConfig cfg_;
  NetContext* ctx_;
  std::string nic_;
  uint64_t conn_id_;
  WireIdentity identity_;  // ours, sent in every hello
  std::vector<int> fds_;
  std::vector<size_t> sent_;
};

// Said by the probe and by Open() when the interface filter leaves nothing.
std::string NoInterfaceMatches(const std::string& spec) {
  return "no usable network interface matches NCCLSCOPE_SOCKET_IFNAME/NCCL_SOCKET_IFNAME='" + spec +
         "' (loopback is used only when named, e.g. '=lo')";
}

}  // namespace

TcpTransport& GetTcpTransport() {
  static TcpTransport* t = new TcpTransport();  // never destroyed (-z nodelete; NCCL threads at exit)
  return *t;
}

TransportProbe ProbeTcp() {
  TransportProbe p;
  const std::string spec = LoadTcpConfig().ifname_spec;
  std::vector<sock::Interface> ifaces = sock::DiscoverInterfaces(spec);
  p.present = p.usable = static_cast<int>(ifaces.size());
  if (ifaces.empty()) {
    p.detail = NoInterfaceMatches(spec);
    return p;
  }
  p.detail = std::to_string(ifaces.size()) + " interface(s)";
  for (size_t i = 0; i < ifaces.size(); ++i) p.detail += (i ? ", " : ": ") + ifaces[i].name;
  return p;
}

Status TcpTransport::Open() {
  TcpConfig cfg = LoadTcpConfig();
  std::vector<sock::Interface> ifaces = sock::DiscoverInterfaces(cfg.ifname_spec);
  if (ifaces.empty()) {
    return SystemError(NoInterfaceMatches(cfg.ifname_spec));
  }
  std::vector<NetProperties> props;
  for (size_t i = 0; i < ifaces.size(); ++i) {
    NetProperties p;
    p.name = ifaces[i].name;
    p.pci_path = ifaces[i].pci_path;
    p.guid = i;
    p.speed_mbps = ifaces[i].speed_mbps;
    p.latency_us = 0;
    p.vdev_count = 1;
    p.vdevs[0] = static_cast<int>(i);
    p.numa_node = ifaces[i].numa_node;
    props.push_back(p);
  }
  // Open() runs at init, serialised by NCCL's net mutex; data-path threads never read these vectors.
  ifaces_ = std::move(ifaces);
  props_ = std::move(props);
  for (const NetProperties& p : props_) SetNicIdentity({p.name, "tcp", p.rail_id, p.plane_id});
  const std::vector<std::vector<int>> fused = std::move(fused_);
  fused_.clear();
  for (const std::vector<int>& m : fused) {
    if (*std::max_element(m.begin(), m.end()) < static_cast<int>(props_.size())) AppendFused(m);
  }
  return Status::Ok();
}

void TcpTransport::AppendFused(const std::vector<int>& members) {
  std::vector<const NetProperties*> props;
  for (int d : members) props.push_back(&props_[d]);
  NetProperties p = FusedProperties(props, members.data(), static_cast<int>(members.size()),
                                    props_[members[0]].speed_mbps);
  ifaces_.push_back(ifaces_[members[0]]);
  props_.push_back(std::move(p));
  fused_.push_back(members);
}

Status TcpTransport::MakeVDevice(const int* devs, int n, int* vdev) {
  AppendFused(std::vector<int>(devs, devs + n));
  *vdev = device_count() - 1;
  NCCLSCOPE_INFO(subsys::kNet, "TCP: fused device %d (%s) carries its traffic over %s only",
                 *vdev, props_.back().name.c_str(), ifaces_.back().name.c_str());
  return Status::Ok();
}

Status TcpTransport::Listen(NetContext* ctx, int dev, void* handle, ListenComm** listen_comm) {
  if (dev < 0 || dev >= device_count()) return InternalError("listen on unknown device " + std::to_string(dev));
  TcpConfig cfg = LoadTcpConfig();
  const sock::Interface& iface = ifaces_[dev];
  sock::SockAddr addr = iface.addr;
  if (addr.sa.sa_family == AF_INET) addr.in4.sin_port = 0; else addr.in6.sin6_port = 0;
  Result<int> fd = sock::NewSocket(addr.sa.sa_family, "listen on " + iface.name);
  if (!fd.ok()) {
    NetCountersFor(iface.name, 0, true)->AddError(NetErrorKind::kResource);
    return fd.status();
  }
  SizeSocketBuffers(*fd, cfg);
  socklen_t len = sock::SockAddrLen(addr);
  if (bind(*fd, &addr.sa, len) != 0 || listen(*fd, 16384) != 0 || getsockname(*fd, &addr.sa, &len) != 0) {
    int err = errno;
    close(*fd);
    return SystemError("listen on " + iface.name + " (" + sock::SockAddrToString(addr) + ") failed: " + strerror(err));
  }
  TcpHandlePayload payload{};
  payload.addr = addr;
  payload.nsocks = static_cast<uint16_t>(cfg.nsocks);
  payload.listener_id = static_cast<uint32_t>(RandomU64());
  payload.wire_version = kWireVersion;
  payload.identity = LocalWireIdentity();
  EncodeTcpHandle(handle, payload);
  *listen_comm = new TcpListenComm(*fd, cfg.nsocks, payload.listener_id, sock::SockAddrToString(addr), cfg, ctx,
                                   iface.name);
  return Status::Ok();
}

Status TcpTransport::Connect(NetContext* ctx, int dev, void* handle, SendComm** send_comm,
                             ncclscope_net_device_handle_t** /*dev_comm*/) {
  *send_comm = nullptr;
  if (dev < 0 || dev >= device_count()) return InternalError("connect on unknown device " + std::to_string(dev));
  Result<TcpHandlePayload> decoded = DecodeTcpHandle(handle);
  if (!decoded.ok()) return decoded.status();
  const TcpHandlePayload payload = *decoded;
  const std::string nic = ifaces_[dev].name;
  return StepConnect(
      handle,
      [&]() -> Result<std::unique_ptr<PendingConnect>> {
        return std::unique_ptr<PendingConnect>(new Connector(payload, LoadTcpConfig(), ctx, nic));
      },
      send_comm, "peer " + sock::SockAddrToString(payload.addr));
}

}  // namespace ncclscope::net::tcp

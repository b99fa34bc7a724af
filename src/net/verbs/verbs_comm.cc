#include "net/verbs/verbs_comm.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/clock.h"
#include "common/params.h"
#include "net/verbs/gid_select.h"
#include "net/verbs/qp_setup.h"
#include "socket/socket_util.h"

namespace ncclscope::net::verbs {

VerbsConfig VerbsConfig::Load() {
  VerbsConfig c;
  const ParamValues& p = Params();  // validated: a bad value has warned and kept the default
  c.qps_per_connection = static_cast<int>(p.Int(ParamId::kIbQpsPerConnection));
  c.split_data = p.Int(ParamId::kIbSplitDataOnQps) != 0;
  c.liveness_timeout_s = static_cast<int>(p.Int(ParamId::kIbLivenessTimeout));
  c.timeout = static_cast<int>(p.Int(ParamId::kIbTimeout));
  c.retry_cnt = static_cast<int>(p.Int(ParamId::kIbRetryCnt));
  c.sl = static_cast<int>(p.Int(ParamId::kIbSl));
  c.tc = static_cast<int>(p.Int(ParamId::kIbTc));
  c.subnet_aware = p.Bool(ParamId::kIbSubnetAwareRouting);
  c.subnet_prefix_len = static_cast<int>(p.Int(ParamId::kIbSubnetPrefixLen));
  return c;
}

VerbsComm::VerbsComm(VerbsDeviceCtx* dev, const VerbsConfig& cfg, NetContext* ctx, std::string peer,
                     NetDir dir)
    : dev_(dev), cfg_(cfg), ctx_(ctx), peer_(std::move(peer)), nqps_(cfg.qps_per_connection),
      fatal_gen_at_start_(dev->events.fatal_gen.load(std::memory_order_acquire)),
      acct_(dev->info.props.name, ctx, "verbs", kVerbsPluginId, dir) {
  acct_.SetPeer(PeerInfo{peer_});  // the address until the handshake names the process
}

VerbsComm::~VerbsComm() {
  const IbvApi* api = dev_->api;
  UnwatchAsyncEvents(dev_, &fault_);  // before the QPs and CQ go: the event thread never sees a freed comm
  for (ibv_qp*& qp : qps_) {
    if (qp != nullptr) api->destroy_qp(qp);
    qp = nullptr;
  }
  if (cq_ != nullptr) api->destroy_cq(cq_);
  if (ctrl_mr_ != nullptr) api->dereg_mr(ctrl_mr_);
  free(ctrl_);
  if (fd_ >= 0) close(fd_);
}

Status VerbsComm::Create(size_t ctrl_bytes) {
  const IbvApi* api = dev_->api;
  ctrl_bytes_ = (ctrl_bytes + 4095) & ~size_t{4095};
  ctrl_ = static_cast<char*>(aligned_alloc(4096, ctrl_bytes_));
  if (ctrl_ == nullptr) return SystemError("out of memory for a verbs comm's control block");
  memset(ctrl_, 0, ctrl_bytes_);
  ctrl_mr_ = api->reg_mr(dev_->pd, ctrl_, ctrl_bytes_,
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (ctrl_mr_ == nullptr) return SystemError("ibv_reg_mr (control block) failed: " + std::string(strerror(errno)));
  // Per QP: a send WR pair (data + immediate) for each of 32 x 8 messages in flight, receive WRs for 32 x 8.
  constexpr int kSendWr = 2 * kMaxRequests * kMaxRecvs + 8, kRecvWr = kMaxRequests * kMaxRecvs + 8;
  cq_ = api->create_cq(dev_->ctx, nqps_ * (kSendWr + kRecvWr), nullptr, nullptr, 0);
  if (cq_ == nullptr) return SystemError("ibv_create_cq on " + dev_->info.device_name + " failed: " + strerror(errno));
  bool cq_watched = false;
  for (int q = 0; q < nqps_; ++q) {
    ibv_qp_init_attr a{};
    a.send_cq = cq_;
    a.recv_cq = cq_;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = kSendWr;
    a.cap.max_recv_wr = kRecvWr;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = kMaxInlineBytes;
    qps_[q] = api->create_qp(dev_->pd, &a);
    if (qps_[q] == nullptr) {  // a device without inline sends: every message goes by DMA
      a.cap.max_inline_data = 0;
      qps_[q] = api->create_qp(dev_->pd, &a);
    }
    if (qps_[q] == nullptr) {
      return SystemError("ibv_create_qp on " + dev_->info.device_name + " failed: " + strerror(errno));
    }
    max_inline_ = q == 0 ? a.cap.max_inline_data : std::min<size_t>(max_inline_, a.cap.max_inline_data);
    WatchForAsyncEvents(dev_, qps_[q], qps_[q]->qp_num, &fault_);
    if (!cq_watched) WatchForAsyncEvents(dev_, cq_, qps_[q]->qp_num, &fault_);
    cq_watched = true;
    NCCLSCOPE_RETURN_IF_ERROR(
        QpToInit(dev_, qps_[q], IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE));
  }
  return Status::Ok();
}

void VerbsComm::FillInfo(ConnInfo* info, uint64_t ctrl_offset) const {
  memset(info, 0, sizeof(*info));
  info->magic = kConnMagic;
  info->version = kConnVersion;
  info->nqps = static_cast<uint16_t>(nqps_);
  info->mtu = static_cast<uint32_t>(dev_->info.active_mtu);
  for (int q = 0; q < nqps_; ++q) info->qpn[q] = qps_[q]->qp_num;
  memcpy(info->gid, dev_->info.gid.raw.data(), 16);
  info->lid = dev_->info.lid;
  info->link_layer = static_cast<uint16_t>(dev_->info.link_layer);
  info->rkey = ctrl_mr_->rkey;
  info->split_data = cfg_.split_data ? 1 : 0;
  info->addr = reinterpret_cast<uint64_t>(ctrl_) + ctrl_offset;
  info->identity = LocalWireIdentity();
}

Status VerbsComm::ConnectQps(const ConnInfo& r) {
  PeerInfo peer = PeerFromWire(acct_.peer().address, r.identity);
  peer_ = peer.Describe();
  acct_.SetPeer(std::move(peer));
  if (r.nqps != nqps_) {
    return SystemError("peer " + peer_ + " uses " + std::to_string(r.nqps) + " QPs per connection, we use " +
                       std::to_string(nqps_) + ": set NCCL_IB_QPS_PER_CONNECTION alike on every rank");
  }
  remote_rkey_ = r.rkey;
  remote_addr_ = r.addr;
  const int tc = ctx_ != nullptr && ctx_->traffic_class >= 0 ? ctx_->traffic_class : cfg_.tc;
  for (int q = 0; q < nqps_; ++q) {
    const RcRemote remote{r.qpn[q], r.gid, r.lid, static_cast<ibv_mtu>(r.mtu)};
    Status s = QpToRts(dev_, qps_[q], remote, cfg_, tc);
    if (!s.ok()) {
      return SystemError(s.message() + " (peer " + peer_ + ", GID " +
                         GidToString(*reinterpret_cast<const std::array<uint8_t, 16>*>(r.gid)) + ")");
    }
  }
  last_progress_ns_ = MonotonicNs();
  return Status::Ok();
}

void VerbsComm::AdoptSocket(int fd) {
  fd_ = fd;
  const int t = cfg_.liveness_timeout_s;
  if (t <= 0) return;
  // First probe after a third of the timeout of silence, then 4 more a sixth apart: gone after about t.
  sock::SetKeepalive(fd, std::max(1, t / 3), std::max(1, t / 6), 4);
  sock::SetUserTimeout(fd, static_cast<unsigned>(t) * 1000);  // unacknowledged data (the handshake's)
}

Status VerbsComm::Fail(const std::string& what, NetErrorKind kind) {
  // Every error names the connection's QPs, unless `what` already names the one that failed.
  std::string qps;
  if (what.find("QP ") == std::string::npos) {
    for (int q = 0; q < nqps_ && qps_[q] != nullptr; ++q) qps += (q ? "," : ", QP ") + std::to_string(qps_[q]->qp_num);
  }
  Status s = RemoteError(what + " (peer " + peer_ + ", device " + dev_->info.device_name + ":" +
                         std::to_string(dev_->info.port_num) + qps + ")");
  acct_.Fail(s, kind);
  return acct_.error();
}

Status VerbsComm::FailWc(const ibv_wc& wc, const char* op) {
  return Fail(std::string(op) + " completion failed on QP " + std::to_string(wc.qp_num) + ": " +
                  dev_->api->wc_status_str(wc.status) + " (status " + std::to_string(wc.status) + ", vendor_err " +
                  std::to_string(wc.vendor_err) + ")",
              wc.status == IBV_WC_RETRY_EXC_ERR ? NetErrorKind::kTimeout : NetErrorKind::kSend);
}

Status VerbsComm::FailDeviceEvent() {
  if (fault_.has_qp_event()) {
    return Fail("async event " + DescribeAsyncEvent(dev_, fault_.type()) + " on QP " +
                    std::to_string(fault_.qp_num()),
                NetErrorKind::kDevice);
  }
  std::string qps;
  for (int q = 0; q < nqps_; ++q) qps += (q ? "," : "") + std::to_string(qps_[q]->qp_num);
  dev_->events.fatal_gen.load(std::memory_order_acquire);  // pairs with the thread's release: the event is set
  const int ev = dev_->events.last_fatal_event.load(std::memory_order_relaxed);
  if (ev == IBV_EVENT_PORT_ERR && dev_->events.port_down_timeout_ns != 0) {
    return Fail("this connection's port stayed down for " +
                    std::to_string(dev_->events.port_down_timeout_ns / 1000000000ull) + " s (" +
                    DescribeAsyncEvent(dev_, IBV_EVENT_PORT_ERR) +
                    " and no port-active event; NCCLSCOPE_IB_PORT_DOWN_TIMEOUT) while QP " + qps + " was connected",
                NetErrorKind::kDevice);
  }
  return Fail("async event " + DescribeAsyncEvent(dev_, static_cast<ibv_event_type>(ev)) +
                  " on this connection's port while QP " + qps + " was connected",
              NetErrorKind::kDevice);
}

int VerbsComm::PeerGone() {
  // The clock is read once per kIdlePollsPerClockRead idle polls: a clock read costs ~20 ns on hardware but
  // ~750 ns in a TCG guest (HPET), more than the poll itself.
  if (++idle_polls_ % kIdlePollsPerClockRead != 0) return 0;
  uint64_t now = MonotonicNs();
  if (ElapsedNs(last_progress_ns_, now) < kLivenessCheckNs) return 0;
  last_progress_ns_ = now;
  char b;
  ssize_t n = recv(fd_, &b, 1, MSG_DONTWAIT | MSG_PEEK);
  if (n == 0) return ECONNRESET;
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return errno;
  return 0;
}

Status VerbsComm::FailPeerGone(int why) {
  if (why == ECONNRESET) return Fail("peer closed the connection", NetErrorKind::kRecv);
  if (why == ETIMEDOUT) {
    return Fail("peer host unreachable: its kernel answered no liveness probe for about " +
                    std::to_string(cfg_.liveness_timeout_s) + " s (frozen or cut off; NCCLSCOPE_IB_LIVENESS_TIMEOUT)",
                NetErrorKind::kTimeout);
  }
  return Fail(std::string("liveness socket failed: ") + strerror(why), NetErrorKind::kRecv);
}

}  // namespace ncclscope::net::verbs

#include "net/verbs/gpu_flush.h"

#include <cerrno>
#include <cstring>

#include "net/verbs/qp_setup.h"

namespace ncclscope::net::verbs {

Result<std::unique_ptr<GpuFlush>> GpuFlush::Create(VerbsDeviceCtx* dev, const VerbsConfig& cfg) {
  std::unique_ptr<GpuFlush> f(new GpuFlush(dev));
  const IbvApi* api = dev->api;
  const std::string on = " for the GPU flush on " + dev->info.device_name;
  f->scratch_mr_ = api->reg_mr(dev->pd, f->scratch_, sizeof(f->scratch_), IBV_ACCESS_LOCAL_WRITE);
  if (f->scratch_mr_ == nullptr) {
    return SystemError("ibv_reg_mr of the scratch word" + on + " failed: " + strerror(errno));
  }
  f->cq_ = api->create_cq(dev->ctx, kMaxFlushes + 4, nullptr, nullptr, 0);
  if (f->cq_ == nullptr) return SystemError("ibv_create_cq" + on + " failed: " + strerror(errno));
  ibv_qp_init_attr a{};
  a.send_cq = f->cq_;
  a.recv_cq = f->cq_;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = kMaxFlushes + 4;
  a.cap.max_recv_wr = 1;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  f->qp_ = api->create_qp(dev->pd, &a);
  if (f->qp_ == nullptr) return SystemError("ibv_create_qp" + on + " failed: " + strerror(errno));
  NCCLSCOPE_RETURN_IF_ERROR(f->Connect(cfg));
  return f;
}

// Destination: this QP on this port. The QP is both requester and responder of the READ, so it needs remote
// read access.
Status GpuFlush::Connect(const VerbsConfig& cfg) {
  const VerbsNetDevice& d = dev_->info;
  const RcRemote self{qp_->qp_num, d.gid.raw.data(), d.lid, static_cast<ibv_mtu>(d.active_mtu)};
  Status s = QpToInit(dev_, qp_, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE);
  if (s.ok()) s = QpToRts(dev_, qp_, self, cfg, cfg.tc);
  if (!s.ok()) return SystemError(s.message() + " (the GPU flush's loopback QP on " + d.device_name + ")");
  return Status::Ok();
}

GpuFlush::~GpuFlush() {
  const IbvApi* api = dev_->api;
  if (qp_ != nullptr) api->destroy_qp(qp_);
  if (cq_ != nullptr) api->destroy_cq(cq_);
  if (scratch_mr_ != nullptr) api->dereg_mr(scratch_mr_);
}

int GpuFlush::Post(uint64_t addr, uint32_t rkey, uint64_t wr_id) {
  ibv_sge sge{reinterpret_cast<uint64_t>(scratch_), 1, scratch_mr_->lkey};
  ibv_send_wr w{};
  w.wr_id = wr_id;
  w.sg_list = &sge;
  w.num_sge = 1;
  w.opcode = IBV_WR_RDMA_READ;
  w.send_flags = IBV_SEND_SIGNALED;
  w.wr.rdma.remote_addr = addr;
  w.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp_, &w, &bad);
}

}  // namespace ncclscope::net::verbs

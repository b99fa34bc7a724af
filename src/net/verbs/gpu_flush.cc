#include "net/verbs/gpu_flush.h"

#include <cerrno>
#include <cstring>

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

// INIT -> RTR (destination: this QP on this port) -> RTS. The QP is both requester and responder of the
// READ, so it needs remote read access and one outstanding read each way.
Status GpuFlush::Connect(const VerbsConfig& cfg) {
  const IbvApi* api = dev_->api;
  const VerbsNetDevice& d = dev_->info;
  const std::string qp = "loopback QP " + std::to_string(qp_->qp_num) + " (GPU flush) on " + d.device_name;
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = static_cast<uint8_t>(d.port_num);
  m.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
  int rc = api->modify_qp(qp_, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (rc != 0) return SystemError(qp + " to INIT failed: " + strerror(rc));
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RTR;
  r.path_mtu = static_cast<ibv_mtu>(d.active_mtu);
  r.dest_qp_num = qp_->qp_num;
  r.max_dest_rd_atomic = 1;
  r.min_rnr_timer = 12;
  r.ah_attr.port_num = static_cast<uint8_t>(d.port_num);
  r.ah_attr.sl = static_cast<uint8_t>(cfg.sl);
  if (d.link_layer != LinkLayer::kInfiniBand) {
    r.ah_attr.is_global = 1;
    memcpy(r.ah_attr.grh.dgid.raw, d.gid.raw.data(), 16);
    r.ah_attr.grh.sgid_index = static_cast<uint8_t>(d.gid.index);
    r.ah_attr.grh.hop_limit = 255;
    r.ah_attr.grh.traffic_class = static_cast<uint8_t>(cfg.tc);
  } else {
    r.ah_attr.dlid = d.lid;
  }
  rc = api->modify_qp(qp_, &r,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) return SystemError(qp + " to RTR failed: " + strerror(rc));
  ibv_qp_attr s{};
  s.qp_state = IBV_QPS_RTS;
  s.timeout = static_cast<uint8_t>(cfg.timeout);
  s.retry_cnt = static_cast<uint8_t>(cfg.retry_cnt);
  s.rnr_retry = 7;
  s.max_rd_atomic = 1;
  rc = api->modify_qp(qp_, &s,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                          IBV_QP_MAX_QP_RD_ATOMIC);
  if (rc != 0) return SystemError(qp + " to RTS failed: " + strerror(rc));
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

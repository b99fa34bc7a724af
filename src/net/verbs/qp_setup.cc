#include "net/verbs/qp_setup.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace ncclscope::net::verbs {
namespace {

Status TransitionFailed(const ibv_qp* qp, const char* state, int rc) {
  return SystemError("QP " + std::to_string(qp->qp_num) + " to " + state + " failed: " + strerror(rc));
}

}  // namespace

Status QpToInit(const VerbsDeviceCtx* dev, ibv_qp* qp, int access) {
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.pkey_index = 0;
  m.port_num = static_cast<uint8_t>(dev->info.port_num);
  m.qp_access_flags = static_cast<unsigned>(access);
  const int rc = dev->api->modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  return rc == 0 ? Status::Ok() : TransitionFailed(qp, "INIT", rc);
}

Status QpToRts(const VerbsDeviceCtx* dev, ibv_qp* qp, const RcRemote& remote, const VerbsConfig& cfg, int tc) {
  const VerbsNetDevice& d = dev->info;
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RTR;
  r.path_mtu = std::min(remote.mtu, static_cast<ibv_mtu>(d.active_mtu));
  r.dest_qp_num = remote.qpn;
  r.rq_psn = 0;
  r.max_dest_rd_atomic = 1;
  r.min_rnr_timer = 12;
  r.ah_attr.port_num = static_cast<uint8_t>(d.port_num);
  r.ah_attr.sl = static_cast<uint8_t>(cfg.sl);
  if (d.link_layer != LinkLayer::kInfiniBand) {
    r.ah_attr.is_global = 1;
    memcpy(r.ah_attr.grh.dgid.raw, remote.gid, 16);
    r.ah_attr.grh.sgid_index = static_cast<uint8_t>(d.gid.index);
    r.ah_attr.grh.hop_limit = 255;
    r.ah_attr.grh.traffic_class = static_cast<uint8_t>(tc);
  } else {
    r.ah_attr.dlid = remote.lid;
  }
  int rc = dev->api->modify_qp(qp, &r,
                               IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) return TransitionFailed(qp, "RTR", rc);
  ibv_qp_attr s{};
  s.qp_state = IBV_QPS_RTS;
  s.timeout = static_cast<uint8_t>(cfg.timeout);
  s.retry_cnt = static_cast<uint8_t>(cfg.retry_cnt);
  s.rnr_retry = 7;
  s.sq_psn = 0;
  s.max_rd_atomic = 1;
  rc = dev->api->modify_qp(qp, &s,
                           IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                               IBV_QP_MAX_QP_RD_ATOMIC);
  return rc == 0 ? Status::Ok() : TransitionFailed(qp, "RTS", rc);
}

}  // namespace ncclscope::net::verbs

// Bringing an RC queue pair up, shared by the connections' QPs (verbs_comm.h) and the GPU flush's loopback
// QP (gpu_flush.h): RESET -> INIT with the given access, then RTR against a remote QP and RTS with the
// connection tunables (NCCL_IB_TIMEOUT, RETRY_CNT, SL; the traffic class on RoCE). Errors name the QP and the
// transition; callers add who the remote is.
#ifndef NCCLSCOPE_NET_VERBS_QP_SETUP_H_
#define NCCLSCOPE_NET_VERBS_QP_SETUP_H_

#include <infiniband/verbs.h>

#include <cstdint>

#include "common/status.h"
#include "net/verbs/verbs_comm.h"
#include "net/verbs/verbs_device.h"

namespace ncclscope::net::verbs {

struct RcRemote {
  uint32_t qpn;
  const uint8_t* gid;  // 16 bytes (RoCE)
  uint16_t lid;        // InfiniBand
  ibv_mtu mtu;         // the remote port's active MTU; the smaller of both is used
};

Status QpToInit(const VerbsDeviceCtx* dev, ibv_qp* qp, int access);
Status QpToRts(const VerbsDeviceCtx* dev, ibv_qp* qp, const RcRemote& remote, const VerbsConfig& cfg, int tc);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_QP_SETUP_H_

#include "net/verbs/handshake.h"

#include <sys/socket.h>

#include "net/handle.h"
#include "socket/sock_addr.h"

namespace ncclscope::net::verbs {
namespace {

// An MTU outside the enum would reach ibv_modify_qp as an invalid ibv_mtu (undefined behaviour to cast).
bool ValidMtu(uint32_t mtu) { return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096; }

}  // namespace

void EncodeVerbsHandle(void* handle, const VerbsHandlePayload& payload) {
  WriteHandle(handle, kVerbsHandle, &payload, sizeof(payload));
}

std::string HandlePeer(const VerbsHandlePayload& payload) {
  return sock::IsInet(payload.addr) ? "peer " + sock::SockAddrToString(payload.addr) : "an unknown peer";
}

Result<VerbsHandlePayload> DecodeVerbsHandle(const void* handle) {
  HandleHeader hh;
  VerbsHandlePayload payload;
  ReadHandle(handle, &hh, &payload, sizeof(payload));
  const std::string from = HandlePeer(payload);
  NCCLSCOPE_RETURN_IF_ERROR(CheckHandleHeader(hh, kVerbsHandle, from));
  if (!sock::IsInet(payload.addr)) {
    return SystemError("malformed verbs connect handle from " + from + " (address family " +
                       std::to_string(payload.addr.sa.sa_family) + ")");
  }
  return payload;
}

std::vector<uint32_t> ListenerHostAddresses(const VerbsHandlePayload& payload) {
  std::vector<uint32_t> addrs{payload.addr.in4.sin_addr.s_addr};
  for (uint32_t a : payload.alt_addrs) {
    if (a != 0) addrs.push_back(a);
  }
  return addrs;
}

bool ConnInfoReadyToJudge(const ConnInfo& in, size_t moved) {
  const bool same_build = in.magic == kConnMagic && in.version == kConnVersion;
  return moved >= offsetof(ConnInfo, nqps) && (!same_build || moved >= sizeof(in));
}

Status CheckConnInfo(const ConnInfo& in, uint32_t listener_id, const std::string& from) {
  if (in.magic != kConnMagic || in.version != kConnVersion || in.nqps < 1 || in.nqps > kMaxQps ||
      !ValidMtu(in.mtu)) {
    return SystemError("malformed verbs handshake from " + from + " (magic " + std::to_string(in.magic) +
                       ", version " + std::to_string(in.version) + ", " + std::to_string(in.nqps) + " QPs, MTU " +
                       std::to_string(in.mtu) + ")");
  }
  if (in.listener_id != listener_id) {
    return SystemError("verbs handshake from " + from + " names another listener (stale handle?)");
  }
  return Status::Ok();
}

Status CheckFuseMember(const ConnInfo& in, const std::string& from) {
  if (in.fuse_count < 1 || in.fuse_count > kMaxDevsPerVNic || in.fuse_index >= in.fuse_count) {
    return SystemError("malformed verbs handshake from " + from + " (fused member " + std::to_string(in.fuse_index) +
                       " of " + std::to_string(in.fuse_count) + ")");
  }
  return Status::Ok();
}

}  // namespace ncclscope::net::verbs

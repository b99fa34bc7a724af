// What the verbs send and receive comms share: the wire formats (handle payload, the handshake's
// ConnInfo, the clear-to-send FIFO), the connection tunables, and VerbsComm, which owns one comm's
// resources: a CQ, NCCL_IB_QPS_PER_CONNECTION RC queue pairs, a registered control block (the FIFO or
// the receive-size table, plus staging) and the TCP socket that carried the handshake and stays open as
// a liveness channel.
//
// Protocol (receiver-driven clear-to-send): Irecv of n buffers writes n CtsEntry {addr, size, rkey, tag,
// n, index, check, seq} into FIFO slot seq % kMaxRequests of the sender with one RDMA WRITE, after posting
// n receive WRs on every QP. Isend finds the entry whose tag matches in the oldest slot and writes the data
// (split over the QPs with NCCL_IB_SPLIT_DATA_ON_QPS=1, else all on QP (seq - 1) % nqps: FirstDataQp).
// n == 1: each QP's share is one WRITE_WITH_IMM, imm = the share's length (the
// receiver sums them). n > 1: each share is an RDMA WRITE followed by a 4-byte WRITE_WITH_IMM of the size
// into the receiver's size table (imm = entry index). RC keeps each QP in order, so when the receiver has
// seen n * nqps immediates for a slot, all data and sizes of that slot are in memory.
//
// Thread-safety: built and closed on NCCL's service thread; the data path (one progress thread per
// comm) uses fixed arrays only. The first error wins (ErrorSlot) and every later call returns it.
// Device events: the device's event thread (async_events.h) marks this comm's AsyncFault, or bumps the
// device's fatal generation; isend/irecv/test check both with relaxed loads (DeviceFaulted) and fail.
#ifndef NCCLSCOPE_NET_VERBS_VERBS_COMM_H_
#define NCCLSCOPE_NET_VERBS_VERBS_COMM_H_

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "net/comm_accounting.h"
#include "net/net_types.h"
#include "net/peer_identity.h"
#include "net/verbs/verbs_device.h"
#include "socket/sock_addr.h"

namespace ncclscope::net::verbs {

inline constexpr int kMaxQps = 8;
inline constexpr uint32_t kConnMagic = 0x56425343;  // "CSBV"
// 2: ConnInfo.split_data; 3: CtsEntry.check; 4: ConnInfo.fuse_*; 5: ConnInfo.identity
inline constexpr uint16_t kConnVersion = 5;
// Our own NetPlugin type code: the profiler counts NCCL's IB events (0x10000) itself.
inline constexpr int64_t kVerbsPluginId = NCCLSCOPE_NET_PLUGIN_TYPE_NCCLSCOPE_VERBS | 1;
// A Test() that found nothing to do for this long checks the liveness socket (one non-blocking recv).
inline constexpr uint64_t kLivenessCheckNs = 100'000'000;
inline constexpr uint32_t kIdlePollsPerClockRead = 64;
// Messages up to this size go inline in the send WR (asked of the QP; the device may grant less or none).
inline constexpr uint32_t kMaxInlineBytes = 64;

// Connection tunables, read at listen/connect: NCCLSCOPE_IB_<X>, else NCCL_IB_<X>, else the default.
struct VerbsConfig {
  int qps_per_connection = 1;  // QPS_PER_CONNECTION (1..8)
  bool split_data = false;     // SPLIT_DATA_ON_QPS: every message over all QPs, else one QP per message in turn
  int liveness_timeout_s = 30;  // NCCLSCOPE_IB_LIVENESS_TIMEOUT: TCP keepalive on the liveness socket (0: off)
  int timeout = 20;            // TIMEOUT: 4.096 us * 2^timeout per retry
  int retry_cnt = 7;           // RETRY_CNT
  int sl = 0;                  // SL
  int tc = 0;                  // TC; a v11 trafficClass overrides it
  bool subnet_aware = false;   // SUBNET_AWARE_ROUTING (subnet_route.h)
  int subnet_prefix_len = 24;  // SUBNET_PREFIX_LEN
  static VerbsConfig Load();
};

inline constexpr int kHandleAltAddrs = 3;
struct VerbsHandlePayload {
  sock::SockAddr addr;  // the listener's socket, on its port's own address
  uint32_t listener_id;
  uint8_t gid[16];     // the listening port's RoCE GID (zero on IB): subnet_route.h
  // With subnet-aware routing: the IPv4 addresses of the listener host's other RoCE ports (network order,
  // 0 = none), where the same socket also listens, for a connector that cannot reach `addr`.
  uint32_t alt_addrs[kHandleAltAddrs];
};
static_assert(sizeof(VerbsHandlePayload) <= kHandlePayloadBytes);

// Exchanged once each way over the socket: the connector's, then the acceptor's.
struct ConnInfo {
  uint32_t magic;
  uint16_t version;
  uint16_t nqps;
  uint32_t listener_id;
  uint32_t mtu;  // enum ibv_mtu
  uint32_t qpn[kMaxQps];
  uint8_t gid[16];
  uint16_t lid;
  uint16_t link_layer;
  uint32_t rkey;  // of `addr`: the sender's FIFO, or the receiver's size table
  uint32_t split_data;  // the connector's SPLIT_DATA_ON_QPS (it rules the connection, like nqps)
  uint64_t addr;
  // A fused device's connection is one per member, each its own handshake on the listener's socket:
  // the connector's random id for the whole, this member's index and the member count (1: not fused).
  uint32_t fuse_id;
  uint16_t fuse_index;
  uint16_t fuse_count;
  WireIdentity identity;  // the sender's process, so the other side's errors name it
};
static_assert(sizeof(ConnInfo) == 160);

struct CtsEntry {
  uint64_t addr;
  uint64_t size;
  uint32_t rkey;
  int32_t tag;
  uint8_t n;
  uint8_t index;
  uint16_t check;  // CtsCheck over every other field
  uint32_t seq;
};
static_assert(sizeof(CtsEntry) == 32 && kMaxRecvs <= 255, "the clear-to-send entry is one 32-byte wire record");

// The bytes of one RDMA WRITE can become visible to the polling CPU in any order (the responder's copy makes
// no promise: the CI saw seq land before n), so a matching seq alone does not prove the entry landed. The
// sender snapshots the entry and accepts it only when this 16-bit check over all of it matches; a torn
// snapshot (old and new bytes mixed) passes with probability 2^-16 and is read again on the next poll.
inline uint16_t CtsCheck(const CtsEntry& e) {
  auto mix = [](uint64_t x) {  // splitmix64's finalizer
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  };
  const uint64_t last = e.n | (uint64_t{e.index} << 8) | (uint64_t{e.seq} << 32);
  const uint64_t mid = e.rkey | (uint64_t{static_cast<uint32_t>(e.tag)} << 32);
  const uint64_t h = mix(e.addr ^ mix(e.size ^ mix(mid ^ mix(last))));
  return static_cast<uint16_t>(h ^ (h >> 16) ^ (h >> 32) ^ (h >> 48));
}
struct CtsSlot {
  CtsEntry e[kMaxRecvs];
};

class VerbsComm {
 public:
  VerbsComm(VerbsDeviceCtx* dev, const VerbsConfig& cfg, NetContext* ctx, std::string peer, NetDir dir);
  ~VerbsComm();
  VerbsComm(const VerbsComm&) = delete;
  VerbsComm& operator=(const VerbsComm&) = delete;

  // Allocates and registers a zeroed control block of `bytes`, the CQ and the QPs (in INIT).
  Status Create(size_t ctrl_bytes);
  // Our half of the handshake; `addr` is the control block offset the peer may write.
  void FillInfo(ConnInfo* info, uint64_t ctrl_offset) const;
  // Moves the QPs to RTR and RTS against the peer's ConnInfo; first learns the peer's process from it, for
  // the errors from then on (service thread, before the comm is handed out).
  Status ConnectQps(const ConnInfo& remote);
  // The handshake socket becomes the liveness channel (closed with the comm). With a liveness timeout, TCP
  // keepalive probes it: the peer's kernel answers them whatever its process does, so only a host that answers
  // nothing (frozen, unplugged) makes the socket fail, and the next idle test() reports it.
  void AdoptSocket(int fd);
  const std::string& peer() const { return peer_; }

 protected:
  // Records the first failure with the peer, device and what happened.
  Status Fail(const std::string& what, NetErrorKind kind);
  // A completion error: names the QP and ibv_wc_status_str.
  Status FailWc(const ibv_wc& wc, const char* op);
  // True once the device's event thread reported a fatal event for this comm's QPs, CQ, port or device.
  bool DeviceFaulted() const { return !fault_.Clear(dev_->events.fatal_gen, fatal_gen_at_start_); }
  // The error for that event, naming it, the QP(s), the peer and device:port.
  Status FailDeviceEvent();
  // What every data-path call checks first: the comm's first error, else a device event since it started.
  Status Healthy() {
    if (acct_.failed()) return acct_.error();
    if (DeviceFaulted()) [[unlikely]] return FailDeviceEvent();
    return Status::Ok();
  }
  // Called by Test() when it found nothing to do; checks the socket at most every kLivenessCheckNs.
  // Returns 0 (alive or not checked) or the errno-like reason the peer is gone (ECONNRESET for EOF). The
  // caller polls the CQ once more before failing: the peer may have closed right after its last
  // completion, whose CQE we had not seen yet.
  int PeerGone();
  Status FailPeerGone(int why);
  // The wait both sides' Test() share: while `remaining` (a request's outstanding completions, counted down
  // by `poll`) is above 0, polls the CQ once; *pending stays true while completions are outstanding. With
  // nothing found, the liveness rule above applies: a peer gone and a last poll still short fails the comm.
  template <class PollFn>
  Status AwaitCompletions(const int& remaining, PollFn poll, bool* pending) {
    *pending = false;
    if (remaining <= 0) return Status::Ok();
    int found = 0;
    NCCLSCOPE_RETURN_IF_ERROR(poll(&found));
    if (remaining <= 0) return Status::Ok();
    *pending = true;
    if (found != 0) {
      NoteProgress(MonotonicNs());
      return Status::Ok();
    }
    const int gone = PeerGone();
    if (gone == 0) return Status::Ok();
    NCCLSCOPE_RETURN_IF_ERROR(poll(&found));  // completions that landed before the peer closed still count
    if (remaining > 0) return FailPeerGone(gone);
    *pending = false;
    return Status::Ok();
  }
  void NoteProgress(uint64_t now_ns) { last_progress_ns_ = now_ns; }
  // The QPs that carry the messages of clear-to-send `seq` (both sides compute the same): all of them when
  // splitting data, else QP (seq - 1) % nqps alone.
  int FirstDataQp(uint32_t seq) const { return cfg_.split_data ? 0 : static_cast<int>((seq - 1) % nqps_); }
  int DataQpCount() const { return cfg_.split_data ? nqps_ : 1; }
  void ProfStart(void* phandle, void** event, ncclscope_net_ib_descr_v1_t* d, uint64_t wr_id, int opcode,
                 int qp, size_t len) {
    d->type = NCCLSCOPE_NET_IB_DESCR_TYPE_QP;
    d->qp.device = 0;
    d->qp.wr_id = wr_id;
    d->qp.opcode = opcode;
    d->qp.qpNum = qp;
    d->qp.length = len;
    acct_.events().Start(phandle, event, d);
  }

  VerbsDeviceCtx* dev_;
  VerbsConfig cfg_;
  NetContext* ctx_;
  std::string peer_;
  int nqps_;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qps_[kMaxQps] = {};
  size_t max_inline_ = 0;  // what the device granted
  char* ctrl_ = nullptr;
  size_t ctrl_bytes_ = 0;
  ibv_mr* ctrl_mr_ = nullptr;
  uint32_t remote_rkey_ = 0;
  uint64_t remote_addr_ = 0;
  int fd_ = -1;
  uint64_t last_progress_ns_ = 0;
  uint32_t idle_polls_ = 0;
  AsyncFault fault_;
  uint32_t fatal_gen_at_start_;
  CommAccounting acct_;
};

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_VERBS_COMM_H_

// Version-neutral value types of the net half: the one internal properties struct every ABI version's
// properties are filled from, the 128-byte connect handle's common header, the per-init context, and
// network attributes. Plain data; a NetContext is immutable after init except for its attribute hints,
// which are atomics (setNetAttr runs on the service thread while the progress thread sends).
#ifndef NCCLSCOPE_NET_NET_TYPES_H_
#define NCCLSCOPE_NET_NET_TYPES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ncclscope/abi/common.h"

namespace ncclscope::net {

inline constexpr int kHandleBytes = 128;
inline constexpr uint32_t kHandleMagic = 0x6e534350;  // "PCSn"
inline constexpr uint16_t kHandleVersion = 1;
inline constexpr int kMaxRequests = 32;  // NCCL_NET_MAX_REQUESTS per comm
inline constexpr int kMaxRecvs = 8;      // grouped receives we advertise (maxRecvs)
inline constexpr int kMaxDevsPerVNic = 8;

// What a transport says about one device; every ABI version's properties are derived from it.
struct NetProperties {
  std::string name;
  std::string pci_path;  // empty: virtual NIC (pciPath = NULL)
  uint64_t guid = 0;
  int ptr_support = 0x1;  // NCCL_PTR_HOST
  bool reg_is_global = false;
  bool force_flush = false;
  int speed_mbps = 10000;
  int port = 0;
  float latency_us = 0;
  int max_comms = 65536;
  int max_recvs = kMaxRecvs;
  int net_device_type = 0;  // HOST
  int net_device_version = 0;
  int vdev_count = 1;
  int vdevs[kMaxDevsPerVNic] = {0};
  size_t max_p2p_bytes = size_t{1} << 30;
  size_t max_coll_bytes = size_t{1} << 30;
  int max_multi_request_size = 1;
  int rail_id = -1;   // NCCL_NET_ID_UNDEF
  int plane_id = -1;
  int numa_node = -1;  // informational (logged)
};

// The first 16 bytes of every handle we write; the rest belongs to the transport. `stage_cookie` is
// local state of the connecting side (0 as written by listen): NCCL hands connect the same buffer on
// every retry, so the cookie finds our in-progress handshake without trusting a pointer from the wire.
struct HandleHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t transport;  // HandleTag::id of the transport that wrote it
  uint64_t stage_cookie;
};
inline constexpr int kHandlePayloadBytes = kHandleBytes - static_cast<int>(sizeof(HandleHeader));

// How a transport marks its handles: each transport declares its own (tcp 1, verbs 2), so that a
// connector on another transport fails with a clear error rather than misreading the payload.
struct HandleTag {
  uint16_t id;
  const char* name;  // for that error: "TCP"
};

// setNetAttr hints (v11+); -1 / 0xFFFFFFFF = unset. Kept for the transports to consult.
struct NetAttrHints {
  std::atomic<int32_t> send_max_flows_per_peer{-1};
  std::atomic<int32_t> recv_max_flows_per_peer{-1};
  std::atomic<uint32_t> op_mask{0xFFFFFFFFu};
  std::atomic<uint32_t> algo_mask{0xFFFFFFFFu};
  std::atomic<uint32_t> proto_mask{0xFFFFFFFFu};
};

// One per v11+ init (per communicator) and one process-wide context for the legacy ABIs (comm id 0).
struct NetContext {
  uint64_t comm_id = 0;
  bool legacy = false;
  int traffic_class = -1;
  ncclscope_profiler_callback_t profiler_cb = nullptr;  // v10+ only
  ncclscope_logger_t logger = nullptr;
  void* transport_state = nullptr;  // the transport's own per-context state (Transport::Attach)
  NetAttrHints attrs;
};

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_NET_TYPES_H_

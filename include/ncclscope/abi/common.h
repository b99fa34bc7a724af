/* ncclscope's own declarations of the parts of NCCL's plugin ABI shared by the net and profiler halves:
 * result codes, the logger NCCL hands to init, its subsystem flags, and the net-to-profiler callback.
 * Facts in docs/nccl-abi.md#net-callback and #results-and-logging; our names; every layout is checked in
 * layout_asserts.h. Plain C so that C plugins and tools can include it too. */
#ifndef NCCLSCOPE_ABI_COMMON_H_
#define NCCLSCOPE_ABI_COMMON_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL passes these enums as plain ints and may pass values we do not know (a newer state, say). In C++
 * an enum without a fixed underlying type cannot hold such values (UBSan flags the load), so C++ sees
 * them with `int` as the underlying type; the layout is identical. */
#ifdef __cplusplus
#define NCCLSCOPE_INT_ENUM enum : int
#else
#define NCCLSCOPE_INT_ENUM enum
#endif

/* ncclResult_t. NCCL_TIMEOUT exists from NCCL 2.30 on; never return it to 2.28. */
typedef NCCLSCOPE_INT_ENUM {
  NCCLSCOPE_SUCCESS = 0,
  NCCLSCOPE_UNHANDLED_CUDA_ERROR = 1,
  NCCLSCOPE_SYSTEM_ERROR = 2,
  NCCLSCOPE_INTERNAL_ERROR = 3,
  NCCLSCOPE_INVALID_ARGUMENT = 4,
  NCCLSCOPE_INVALID_USAGE = 5,
  NCCLSCOPE_REMOTE_ERROR = 6,
  NCCLSCOPE_IN_PROGRESS = 7,
  NCCLSCOPE_TIMEOUT = 8
} ncclscope_result_t;

/* ncclDebugLogLevel. */
typedef NCCLSCOPE_INT_ENUM {
  NCCLSCOPE_LOG_NONE = 0,
  NCCLSCOPE_LOG_VERSION = 1,
  NCCLSCOPE_LOG_WARN = 2,
  NCCLSCOPE_LOG_INFO = 3,
  NCCLSCOPE_LOG_ABORT = 4,
  NCCLSCOPE_LOG_TRACE = 5
} ncclscope_log_level_t;

/* ncclDebugLogSubSys bits, filtered by NCCL_DEBUG_SUBSYS. */
#define NCCLSCOPE_SUBSYS_INIT 0x1UL
#define NCCLSCOPE_SUBSYS_COLL 0x2UL
#define NCCLSCOPE_SUBSYS_P2P 0x4UL
#define NCCLSCOPE_SUBSYS_NET 0x10UL
#define NCCLSCOPE_SUBSYS_ENV 0x80UL
#define NCCLSCOPE_SUBSYS_PROXY 0x400UL
#define NCCLSCOPE_SUBSYS_PROFILE 0x4000UL
#define NCCLSCOPE_SUBSYS_ALL (~0UL)

/* ncclDebugLogger_t: NCCL's logger, passed to every init; not exported by libnccl. */
typedef void (*ncclscope_logger_t)(ncclscope_log_level_t level, unsigned long flags, const char* filefunc,
                                   int line, const char* fmt, ...);

/* ncclProfilerCallback_t: how a net plugin (v10+) raises NetPlugin profiler events. */
typedef ncclscope_result_t (*ncclscope_profiler_callback_t)(void** eHandle, int type, void* pHandle,
                                                            int64_t pluginId, void* extData);

/* Callback `type` values. */
#define NCCLSCOPE_NET_EVENT_START 0
#define NCCLSCOPE_NET_EVENT_STOP 1
#define NCCLSCOPE_NET_EVENT_UPDATE 2
#define NCCLSCOPE_NET_EVENT_UPDATE_AND_STOP 3

/* Plugin-id encoding: bits 0-15 the descriptor version, bits 16-31 the network type. */
#define NCCLSCOPE_NET_PLUGIN_VER_MASK 0xFFFFLL
#define NCCLSCOPE_NET_PLUGIN_TYPE_MASK 0xFFFF0000LL
#define NCCLSCOPE_NET_PLUGIN_TYPE_IB 0x10000LL
#define NCCLSCOPE_NET_PLUGIN_TYPE_SOCK 0x20000LL
/* Not an NCCL value: ncclscope's own verbs transport (IB-style QP descriptor); its events are counted by the net
   half, so the profiler half must not count them as NCCL IB events (0x10000). */
#define NCCLSCOPE_NET_PLUGIN_TYPE_NCCLSCOPE_VERBS 0x30000LL

/* ncclProfilerNetSockDescr_v1_t: the socket-style NetPlugin descriptor (id 0x20001). */
#define NCCLSCOPE_NET_SOCK_DESCR_TYPE 1
typedef struct {
  uint8_t type;
  struct {
    int fd;
    int op; /* 0 = send, 1 = receive */
    size_t length;
  } sock;
} ncclscope_net_sock_descr_v1_t;

/* ncclProfilerNetIbDescr_v1_t: the IB-style NetPlugin descriptor (id 0x10001). */
#define NCCLSCOPE_NET_IB_DESCR_TYPE_QP 1
typedef struct {
  uint8_t type;
  struct {
    int device;
    uint64_t wr_id;
    int opcode;
    int qpNum;
    size_t length;
  } qp;
} ncclscope_net_ib_descr_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* NCCLSCOPE_ABI_COMMON_H_ */

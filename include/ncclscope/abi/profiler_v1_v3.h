/* ncclscope's own declarations of NCCL's oldest profiler-plugin tables, ncclProfiler_v1 (NCCL 2.23), _v2
 * (2.24-2.25) and _v3 (2.26), with our names (docs/nccl-abi.md#profiler-table, sections 2.4, 2.5, 2.9).
 * What sets them apart from v4+: init carries no communicator (only the context and the mask), the Coll and
 * P2p arms carry the communicator's name and hash instead, and the state arguments are a 16-byte union. v1
 * passes func, datatype, algo and proto as NCCL's enum values, v2 and v3 as strings. Offsets and sizes are
 * checked in layout_asserts.h. Seen by src/plugin/profiler's v1-v3 adapters, the tools and the tests. */
#ifndef NCCLSCOPE_ABI_PROFILER_V1_V3_H_
#define NCCLSCOPE_ABI_PROFILER_V1_V3_H_

#include "ncclscope/abi/profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ncclProfilerEventStateArgs_v1..v3_t (16 bytes). NCCL passes the ProxyStep states' arguments zeroed; only
 * appendedProxyOps is ever filled. */
typedef union {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
} ncclscope_profiler_state_args_v1_t;

/* v1's enum values (NCCL's ncclFunc_t, ncclDataType_t, NCCL_ALGO_*, NCCL_PROTO_*) as NCCL 2.23 numbers them. */
enum {
  NCCLSCOPE_V1_FUNC_BROADCAST = 0,
  NCCLSCOPE_V1_FUNC_REDUCE = 1,
  NCCLSCOPE_V1_FUNC_ALL_GATHER = 2,
  NCCLSCOPE_V1_FUNC_REDUCE_SCATTER = 3,
  NCCLSCOPE_V1_FUNC_ALL_REDUCE = 4,
  NCCLSCOPE_V1_FUNC_SEND_RECV = 5,
  NCCLSCOPE_V1_FUNC_SEND = 6,
  NCCLSCOPE_V1_FUNC_RECV = 7
};

/* ncclProfilerEventDescr_v1_t (120 bytes). Coll/P2p parentObj is the Group event. */
typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name; /* the communicator's name */
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype;
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;
      uint8_t proto;
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      uint8_t func;
      void* buff;
      uint8_t datatype;
      size_t count;
      int peer;
    } p2p;
    ncclscope_profiler_proxy_op_arm_t proxyOp;
    ncclscope_profiler_proxy_step_arm_t proxyStep;
  };
} ncclscope_profiler_descr_v1_t;

/* The P2p arm of v2 and v3. */
typedef struct {
  const char* name;
  uint64_t commHash;
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
} ncclscope_profiler_p2p_arm_v2_t;

/* ncclProfilerEventDescr_v2_t (128 bytes): v1 with strings, without op/isCollnet/isNvls. */
typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    ncclscope_profiler_p2p_arm_v2_t p2p;
    ncclscope_profiler_proxy_op_arm_t proxyOp;
    ncclscope_profiler_proxy_step_arm_t proxyStep;
  };
} ncclscope_profiler_descr_v2_t;

/* ncclProfilerEventDescr_v3_t (120 bytes): v2 without trafficBytes; KernelCh (no timer) and NetPlugin arms. */
typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    ncclscope_profiler_p2p_arm_v2_t p2p;
    ncclscope_profiler_proxy_op_arm_t proxyOp;
    ncclscope_profiler_proxy_step_arm_t proxyStep;
    struct {
      uint8_t channelId;
    } kernelCh;
    ncclscope_profiler_net_plugin_arm_t netPlugin;
  };
} ncclscope_profiler_descr_v3_t;

/* ncclProfiler_v1_t .. _v3_t (48 bytes): init knows no communicator and gets no logger. */
#define NCCLSCOPE_PROFILER_V1_V3_SLOTS(DESCR)                                                              \
  const char* name;                                                                                        \
  ncclscope_result_t (*init)(void** context, int* eActivationMask);                                       \
  ncclscope_result_t (*startEvent)(void* context, void** eHandle, DESCR* eDescr);                         \
  ncclscope_result_t (*stopEvent)(void* eHandle);                                                          \
  ncclscope_result_t (*recordEventState)(void* eHandle, ncclscope_profiler_state_t eState,                \
                                         ncclscope_profiler_state_args_v1_t* eStateArgs);                 \
  ncclscope_result_t (*finalize)(void* context)

typedef struct {
  NCCLSCOPE_PROFILER_V1_V3_SLOTS(ncclscope_profiler_descr_v1_t);
} ncclscope_profiler_v1_t;
typedef struct {
  NCCLSCOPE_PROFILER_V1_V3_SLOTS(ncclscope_profiler_descr_v2_t);
} ncclscope_profiler_v2_t;
typedef struct {
  NCCLSCOPE_PROFILER_V1_V3_SLOTS(ncclscope_profiler_descr_v3_t);
} ncclscope_profiler_v3_t;

#ifdef __cplusplus
}
#endif

#endif /* NCCLSCOPE_ABI_PROFILER_V1_V3_H_ */

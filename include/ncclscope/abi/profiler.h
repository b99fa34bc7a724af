/* ncclscope's own declarations of NCCL's profiler-plugin tables v4-v7 (ncclProfiler_vN_t; v1-v3 are in
 * profiler_v1_v3.h), their event
 * descriptors, state enum and state arguments, with our names (docs/nccl-abi.md#profiler-table).
 * Offsets and sizes are checked in layout_asserts.h. Seen by the adapters of src/plugin/profiler (the
 * profiler core below them never sees NCCL's structs), the tools and the tests. */
#ifndef NCCLSCOPE_ABI_PROFILER_H_
#define NCCLSCOPE_ABI_PROFILER_H_

#include <sys/types.h>

#include "ncclscope/abi/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Event type bits: a descriptor's `type` holds exactly one; the activation mask ORs them. */
enum {
  NCCLSCOPE_PROFILE_GROUP = 0x1,
  NCCLSCOPE_PROFILE_COLL = 0x2,
  NCCLSCOPE_PROFILE_P2P = 0x4,
  NCCLSCOPE_PROFILE_PROXY_OP = 0x8,
  NCCLSCOPE_PROFILE_PROXY_STEP = 0x10,
  NCCLSCOPE_PROFILE_PROXY_CTRL = 0x20,
  NCCLSCOPE_PROFILE_KERNEL_CH = 0x40,
  NCCLSCOPE_PROFILE_NET_PLUGIN = 0x80,
  NCCLSCOPE_PROFILE_GROUP_API = 0x100,     /* v5+ */
  NCCLSCOPE_PROFILE_COLL_API = 0x200,      /* v5+ */
  NCCLSCOPE_PROFILE_P2P_API = 0x400,       /* v5+ */
  NCCLSCOPE_PROFILE_KERNEL_LAUNCH = 0x800, /* v5+ */
  NCCLSCOPE_PROFILE_CE_COLL = 0x1000,      /* v6 */
  NCCLSCOPE_PROFILE_CE_SYNC = 0x2000,      /* v6 */
  NCCLSCOPE_PROFILE_CE_BATCH = 0x4000,     /* v6 */
  NCCLSCOPE_PROFILE_KERNEL_PHASE = 0x8000  /* v7: a kernel channel's barrier phases, children of KernelCh */
};

/* ncclProfilerEventState_t: one numbering for every version, passed as an int-sized enum. */
typedef NCCLSCOPE_INT_ENUM {
  NCCLSCOPE_STATE_PROXY_OP_SEND_POSTED = 0, /* 0-7: deprecated, not emitted since v4 */
  NCCLSCOPE_STATE_PROXY_OP_RECV_DONE = 7,
  NCCLSCOPE_STATE_PROXY_STEP_SEND_GPU_WAIT = 8,
  NCCLSCOPE_STATE_PROXY_STEP_SEND_WAIT = 9,
  NCCLSCOPE_STATE_PROXY_STEP_RECV_WAIT = 10,
  NCCLSCOPE_STATE_PROXY_STEP_RECV_FLUSH_WAIT = 11,
  NCCLSCOPE_STATE_PROXY_STEP_RECV_GPU_WAIT = 12,
  NCCLSCOPE_STATE_PROXY_CTRL_IDLE = 13,
  NCCLSCOPE_STATE_PROXY_CTRL_ACTIVE = 14,
  NCCLSCOPE_STATE_PROXY_CTRL_SLEEP = 15,
  NCCLSCOPE_STATE_PROXY_CTRL_WAKEUP = 16,
  NCCLSCOPE_STATE_PROXY_CTRL_APPEND = 17,
  NCCLSCOPE_STATE_PROXY_CTRL_APPEND_END = 18,
  NCCLSCOPE_STATE_PROXY_OP_IN_PROGRESS = 19,
  NCCLSCOPE_STATE_PROXY_STEP_SEND_PEER_WAIT = 20,
  NCCLSCOPE_STATE_NET_PLUGIN_UPDATE = 21,
  NCCLSCOPE_STATE_KERNEL_CH_STOP = 22,
  NCCLSCOPE_STATE_GROUP_START_API_STOP = 23, /* state args are NULL */
  NCCLSCOPE_STATE_GROUP_END_API_START = 24,  /* state args are NULL */
  NCCLSCOPE_STATE_CE_COLL_START = 25,        /* 25-30: v6, defined but never emitted by 2.30 */
  NCCLSCOPE_STATE_CE_BATCH_COMPLETE = 30,
  NCCLSCOPE_STATE_KERNEL_PHASE_STOP = 31 /* v7: stop time in the kernelCh state argument */
} ncclscope_profiler_state_t;

/* ncclProfilerEventStateArgs_v4..v6_t (8 bytes, every arm at offset 0). */
typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
} ncclscope_profiler_state_args_t;

/* Arms shared by v4, v5 and v6 at identical offsets. */
typedef struct {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
} ncclscope_profiler_proxy_op_arm_t;

typedef struct {
  int step;
} ncclscope_profiler_proxy_step_arm_t;

typedef struct {
  uint8_t channelId;
  uint64_t pTimer; /* GPU %globaltimer, ns */
} ncclscope_profiler_kernel_ch_arm_t;

typedef struct {
  int64_t id;
  void* data;
} ncclscope_profiler_net_plugin_arm_t;

/* ncclProfilerEventDescr_v4_t (104 bytes). Coll/P2p parentObj is the Group event. */
typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    ncclscope_profiler_proxy_op_arm_t proxyOp;
    ncclscope_profiler_proxy_step_arm_t proxyStep;
    ncclscope_profiler_kernel_ch_arm_t kernelCh;
    ncclscope_profiler_net_plugin_arm_t netPlugin;
  };
} ncclscope_profiler_descr_v4_t;

/* The arms of v5; v6 adds the copy-engine arms after them at the same offsets. */
#define NCCLSCOPE_PROFILER_V5_ARMS                                                                          \
  struct {                                                                                                  \
    bool graphCaptured;                                                                                     \
    int groupDepth;                                                                                         \
  } groupApi;                                                                                               \
  struct {                                                                                                  \
    const char* func;                                                                                       \
    size_t count;                                                                                           \
    const char* datatype;                                                                                   \
    int root;                                                                                               \
    void* stream;                                                                                           \
    bool graphCaptured;                                                                                     \
  } collApi;                                                                                                \
  struct {                                                                                                  \
    const char* func;                                                                                       \
    size_t count;                                                                                           \
    const char* datatype;                                                                                   \
    void* stream;                                                                                           \
    bool graphCaptured;                                                                                     \
  } p2pApi;                                                                                                 \
  struct {                                                                                                  \
    void* stream;                                                                                           \
  } kernelLaunch;                                                                                           \
  struct {                                                                                                  \
    uint64_t seqNumber;                                                                                     \
    const char* func;                                                                                       \
    const void* sendBuff;                                                                                   \
    void* recvBuff;                                                                                         \
    size_t count;                                                                                           \
    int root;                                                                                               \
    const char* datatype;                                                                                   \
    uint8_t nChannels;                                                                                      \
    uint8_t nWarps;                                                                                         \
    const char* algo;                                                                                       \
    const char* proto;                                                                                      \
    void* parentGroup;                                                                                      \
  } coll;                                                                                                   \
  struct {                                                                                                  \
    const char* func;                                                                                       \
    void* buff;                                                                                             \
    const char* datatype;                                                                                   \
    size_t count;                                                                                           \
    int peer;                                                                                               \
    uint8_t nChannels;                                                                                      \
    void* parentGroup;                                                                                      \
  } p2p;                                                                                                    \
  ncclscope_profiler_proxy_op_arm_t proxyOp;                                                                \
  ncclscope_profiler_proxy_step_arm_t proxyStep;                                                            \
  ncclscope_profiler_kernel_ch_arm_t kernelCh;                                                              \
  ncclscope_profiler_net_plugin_arm_t netPlugin;

/* ncclProfilerEventDescr_v5_t (112 bytes). Coll/P2p parentObj is the CollApi/P2pApi event. */
typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    NCCLSCOPE_PROFILER_V5_ARMS
  };
} ncclscope_profiler_descr_v5_t;

/* ncclProfilerEventDescr_v6_t (112 bytes): v5 plus the copy-engine arms. */
typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    NCCLSCOPE_PROFILER_V5_ARMS
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncclscope_profiler_descr_v6_t;

/* ncclProfilerEventDescr_v7_t (136 bytes): every arm of v6, plus an opaque 64-bit user tag (0 = untagged; the
 * top bit is NCCL's) at the end of collApi, p2pApi, coll, p2p and ceColl, the kernel variant and symmetric flag
 * on coll, and the kernelPhase arm. The arms that grow are spelled out; the others are v5's. */
typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
      uint64_t userTag;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
      uint64_t userTag;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
      const char* kernelVariant;
      bool isSymColl;
      uint64_t userTag;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
      uint64_t userTag;
    } p2p;
    ncclscope_profiler_proxy_op_arm_t proxyOp;
    ncclscope_profiler_proxy_step_arm_t proxyStep;
    ncclscope_profiler_kernel_ch_arm_t kernelCh;
    ncclscope_profiler_net_plugin_arm_t netPlugin;
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
      uint64_t userTag;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
    struct {
      uint8_t channelId;
      uint8_t phaseId; /* 0 initial_sync, 1 compute, 2 final_sync */
      const char* phaseName;
      uint64_t pTimer; /* start, GPU %globaltimer */
    } kernelPhase;
  };
} ncclscope_profiler_descr_v7_t;

/* ncclProfiler_v4_t (48 bytes). */
typedef struct {
  const char* name;
  ncclscope_result_t (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash,
                             int nNodes, int nranks, int rank, ncclscope_logger_t logfn);
  ncclscope_result_t (*startEvent)(void* context, void** eHandle, ncclscope_profiler_descr_v4_t* eDescr);
  ncclscope_result_t (*stopEvent)(void* eHandle);
  ncclscope_result_t (*recordEventState)(void* eHandle, ncclscope_profiler_state_t eState,
                                         ncclscope_profiler_state_args_t* eStateArgs);
  ncclscope_result_t (*finalize)(void* context);
} ncclscope_profiler_v4_t;

/* ncclProfiler_v5_t and _v6_t (48 bytes): init's arguments are reordered, commId second. */
#define NCCLSCOPE_PROFILER_V5_V6_SLOTS(DESCR)                                                               \
  const char* name;                                                                                         \
  ncclscope_result_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,  \
                             int nNodes, int nranks, int rank, ncclscope_logger_t logfn);                   \
  ncclscope_result_t (*startEvent)(void* context, void** eHandle, DESCR* eDescr);                           \
  ncclscope_result_t (*stopEvent)(void* eHandle);                                                           \
  ncclscope_result_t (*recordEventState)(void* eHandle, ncclscope_profiler_state_t eState,                  \
                                         ncclscope_profiler_state_args_t* eStateArgs);                      \
  ncclscope_result_t (*finalize)(void* context);

typedef struct {
  NCCLSCOPE_PROFILER_V5_V6_SLOTS(ncclscope_profiler_descr_v5_t)
} ncclscope_profiler_v5_t;

typedef struct {
  NCCLSCOPE_PROFILER_V5_V6_SLOTS(ncclscope_profiler_descr_v6_t)
} ncclscope_profiler_v6_t;

/* ncclProfiler_v7_t (48 bytes): v6's slots over the v7 descriptor. */
typedef struct {
  NCCLSCOPE_PROFILER_V5_V6_SLOTS(ncclscope_profiler_descr_v7_t)
} ncclscope_profiler_v7_t;

/* What ncclscope exports as ncclProfiler_v7: the table, then null slots. Some NCCL and RCCL trees' v7 tables
 * append optional function pointers after finalize (a device-hook getter; device FIFO create/destroy) that their
 * loader reads and calls when not null; past a bare 48-byte table it would read whatever the linker put next. */
typedef struct {
  ncclscope_profiler_v7_t table;
  const void* optional_slots[4]; /* always null */
} ncclscope_profiler_v7_export_t;

#ifdef __cplusplus
}
#endif

#endif /* NCCLSCOPE_ABI_PROFILER_H_ */

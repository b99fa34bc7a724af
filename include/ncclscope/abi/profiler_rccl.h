/* RCCL's variants of the profiler v6/v7 layouts, declared from the comparison in docs/nccl-integration.md#rccl
 * (our own structs, our names). RCCL (ROCm) exports the same symbol names as NCCL but its copies of the v7 header
 * differ across releases:
 *  - "appended": NVIDIA's v7 descriptor as a prefix, RCCL's proxy-trace fields appended to the ProxyOp arm
 *    (still inside the 136-byte union), a 24-byte state-args union with a proxyDiag arm, and a ProxyDiag event
 *    bit and state numbered after NVIDIA's (1 << 16, state 32);
 *  - "untagged": v7 without any userTag (Coll ends at isSymColl, 128 bytes), no proxy-trace fields;
 *  - RCCL's v6 (no v7 at all): the appended ProxyOp arm and proxyDiag, with ProxyDiag on 1 << 15 and state 31,
 *    the bit and state NVIDIA's v7 gives KernelPhase.
 * Offsets and sizes are checked in layout_asserts.h. */
#ifndef NCCLSCOPE_ABI_PROFILER_RCCL_H_
#define NCCLSCOPE_ABI_PROFILER_RCCL_H_

#include "ncclscope/abi/profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  NCCLSCOPE_RCCL_PROFILE_PROXY_DIAG = 0x10000,   /* RCCL with v7: proxy FIFO/counter diagnostics */
  NCCLSCOPE_RCCL_V6_PROFILE_PROXY_DIAG = 0x8000, /* RCCL with v6 only: the same, on NVIDIA's KernelPhase bit */
  NCCLSCOPE_RCCL_STATE_PROXY_DIAG_UPDATE = 32,   /* RCCL with v7, on a ProxyOp handle, args in proxyDiag */
  NCCLSCOPE_RCCL_V6_STATE_PROXY_DIAG_UPDATE = 31 /* RCCL with v6 only: NVIDIA's KernelPhaseStop number */
};

/* RCCL's ProxyOp arm: NVIDIA's six fields, then the proxy-trace fields RCCL fills only while its ProxyDiag bit
 * is set (zero otherwise). ncclscope reads the first six only. */
typedef struct {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
  uint64_t commHash;
  int64_t opCount;
  int32_t traceFuncIdx;
  int32_t traceProtocol;
  int32_t tracePattern;
  uint32_t traceTotalBytes;
  uint32_t proxyNbytes;
  int32_t rawProxyNsteps;
} ncclscope_profiler_rccl_proxy_op_arm_t;

/* RCCL's "appended" v7 descriptor (136 bytes, as NVIDIA's): every arm but proxyOp is NVIDIA's v7 arm at the same
 * offset (read them through ncclscope_profiler_descr_v7_t); `v7_arms` only sizes the union. */
typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    ncclscope_profiler_rccl_proxy_op_arm_t proxyOp;
    unsigned char v7_arms[112];
  };
} ncclscope_profiler_rccl_descr_v7_t;

/* RCCL's "untagged" v7 descriptor (128 bytes): v6's arms at v6's offsets, Coll's kernelVariant and isSymColl, the
 * kernelPhase arm, and no userTag anywhere. Reading NVIDIA's coll.userTag (offset 128) from it reads past its end. */
typedef struct {
  uint64_t type;
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
      void* parentGroup;
      const char* kernelVariant;
      bool isSymColl;
    } coll;
    struct {
      uint8_t channelId;
      uint8_t phaseId;
      const char* phaseName;
      uint64_t pTimer;
    } kernelPhase;
    unsigned char v6_arms[88];
  };
} ncclscope_profiler_rccl_descr_v7_untagged_t;

/* RCCL's state-args union (v6 and v7; 24 bytes, NVIDIA's is 8): NVIDIA's four arms at offset 0, plus proxyDiag.
 * ncclscope reads at most the first 8 bytes and copies none. */
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
  struct {
    uint8_t counterKind;
    uint8_t reserved;
    uint16_t flags; /* bit 0: RCCL records a wall-clock time with the counter */
    int64_t value;
    int64_t value2;
  } proxyDiag;
} ncclscope_profiler_rccl_state_args_t;

#ifdef __cplusplus
}
#endif

#endif /* NCCLSCOPE_ABI_PROFILER_RCCL_H_ */

/* Every offset and size of our ABI headers, checked for x86-64 LP64
 * (docs/nccl-abi.md#layouts). Included by every ABI adapter and by a C translation
 * unit, so a layout slip fails the build in both languages. */
#ifndef NCCLSCOPE_ABI_LAYOUT_ASSERTS_H_
#define NCCLSCOPE_ABI_LAYOUT_ASSERTS_H_

#include <stddef.h>

#include "ncclscope/abi/common.h"
#include "ncclscope/abi/net.h"
#include "ncclscope/abi/profiler.h"
#include "ncclscope/abi/profiler_rccl.h"
#include "ncclscope/abi/profiler_v1_v3.h"

#ifdef __cplusplus
#define NCCLSCOPE_LAYOUT(cond, what) static_assert(cond, what)
#else
#define NCCLSCOPE_LAYOUT(cond, what) _Static_assert(cond, what)
#endif
#define NCCLSCOPE_OFF(T, f, off) NCCLSCOPE_LAYOUT(offsetof(T, f) == (off), #T "." #f " offset")
#define NCCLSCOPE_SIZE(T, n) NCCLSCOPE_LAYOUT(sizeof(T) == (n), #T " size")

/* §4 NetPlugin descriptors. */
NCCLSCOPE_SIZE(ncclscope_net_sock_descr_v1_t, 24);
NCCLSCOPE_OFF(ncclscope_net_sock_descr_v1_t, sock.fd, 8);
NCCLSCOPE_OFF(ncclscope_net_sock_descr_v1_t, sock.op, 12);
NCCLSCOPE_OFF(ncclscope_net_sock_descr_v1_t, sock.length, 16);
NCCLSCOPE_SIZE(ncclscope_net_ib_descr_v1_t, 40);
NCCLSCOPE_OFF(ncclscope_net_ib_descr_v1_t, qp.device, 8);
NCCLSCOPE_OFF(ncclscope_net_ib_descr_v1_t, qp.wr_id, 16);
NCCLSCOPE_OFF(ncclscope_net_ib_descr_v1_t, qp.opcode, 24);
NCCLSCOPE_OFF(ncclscope_net_ib_descr_v1_t, qp.qpNum, 28);
NCCLSCOPE_OFF(ncclscope_net_ib_descr_v1_t, qp.length, 32);

/* §3.3 auxiliary types. */
NCCLSCOPE_SIZE(ncclscope_net_device_handle_t, 32);
NCCLSCOPE_OFF(ncclscope_net_device_handle_t, netDeviceVersion, 4);
NCCLSCOPE_OFF(ncclscope_net_device_handle_t, handle, 8);
NCCLSCOPE_OFF(ncclscope_net_device_handle_t, size, 16);
NCCLSCOPE_OFF(ncclscope_net_device_handle_t, needsProxyProgress, 24);
NCCLSCOPE_SIZE(ncclscope_net_comm_config_t, 4);
NCCLSCOPE_SIZE(ncclscope_net_vdevice_props_v9_t, 20);
NCCLSCOPE_SIZE(ncclscope_net_vdevice_props_v12_t, 36);
NCCLSCOPE_SIZE(ncclscope_net_attr_t, 44);
NCCLSCOPE_OFF(ncclscope_net_attr_t, recvCommAttr, 16);
NCCLSCOPE_OFF(ncclscope_net_attr_t, op, 32);
NCCLSCOPE_OFF(ncclscope_net_attr_t, algo, 36);
NCCLSCOPE_OFF(ncclscope_net_attr_t, proto, 40);

/* §3.2 properties. */
NCCLSCOPE_SIZE(ncclscope_net_properties_v8_t, 64);
NCCLSCOPE_OFF(ncclscope_net_properties_v8_t, pciPath, 8);
NCCLSCOPE_OFF(ncclscope_net_properties_v8_t, guid, 16);
NCCLSCOPE_OFF(ncclscope_net_properties_v8_t, ptrSupport, 24);
NCCLSCOPE_OFF(ncclscope_net_properties_v8_t, regIsGlobal, 28);
NCCLSCOPE_OFF(ncclscope_net_properties_v8_t, speed, 32);
NCCLSCOPE_OFF(ncclscope_net_properties_v8_t, port, 36);
NCCLSCOPE_OFF(ncclscope_net_properties_v8_t, latency, 40);
NCCLSCOPE_OFF(ncclscope_net_properties_v8_t, maxComms, 44);
NCCLSCOPE_OFF(ncclscope_net_properties_v8_t, maxRecvs, 48);
NCCLSCOPE_OFF(ncclscope_net_properties_v8_t, netDeviceType, 52);
NCCLSCOPE_OFF(ncclscope_net_properties_v8_t, netDeviceVersion, 56);

#define NCCLSCOPE_PROPS_V9_PREFIX(T)        \
  NCCLSCOPE_OFF(T, pciPath, 8);             \
  NCCLSCOPE_OFF(T, guid, 16);               \
  NCCLSCOPE_OFF(T, ptrSupport, 24);         \
  NCCLSCOPE_OFF(T, regIsGlobal, 28);        \
  NCCLSCOPE_OFF(T, forceFlush, 32);         \
  NCCLSCOPE_OFF(T, speed, 36);              \
  NCCLSCOPE_OFF(T, port, 40);               \
  NCCLSCOPE_OFF(T, latency, 44);            \
  NCCLSCOPE_OFF(T, maxComms, 48);           \
  NCCLSCOPE_OFF(T, maxRecvs, 52);           \
  NCCLSCOPE_OFF(T, netDeviceType, 56);      \
  NCCLSCOPE_OFF(T, netDeviceVersion, 60);   \
  NCCLSCOPE_OFF(T, vProps, 64)

NCCLSCOPE_PROPS_V9_PREFIX(ncclscope_net_properties_v9_t);
NCCLSCOPE_OFF(ncclscope_net_properties_v9_t, maxP2pBytes, 88);
NCCLSCOPE_OFF(ncclscope_net_properties_v9_t, maxCollBytes, 96);
NCCLSCOPE_SIZE(ncclscope_net_properties_v9_t, 104);

NCCLSCOPE_PROPS_V9_PREFIX(ncclscope_net_properties_v11_t);
NCCLSCOPE_OFF(ncclscope_net_properties_v11_t, maxP2pBytes, 88);
NCCLSCOPE_OFF(ncclscope_net_properties_v11_t, maxCollBytes, 96);
NCCLSCOPE_OFF(ncclscope_net_properties_v11_t, maxMultiRequestSize, 104);
NCCLSCOPE_SIZE(ncclscope_net_properties_v11_t, 112);

NCCLSCOPE_PROPS_V9_PREFIX(ncclscope_net_properties_v12_t);
NCCLSCOPE_OFF(ncclscope_net_properties_v12_t, maxP2pBytes, 104);
NCCLSCOPE_OFF(ncclscope_net_properties_v12_t, maxCollBytes, 112);
NCCLSCOPE_OFF(ncclscope_net_properties_v12_t, maxMultiRequestSize, 120);
NCCLSCOPE_OFF(ncclscope_net_properties_v12_t, railId, 124);
NCCLSCOPE_OFF(ncclscope_net_properties_v12_t, planeId, 126);
NCCLSCOPE_SIZE(ncclscope_net_properties_v12_t, 128);

/* §3.1 function tables: slot k lives at 8 * k. */
#define NCCLSCOPE_SLOT(T, f, k) NCCLSCOPE_OFF(T, f, 8 * (k))
#define NCCLSCOPE_NET_SLOTS_V8(T)       \
  NCCLSCOPE_SLOT(T, init, 1);           \
  NCCLSCOPE_SLOT(T, devices, 2);        \
  NCCLSCOPE_SLOT(T, getProperties, 3);  \
  NCCLSCOPE_SLOT(T, listen, 4);         \
  NCCLSCOPE_SLOT(T, connect, 5);        \
  NCCLSCOPE_SLOT(T, accept, 6);         \
  NCCLSCOPE_SLOT(T, regMr, 7);          \
  NCCLSCOPE_SLOT(T, regMrDmaBuf, 8);    \
  NCCLSCOPE_SLOT(T, deregMr, 9);        \
  NCCLSCOPE_SLOT(T, isend, 10);         \
  NCCLSCOPE_SLOT(T, irecv, 11);         \
  NCCLSCOPE_SLOT(T, iflush, 12);        \
  NCCLSCOPE_SLOT(T, test, 13);          \
  NCCLSCOPE_SLOT(T, closeSend, 14);     \
  NCCLSCOPE_SLOT(T, closeRecv, 15);     \
  NCCLSCOPE_SLOT(T, closeListen, 16);   \
  NCCLSCOPE_SLOT(T, getDeviceMr, 17);   \
  NCCLSCOPE_SLOT(T, irecvConsumed, 18)

NCCLSCOPE_NET_SLOTS_V8(ncclscope_net_v8_t);
NCCLSCOPE_SIZE(ncclscope_net_v8_t, 152);
NCCLSCOPE_NET_SLOTS_V8(ncclscope_net_v9_t);
NCCLSCOPE_SLOT(ncclscope_net_v9_t, makeVDevice, 19);
NCCLSCOPE_SIZE(ncclscope_net_v9_t, 160);
NCCLSCOPE_NET_SLOTS_V8(ncclscope_net_v10_t);
NCCLSCOPE_SLOT(ncclscope_net_v10_t, makeVDevice, 19);
NCCLSCOPE_SIZE(ncclscope_net_v10_t, 160);
NCCLSCOPE_NET_SLOTS_V8(ncclscope_net_v11_t);
NCCLSCOPE_SLOT(ncclscope_net_v11_t, makeVDevice, 19);
NCCLSCOPE_SLOT(ncclscope_net_v11_t, finalize, 20);
NCCLSCOPE_SLOT(ncclscope_net_v11_t, setNetAttr, 21);
NCCLSCOPE_SIZE(ncclscope_net_v11_t, 176);
NCCLSCOPE_NET_SLOTS_V8(ncclscope_net_v12_t);
NCCLSCOPE_SLOT(ncclscope_net_v12_t, makeVDevice, 19);
NCCLSCOPE_SLOT(ncclscope_net_v12_t, finalize, 20);
NCCLSCOPE_SLOT(ncclscope_net_v12_t, setNetAttr, 21);
NCCLSCOPE_SIZE(ncclscope_net_v12_t, 176);

/* §2.1 profiler tables: 6 slots, 48 bytes in every version. */
#define NCCLSCOPE_PROFILER_SLOTS(T)          \
  NCCLSCOPE_SLOT(T, init, 1);                \
  NCCLSCOPE_SLOT(T, startEvent, 2);          \
  NCCLSCOPE_SLOT(T, stopEvent, 3);           \
  NCCLSCOPE_SLOT(T, recordEventState, 4);    \
  NCCLSCOPE_SLOT(T, finalize, 5);            \
  NCCLSCOPE_SIZE(T, 48)
NCCLSCOPE_PROFILER_SLOTS(ncclscope_profiler_v1_t);
NCCLSCOPE_PROFILER_SLOTS(ncclscope_profiler_v2_t);
NCCLSCOPE_PROFILER_SLOTS(ncclscope_profiler_v3_t);
NCCLSCOPE_PROFILER_SLOTS(ncclscope_profiler_v4_t);
NCCLSCOPE_PROFILER_SLOTS(ncclscope_profiler_v5_t);
NCCLSCOPE_PROFILER_SLOTS(ncclscope_profiler_v6_t);
NCCLSCOPE_PROFILER_SLOTS(ncclscope_profiler_v7_t);
/* The exported v7 table: null slots right after finalize, where variant v7 tables keep optional hooks. */
NCCLSCOPE_OFF(ncclscope_profiler_v7_export_t, optional_slots, 48);
NCCLSCOPE_SIZE(ncclscope_profiler_v7_export_t, 80);

/* §2.5 state args. */
NCCLSCOPE_SIZE(ncclscope_profiler_state_args_t, 8);
NCCLSCOPE_SIZE(ncclscope_profiler_state_t, 4);
NCCLSCOPE_SIZE(ncclscope_profiler_state_args_v1_t, 16);
NCCLSCOPE_OFF(ncclscope_profiler_state_args_v1_t, proxyOp.transSize, 0);
NCCLSCOPE_OFF(ncclscope_profiler_state_args_v1_t, proxyOp.steps, 8);
NCCLSCOPE_OFF(ncclscope_profiler_state_args_v1_t, proxyCtrl.appendedProxyOps, 0);

/* §2.4 descriptors v1-v3: the header and the proxy arms as in v4+, Coll/P2p naming the communicator. */
#define NCCLSCOPE_DESCR_V1_V3_COMMON(T)           \
  NCCLSCOPE_OFF(T, parentObj, 8);                 \
  NCCLSCOPE_OFF(T, rank, 16);                     \
  NCCLSCOPE_OFF(T, coll.name, 24);                \
  NCCLSCOPE_OFF(T, coll.commHash, 32);            \
  NCCLSCOPE_OFF(T, coll.seqNumber, 40);           \
  NCCLSCOPE_OFF(T, coll.func, 48);                \
  NCCLSCOPE_OFF(T, coll.sendBuff, 56);            \
  NCCLSCOPE_OFF(T, coll.recvBuff, 64);            \
  NCCLSCOPE_OFF(T, coll.count, 72);               \
  NCCLSCOPE_OFF(T, coll.root, 80);                \
  NCCLSCOPE_OFF(T, p2p.name, 24);                 \
  NCCLSCOPE_OFF(T, p2p.commHash, 32);             \
  NCCLSCOPE_OFF(T, p2p.func, 40);                 \
  NCCLSCOPE_OFF(T, p2p.buff, 48);                 \
  NCCLSCOPE_OFF(T, p2p.datatype, 56);             \
  NCCLSCOPE_OFF(T, p2p.count, 64);                \
  NCCLSCOPE_OFF(T, p2p.peer, 72);                 \
  NCCLSCOPE_OFF(T, proxyOp.pid, 24);              \
  NCCLSCOPE_OFF(T, proxyOp.channelId, 28);        \
  NCCLSCOPE_OFF(T, proxyOp.peer, 32);             \
  NCCLSCOPE_OFF(T, proxyOp.nSteps, 36);           \
  NCCLSCOPE_OFF(T, proxyOp.chunkSize, 40);        \
  NCCLSCOPE_OFF(T, proxyOp.isSend, 44);           \
  NCCLSCOPE_OFF(T, proxyStep.step, 24)

NCCLSCOPE_DESCR_V1_V3_COMMON(ncclscope_profiler_descr_v1_t);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v1_t, coll.datatype, 84);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v1_t, coll.op, 88);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v1_t, coll.trafficBytes, 96);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v1_t, coll.nMaxChannels, 104);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v1_t, coll.nWarps, 105);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v1_t, coll.algo, 106);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v1_t, coll.proto, 107);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v1_t, coll.isCollnet, 108);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v1_t, coll.isNvls, 112);
NCCLSCOPE_SIZE(ncclscope_profiler_descr_v1_t, 120);

NCCLSCOPE_DESCR_V1_V3_COMMON(ncclscope_profiler_descr_v2_t);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v2_t, coll.datatype, 88);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v2_t, coll.trafficBytes, 96);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v2_t, coll.nMaxChannels, 104);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v2_t, coll.nWarps, 105);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v2_t, coll.algo, 112);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v2_t, coll.proto, 120);
NCCLSCOPE_SIZE(ncclscope_profiler_descr_v2_t, 128);

NCCLSCOPE_DESCR_V1_V3_COMMON(ncclscope_profiler_descr_v3_t);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v3_t, coll.datatype, 88);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v3_t, coll.nMaxChannels, 96);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v3_t, coll.nWarps, 97);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v3_t, coll.algo, 104);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v3_t, coll.proto, 112);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v3_t, kernelCh.channelId, 24);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v3_t, netPlugin.id, 24);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v3_t, netPlugin.data, 32);
NCCLSCOPE_SIZE(ncclscope_profiler_descr_v3_t, 120);

/* §2.4 descriptors: the arms shared by v4-v6. */
#define NCCLSCOPE_DESCR_COMMON(T)                 \
  NCCLSCOPE_OFF(T, parentObj, 8);                 \
  NCCLSCOPE_OFF(T, rank, 16);                     \
  NCCLSCOPE_OFF(T, coll.seqNumber, 24);           \
  NCCLSCOPE_OFF(T, coll.func, 32);                \
  NCCLSCOPE_OFF(T, coll.sendBuff, 40);            \
  NCCLSCOPE_OFF(T, coll.recvBuff, 48);            \
  NCCLSCOPE_OFF(T, coll.count, 56);               \
  NCCLSCOPE_OFF(T, coll.root, 64);                \
  NCCLSCOPE_OFF(T, coll.datatype, 72);            \
  NCCLSCOPE_OFF(T, coll.nChannels, 80);           \
  NCCLSCOPE_OFF(T, coll.nWarps, 81);              \
  NCCLSCOPE_OFF(T, coll.algo, 88);                \
  NCCLSCOPE_OFF(T, coll.proto, 96);               \
  NCCLSCOPE_OFF(T, p2p.func, 24);                 \
  NCCLSCOPE_OFF(T, p2p.buff, 32);                 \
  NCCLSCOPE_OFF(T, p2p.datatype, 40);             \
  NCCLSCOPE_OFF(T, p2p.count, 48);                \
  NCCLSCOPE_OFF(T, p2p.peer, 56);                 \
  NCCLSCOPE_OFF(T, p2p.nChannels, 60);            \
  NCCLSCOPE_OFF(T, proxyOp.pid, 24);              \
  NCCLSCOPE_OFF(T, proxyOp.channelId, 28);        \
  NCCLSCOPE_OFF(T, proxyOp.peer, 32);             \
  NCCLSCOPE_OFF(T, proxyOp.nSteps, 36);           \
  NCCLSCOPE_OFF(T, proxyOp.chunkSize, 40);        \
  NCCLSCOPE_OFF(T, proxyOp.isSend, 44);           \
  NCCLSCOPE_OFF(T, proxyStep.step, 24);           \
  NCCLSCOPE_OFF(T, kernelCh.channelId, 24);       \
  NCCLSCOPE_OFF(T, kernelCh.pTimer, 32);          \
  NCCLSCOPE_OFF(T, netPlugin.id, 24);             \
  NCCLSCOPE_OFF(T, netPlugin.data, 32)

NCCLSCOPE_DESCR_COMMON(ncclscope_profiler_descr_v4_t);
NCCLSCOPE_SIZE(ncclscope_profiler_descr_v4_t, 104);

#define NCCLSCOPE_DESCR_V5(T)                     \
  NCCLSCOPE_DESCR_COMMON(T);                      \
  NCCLSCOPE_OFF(T, coll.parentGroup, 104);        \
  NCCLSCOPE_OFF(T, p2p.parentGroup, 64);          \
  NCCLSCOPE_OFF(T, groupApi.graphCaptured, 24);   \
  NCCLSCOPE_OFF(T, groupApi.groupDepth, 28);      \
  NCCLSCOPE_OFF(T, collApi.func, 24);             \
  NCCLSCOPE_OFF(T, collApi.count, 32);            \
  NCCLSCOPE_OFF(T, collApi.datatype, 40);         \
  NCCLSCOPE_OFF(T, collApi.root, 48);             \
  NCCLSCOPE_OFF(T, collApi.stream, 56);           \
  NCCLSCOPE_OFF(T, collApi.graphCaptured, 64);    \
  NCCLSCOPE_OFF(T, p2pApi.func, 24);              \
  NCCLSCOPE_OFF(T, p2pApi.count, 32);             \
  NCCLSCOPE_OFF(T, p2pApi.datatype, 40);          \
  NCCLSCOPE_OFF(T, p2pApi.stream, 48);            \
  NCCLSCOPE_OFF(T, p2pApi.graphCaptured, 56);     \
  NCCLSCOPE_OFF(T, kernelLaunch.stream, 24);      \
  NCCLSCOPE_SIZE(T, 112)

NCCLSCOPE_DESCR_V5(ncclscope_profiler_descr_v5_t);
/* v7 (NVIDIA's profiler_v7.h at 889806836097808572f87a2019eefd01f27aae68): v5's arms at v5's offsets, v6's ceColl,
 * and the new fields; 136 bytes. */
NCCLSCOPE_DESCR_COMMON(ncclscope_profiler_descr_v7_t);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, coll.parentGroup, 104);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, coll.kernelVariant, 112);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, coll.isSymColl, 120);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, coll.userTag, 128);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, p2p.parentGroup, 64);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, p2p.userTag, 72);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, groupApi.graphCaptured, 24);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, groupApi.groupDepth, 28);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, collApi.userTag, 72);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, p2pApi.userTag, 64);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, ceColl.seqNumber, 24);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, ceColl.stream, 104);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, ceColl.userTag, 112);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, ceCollSync.nRanks, 28);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, ceCollBatch.totalBytes, 32);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, kernelPhase.channelId, 24);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, kernelPhase.phaseId, 25);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, kernelPhase.phaseName, 32);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v7_t, kernelPhase.pTimer, 40);
NCCLSCOPE_SIZE(ncclscope_profiler_descr_v7_t, 136);
NCCLSCOPE_DESCR_V5(ncclscope_profiler_descr_v6_t);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.seqNumber, 24);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.func, 32);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.sendBuff, 40);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.recvBuff, 48);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.count, 56);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.root, 64);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.datatype, 72);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.syncStrategy, 80);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.intraBatchSync, 88);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.batchSize, 92);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.numBatches, 96);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.ceSeqNum, 100);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceColl.stream, 104);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceCollSync.isComplete, 24);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceCollSync.nRanks, 28);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceCollBatch.numOps, 24);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceCollBatch.totalBytes, 32);
NCCLSCOPE_OFF(ncclscope_profiler_descr_v6_t, ceCollBatch.useIntraSync, 40);

/* RCCL (docs/nccl-integration.md#rccl). "Appended" v7 (rocm-systems projects/rccl profiler_v7.h at
 * 66e4315fa6f05511f37860f8ceebfa26805fbca1): NVIDIA's v7 is its prefix; every field ncclscope reads sits where
 * NVIDIA's header puts it (checked above on ncclscope_profiler_descr_v7_t), RCCL's ProxyOp fields follow isSend. */
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, parentObj, 8);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, rank, 16);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.pid, 24);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.channelId, 28);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.peer, 32);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.nSteps, 36);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.chunkSize, 40);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.isSend, 44);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.commHash, 48);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.opCount, 56);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.traceFuncIdx, 64);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.traceTotalBytes, 76);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.proxyNbytes, 80);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_t, proxyOp.rawProxyNsteps, 84);
NCCLSCOPE_SIZE(ncclscope_profiler_rccl_proxy_op_arm_t, 64);
NCCLSCOPE_SIZE(ncclscope_profiler_rccl_descr_v7_t, 136); /* the appended fields end at 88: the union keeps its size */
NCCLSCOPE_LAYOUT(offsetof(ncclscope_profiler_rccl_descr_v7_t, proxyOp.isSend) ==
                     offsetof(ncclscope_profiler_descr_v7_t, proxyOp.isSend) &&
                 offsetof(ncclscope_profiler_rccl_descr_v7_t, proxyOp.peer) ==
                     offsetof(ncclscope_profiler_descr_v7_t, proxyOp.peer),
                 "RCCL's ProxyOp keeps NVIDIA's fields as its prefix");
/* "Untagged" v7 (rocm-systems src/include/plugin/profiler/profiler_v7.h at
 * 716db25587c109e6a87332aebfb50a9ce5ff3660): v6's offsets, no userTag, 128 bytes. */
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_untagged_t, coll.parentGroup, 104);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_untagged_t, coll.kernelVariant, 112);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_untagged_t, coll.isSymColl, 120);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_descr_v7_untagged_t, kernelPhase.pTimer, 40);
NCCLSCOPE_SIZE(ncclscope_profiler_rccl_descr_v7_untagged_t, 128);
/* The state-args union: 24 bytes in RCCL, NVIDIA's arms at offset 0. */
NCCLSCOPE_SIZE(ncclscope_profiler_rccl_state_args_t, 24);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_state_args_t, proxyStep.transSize, 0);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_state_args_t, kernelCh.pTimer, 0);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_state_args_t, proxyDiag.flags, 2);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_state_args_t, proxyDiag.value, 8);
NCCLSCOPE_OFF(ncclscope_profiler_rccl_state_args_t, proxyDiag.value2, 16);

#endif /* NCCLSCOPE_ABI_LAYOUT_ASSERTS_H_ */

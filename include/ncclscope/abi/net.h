/* ncclscope's own declarations of NCCL's net-plugin tables v8-v12 (ncclNet_vN_t) and their
 * properties, handles and attributes, with our names (docs/nccl-abi.md#net-table).
 * Offsets and sizes are checked in layout_asserts.h. Seen by the adapters of src/plugin/net, the net
 * layers that hand NCCL's structs through (net/api, net/verbs), the tools and the tests. */
#ifndef NCCLSCOPE_ABI_NET_H_
#define NCCLSCOPE_ABI_NET_H_

#include "ncclscope/abi/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLSCOPE_PTR_HOST 0x1
#define NCCLSCOPE_PTR_CUDA 0x2
#define NCCLSCOPE_PTR_DMABUF 0x4

#define NCCLSCOPE_NET_HANDLE_MAXSIZE 128
#define NCCLSCOPE_NET_MAX_REQUESTS 32
#define NCCLSCOPE_NET_OPTIONAL_RECV_COMPLETION 0x1
#define NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF (-1)
#define NCCLSCOPE_NET_ID_UNDEF (-1)
#define NCCLSCOPE_NET_MAX_DEVS_PER_NIC_V9 4
#define NCCLSCOPE_NET_MAX_DEVS_PER_NIC_V12 8

typedef NCCLSCOPE_INT_ENUM {
  NCCLSCOPE_NET_DEVICE_HOST = 0,
  NCCLSCOPE_NET_DEVICE_UNPACK = 1,
  NCCLSCOPE_NET_DEVICE_GIN_PROXY = 2,
  NCCLSCOPE_NET_DEVICE_GIN_GDAKI = 3,
  NCCLSCOPE_NET_DEVICE_GIN_GPI = 4
} ncclscope_net_device_type_t;

/* ncclNetDeviceHandle_v7..v12_t (32 bytes). */
typedef struct {
  ncclscope_net_device_type_t netDeviceType;
  int netDeviceVersion;
  void* handle;
  size_t size;
  int needsProxyProgress;
} ncclscope_net_device_handle_t;

/* ncclNetCommConfig_v10..v12_t. `init`'s copy points into NCCL's stack: copy it during the call. */
typedef struct {
  int trafficClass;
} ncclscope_net_comm_config_t;

/* ncclNetVDeviceProps: NIC fusion, K = 4 devices up to v11 and 8 in v12. */
typedef struct {
  int ndevs;
  int devs[NCCLSCOPE_NET_MAX_DEVS_PER_NIC_V9];
} ncclscope_net_vdevice_props_v9_t;

typedef struct {
  int ndevs;
  int devs[NCCLSCOPE_NET_MAX_DEVS_PER_NIC_V12];
} ncclscope_net_vdevice_props_v12_t;

/* ncclNetProperties_v8_t (64 bytes). */
typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speed; /* Mbps */
  int port;
  float latency; /* us */
  int maxComms;
  int maxRecvs;
  ncclscope_net_device_type_t netDeviceType;
  int netDeviceVersion;
} ncclscope_net_properties_v8_t;

/* ncclNetProperties_v9_t and _v10_t (104 bytes). */
typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclscope_net_device_type_t netDeviceType;
  int netDeviceVersion;
  ncclscope_net_vdevice_props_v9_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
} ncclscope_net_properties_v9_t;

/* ncclNetProperties_v11_t (112 bytes). */
typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclscope_net_device_type_t netDeviceType;
  int netDeviceVersion;
  ncclscope_net_vdevice_props_v9_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
} ncclscope_net_properties_v11_t;

/* ncclNetProperties_v12_t (128 bytes). railId/planeId = NCCLSCOPE_NET_ID_UNDEF when unknown. */
typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclscope_net_device_type_t netDeviceType;
  int netDeviceVersion;
  ncclscope_net_vdevice_props_v12_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
  int16_t railId;
  int16_t planeId;
} ncclscope_net_properties_v12_t;

/* ncclNetAttr_v11/v12_t (44 bytes); unset fields are -1 / 0xFFFFFFFF. */
typedef struct {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
} ncclscope_net_comm_attr_t;

typedef struct {
  ncclscope_net_comm_attr_t sendCommAttr;
  ncclscope_net_comm_attr_t recvCommAttr;
  uint32_t op;    /* mask of 1 << ncclFunc_t */
  uint32_t algo;  /* mask of 1 << NCCL_ALGO_* */
  uint32_t proto; /* mask of 1 << NCCL_PROTO_* */
} ncclscope_net_attr_t;

/* Function-pointer shapes shared by several versions. */
typedef ncclscope_result_t (*ncclscope_net_devices_fn)(int* ndev);
typedef ncclscope_result_t (*ncclscope_net_accept_fn)(void* listenComm, void** recvComm,
                                                      ncclscope_net_device_handle_t** recvDevComm);
typedef ncclscope_result_t (*ncclscope_net_reg_mr_fn)(void* comm, void* data, size_t size, int type,
                                                      void** mhandle);
typedef ncclscope_result_t (*ncclscope_net_reg_mr_dmabuf_fn)(void* comm, void* data, size_t size, int type,
                                                             uint64_t offset, int fd, void** mhandle);
typedef ncclscope_result_t (*ncclscope_net_dereg_mr_fn)(void* comm, void* mhandle);
typedef ncclscope_result_t (*ncclscope_net_iflush_fn)(void* recvComm, int n, void** data, int* sizes,
                                                      void** mhandles, void** request);
typedef ncclscope_result_t (*ncclscope_net_test_fn)(void* request, int* done, int* sizes);
typedef ncclscope_result_t (*ncclscope_net_close_fn)(void* comm);
typedef ncclscope_result_t (*ncclscope_net_get_device_mr_fn)(void* comm, void* mhandle, void** dptr_mhandle);
typedef ncclscope_result_t (*ncclscope_net_irecv_consumed_fn)(void* recvComm, int n, void* request);

/* ncclNet_v8_t (152 bytes). */
typedef struct {
  const char* name;
  ncclscope_result_t (*init)(ncclscope_logger_t logFunction);
  ncclscope_net_devices_fn devices;
  ncclscope_result_t (*getProperties)(int dev, ncclscope_net_properties_v8_t* props);
  ncclscope_result_t (*listen)(int dev, void* handle, void** listenComm);
  ncclscope_result_t (*connect)(int dev, void* handle, void** sendComm,
                                ncclscope_net_device_handle_t** sendDevComm);
  ncclscope_net_accept_fn accept;
  ncclscope_net_reg_mr_fn regMr;
  ncclscope_net_reg_mr_dmabuf_fn regMrDmaBuf;
  ncclscope_net_dereg_mr_fn deregMr;
  ncclscope_result_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  ncclscope_result_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles,
                              void** request);
  ncclscope_net_iflush_fn iflush;
  ncclscope_net_test_fn test;
  ncclscope_net_close_fn closeSend;
  ncclscope_net_close_fn closeRecv;
  ncclscope_net_close_fn closeListen;
  ncclscope_net_get_device_mr_fn getDeviceMr;
  ncclscope_net_irecv_consumed_fn irecvConsumed;
} ncclscope_net_v8_t;

/* ncclNet_v9_t (160 bytes): sizes become size_t; makeVDevice appears. */
typedef struct {
  const char* name;
  ncclscope_result_t (*init)(ncclscope_logger_t logFunction);
  ncclscope_net_devices_fn devices;
  ncclscope_result_t (*getProperties)(int dev, ncclscope_net_properties_v9_t* props);
  ncclscope_result_t (*listen)(int dev, void* handle, void** listenComm);
  ncclscope_result_t (*connect)(int dev, void* handle, void** sendComm,
                                ncclscope_net_device_handle_t** sendDevComm);
  ncclscope_net_accept_fn accept;
  ncclscope_net_reg_mr_fn regMr;
  ncclscope_net_reg_mr_dmabuf_fn regMrDmaBuf;
  ncclscope_net_dereg_mr_fn deregMr;
  ncclscope_result_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request);
  ncclscope_result_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                              void** request);
  ncclscope_net_iflush_fn iflush;
  ncclscope_net_test_fn test;
  ncclscope_net_close_fn closeSend;
  ncclscope_net_close_fn closeRecv;
  ncclscope_net_close_fn closeListen;
  ncclscope_net_get_device_mr_fn getDeviceMr;
  ncclscope_net_irecv_consumed_fn irecvConsumed;
  ncclscope_result_t (*makeVDevice)(int* d, ncclscope_net_vdevice_props_v9_t* props);
} ncclscope_net_v9_t;

/* ncclNet_v10_t (160 bytes): init takes the profiler callback; connect takes a config; isend/irecv
 * take profiler handles. */
typedef struct {
  const char* name;
  ncclscope_result_t (*init)(ncclscope_logger_t logFunction, ncclscope_profiler_callback_t profFunction);
  ncclscope_net_devices_fn devices;
  ncclscope_result_t (*getProperties)(int dev, ncclscope_net_properties_v9_t* props);
  ncclscope_result_t (*listen)(int dev, void* handle, void** listenComm);
  ncclscope_result_t (*connect)(int dev, ncclscope_net_comm_config_t* config, void* handle, void** sendComm,
                                ncclscope_net_device_handle_t** sendDevComm);
  ncclscope_net_accept_fn accept;
  ncclscope_net_reg_mr_fn regMr;
  ncclscope_net_reg_mr_dmabuf_fn regMrDmaBuf;
  ncclscope_net_dereg_mr_fn deregMr;
  ncclscope_result_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                              void** request);
  ncclscope_result_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                              void** phandles, void** request);
  ncclscope_net_iflush_fn iflush;
  ncclscope_net_test_fn test;
  ncclscope_net_close_fn closeSend;
  ncclscope_net_close_fn closeRecv;
  ncclscope_net_close_fn closeListen;
  ncclscope_net_get_device_mr_fn getDeviceMr;
  ncclscope_net_irecv_consumed_fn irecvConsumed;
  ncclscope_result_t (*makeVDevice)(int* d, ncclscope_net_vdevice_props_v9_t* props);
} ncclscope_net_v10_t;

/* ncclNet_v11_t (176 bytes): per-communicator init/finalize with a ctx; listen/connect take the ctx. */
#define NCCLSCOPE_NET_V11_V12_COMMON_SLOTS(PROPS, VPROPS)                                                   \
  const char* name;                                                                                         \
  ncclscope_result_t (*init)(void** ctx, uint64_t commId, ncclscope_net_comm_config_t* config,             \
                             ncclscope_logger_t logFunction, ncclscope_profiler_callback_t profFunction);    \
  ncclscope_net_devices_fn devices;                                                                         \
  ncclscope_result_t (*getProperties)(int dev, PROPS* props);                                               \
  ncclscope_result_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);                       \
  ncclscope_result_t (*connect)(void* ctx, int dev, void* handle, void** sendComm,                         \
                                ncclscope_net_device_handle_t** sendDevComm);                               \
  ncclscope_net_accept_fn accept;                                                                           \
  ncclscope_net_reg_mr_fn regMr;                                                                            \
  ncclscope_net_reg_mr_dmabuf_fn regMrDmaBuf;                                                               \
  ncclscope_net_dereg_mr_fn deregMr;                                                                        \
  ncclscope_result_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle,             \
                              void* phandle, void** request);                                               \
  ncclscope_result_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags,                \
                              void** mhandles, void** phandles, void** request);                            \
  ncclscope_net_iflush_fn iflush;                                                                           \
  ncclscope_net_test_fn test;                                                                               \
  ncclscope_net_close_fn closeSend;                                                                         \
  ncclscope_net_close_fn closeRecv;                                                                         \
  ncclscope_net_close_fn closeListen;                                                                       \
  ncclscope_net_get_device_mr_fn getDeviceMr;                                                               \
  ncclscope_net_irecv_consumed_fn irecvConsumed;                                                            \
  ncclscope_result_t (*makeVDevice)(int* d, VPROPS* props);                                                 \
  ncclscope_result_t (*finalize)(void* ctx);                                                                \
  ncclscope_result_t (*setNetAttr)(void* ctx, ncclscope_net_attr_t* netAttr);

typedef struct {
  NCCLSCOPE_NET_V11_V12_COMMON_SLOTS(ncclscope_net_properties_v11_t, ncclscope_net_vdevice_props_v9_t)
} ncclscope_net_v11_t;

/* ncclNet_v12_t (176 bytes): the v11 table with v12 properties (8 devices per vNIC, rail/plane). */
typedef struct {
  NCCLSCOPE_NET_V11_V12_COMMON_SLOTS(ncclscope_net_properties_v12_t, ncclscope_net_vdevice_props_v12_t)
} ncclscope_net_v12_t;

#ifdef __cplusplus
}
#endif

#endif /* NCCLSCOPE_ABI_NET_H_ */

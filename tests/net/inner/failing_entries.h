/* The entries of a failing test inner (failinit.c, hostile.c) other than init: each returns an error without
 * touching anything, since nothing should call them after an init that failed (or never returned), and
 * INNER_V12_TABLE(NAME, INIT) fills a v12 table with them around the inner's own init. Our own C, over our
 * ABI header only. */
#ifndef NCCLSCOPE_TESTS_NET_INNER_FAILING_ENTRIES_H_
#define NCCLSCOPE_TESTS_NET_INNER_FAILING_ENTRIES_H_

#include <stddef.h>

#include "ncclscope/abi/net.h"

static ncclscope_result_t Devices(int* ndev) {
  if (ndev != NULL) *ndev = 0;
  return NCCLSCOPE_INTERNAL_ERROR;
}
static ncclscope_result_t GetProperties(int dev, ncclscope_net_properties_v12_t* props) { return NCCLSCOPE_INTERNAL_ERROR; }
static ncclscope_result_t Listen(void* ctx, int dev, void* handle, void** comm) { return NCCLSCOPE_INTERNAL_ERROR; }
static ncclscope_result_t Connect(void* ctx, int dev, void* handle, void** comm, ncclscope_net_device_handle_t** d) {
  return NCCLSCOPE_INTERNAL_ERROR;
}
static ncclscope_result_t Accept(void* listen, void** comm, ncclscope_net_device_handle_t** d) { return NCCLSCOPE_INTERNAL_ERROR; }
static ncclscope_result_t RegMr(void* comm, void* data, size_t size, int type, void** mh) { return NCCLSCOPE_INTERNAL_ERROR; }
static ncclscope_result_t RegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t off, int fd, void** mh) {
  return NCCLSCOPE_INTERNAL_ERROR;
}
static ncclscope_result_t DeregMr(void* comm, void* mh) { return NCCLSCOPE_INTERNAL_ERROR; }
static ncclscope_result_t Isend(void* comm, void* data, size_t size, int tag, void* mh, void* ph, void** req) {
  return NCCLSCOPE_INTERNAL_ERROR;
}
static ncclscope_result_t Irecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhs, void** phs,
                                void** req) {
  return NCCLSCOPE_INTERNAL_ERROR;
}
static ncclscope_result_t Iflush(void* comm, int n, void** data, int* sizes, void** mhs, void** req) {
  return NCCLSCOPE_INTERNAL_ERROR;
}
static ncclscope_result_t Test(void* req, int* done, int* sizes) { return NCCLSCOPE_INTERNAL_ERROR; }
static ncclscope_result_t Close(void* comm) { return NCCLSCOPE_INTERNAL_ERROR; }
static ncclscope_result_t GetDeviceMr(void* comm, void* mh, void** dptr) { return NCCLSCOPE_INTERNAL_ERROR; }
static ncclscope_result_t IrecvConsumed(void* comm, int n, void* req) { return NCCLSCOPE_INTERNAL_ERROR; }
static ncclscope_result_t MakeVDevice(int* d, ncclscope_net_vdevice_props_v12_t* props) { return NCCLSCOPE_INTERNAL_ERROR; }
static ncclscope_result_t Finalize(void* ctx) { return NCCLSCOPE_INTERNAL_ERROR; }
static ncclscope_result_t SetNetAttr(void* ctx, ncclscope_net_attr_t* attr) { return NCCLSCOPE_INTERNAL_ERROR; }

#define INNER_V12_TABLE(NAME, INIT)                                                                              \
  {                                                                                                                 \
    .name = NAME, .init = INIT, .devices = Devices, .getProperties = GetProperties, .listen = Listen,               \
    .connect = Connect, .accept = Accept, .regMr = RegMr, .regMrDmaBuf = RegMrDmaBuf, .deregMr = DeregMr,           \
    .isend = Isend, .irecv = Irecv, .iflush = Iflush, .test = Test, .closeSend = Close, .closeRecv = Close,         \
    .closeListen = Close, .getDeviceMr = GetDeviceMr, .irecvConsumed = IrecvConsumed, .makeVDevice = MakeVDevice,   \
    .finalize = Finalize, .setNetAttr = SetNetAttr,                                                                 \
  }

#endif /* NCCLSCOPE_TESTS_NET_INNER_FAILING_ENTRIES_H_ */

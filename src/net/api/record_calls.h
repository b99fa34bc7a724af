// Recording mode for the net half (see common/call_recorder.h): each call of the version-neutral net API
// with its arguments, what it returned and the status. Polling calls are folded: a test() that is not done,
// a connect/accept that is not yet connected and an isend/irecv that must be retried are counted and the
// count goes on the next line written for the same request or comm.
#ifndef NCCLSCOPE_NET_API_RECORD_CALLS_H_
#define NCCLSCOPE_NET_API_RECORD_CALLS_H_

#include <cstddef>
#include <cstdint>

#include "common/call_recorder.h"
#include "common/status.h"
#include "net/api/net_api.h"

namespace ncclscope::net {

void RecordInit(record::Recorder* r, const InitArgs& args, const NetContext* ctx, const Status& s);
void RecordFinalize(record::Recorder* r, const NetContext* ctx);
void RecordProperties(record::Recorder* r, int dev, const NetProperties* p, const Status& s);
void RecordListen(record::Recorder* r, const NetContext* ctx, int dev, void* listen_comm, const Status& s);
void RecordConnect(record::Recorder* r, const char* call, const void* from, int dev, void* comm, const Status& s);
void RecordRegMr(record::Recorder* r, void* comm, size_t size, int type, int dmabuf_fd, void* mhandle,
                 const Status& s);
void RecordIsend(record::Recorder* r, void* comm, size_t size, int tag, void* mhandle, void* phandle,
                 void* request, const Status& s);
void RecordIrecv(record::Recorder* r, void* comm, int n, const size_t* sizes, const int* tags, void** phandles,
                 bool optional, void* request, const Status& s);
void RecordIflush(record::Recorder* r, void* comm, int n, const int* sizes, void* request, const Status& s);
void RecordTest(record::Recorder* r, void* request, int done, const int* sizes, const Status& s);
// closeSend, closeRecv, closeListen, deregMr, devices, setNetAttr: the call, its object and the status.
void RecordSimple(record::Recorder* r, const char* call, const void* object, const Status& s);

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_API_RECORD_CALLS_H_

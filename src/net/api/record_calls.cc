#include "net/api/record_calls.h"

namespace ncclscope::net {
namespace {

void Result(record::Line& l, const Status& s) {
  l.Int("status", static_cast<int>(s.code()));
  if (!s.ok()) l.Str("error", s.message().c_str());
}

}  // namespace

void RecordInit(record::Recorder* r, const InitArgs& args, const NetContext* ctx, const Status& s) {
  r->Write("net.init", [&](record::Line& l) {
    l.Int("v", args.abi_version).Bool("perComm", args.per_comm).Hex("commId", args.comm_id);
    l.Int("trafficClass", args.traffic_class).Bool("profilerCallback", args.profiler_cb != nullptr);
    // The legacy context is shared by every legacy init: one id for it, whatever the number of inits.
    if (ctx != nullptr && ctx->legacy) {
      l.Str("ctx", "legacy");
    } else {
      l.NewId("ctx", ctx, 'x');
    }
    Result(l, s);
  });
}

void RecordFinalize(record::Recorder* r, const NetContext* ctx) {
  r->Write("net.finalize", [&](record::Line& l) { l.Ref("ctx", ctx); });
  r->Flush();
}

void RecordProperties(record::Recorder* r, int dev, const NetProperties* p, const Status& s) {
  r->Write("net.getProperties", [&](record::Line& l) {
    l.Int("dev", dev);
    if (s.ok() && p != nullptr) {
      l.Str("name", p->name.c_str()).Int("ptrSupport", p->ptr_support).Int("speed", p->speed_mbps);
      l.Int("maxComms", p->max_comms).Int("maxRecvs", p->max_recvs).Bool("regIsGlobal", p->reg_is_global);
    }
    Result(l, s);
  });
}

void RecordListen(record::Recorder* r, const NetContext* ctx, int dev, void* listen_comm, const Status& s) {
  r->Write("net.listen", [&](record::Line& l) {
    l.Ref("ctx", ctx).Int("dev", dev).NewId("listenComm", listen_comm, 'l');
    Result(l, s);
  });
}

void RecordConnect(record::Recorder* r, const char* call, const void* from, int dev, void* comm, const Status& s) {
  // `from` is the listen comm (accept) or the handle buffer (connect): NCCL retries until a comm comes back.
  if (comm == nullptr && s.ok()) {
    r->Tally(from);
    return;
  }
  const uint64_t retries = r->Take(from);
  r->Write(call, [&](record::Line& l) {
    if (dev >= 0) l.Int("dev", dev);
    if (std::string_view(call) == "net.accept") l.Ref("listenComm", from);
    l.Uint("notYet", retries).NewId("comm", comm, 'k');
    Result(l, s);
  });
}

void RecordRegMr(record::Recorder* r, void* comm, size_t size, int type, int dmabuf_fd, void* mhandle,
                 const Status& s) {
  r->Write("net.regMr", [&](record::Line& l) {
    l.Ref("comm", comm).Uint("size", size).Int("type", type).Bool("dmabuf", dmabuf_fd >= 0);
    l.SameOrNewId("mhandle", mhandle, 'm');
    Result(l, s);
  });
}

void RecordIsend(record::Recorder* r, void* comm, size_t size, int tag, void* mhandle, void* phandle,
                 void* request, const Status& s) {
  if (request == nullptr && s.ok()) {
    r->Tally(comm);
    return;
  }
  const uint64_t retries = r->Take(comm);
  r->Write("net.isend", [&](record::Line& l) {
    l.Ref("comm", comm).Uint("size", size).Int("tag", tag).Ref("mhandle", mhandle);
    l.Bool("phandle", phandle != nullptr).Uint("retries", retries).NewId("request", request, 'q');
    Result(l, s);
  });
}

void RecordIrecv(record::Recorder* r, void* comm, int n, const size_t* sizes, const int* tags, void** phandles,
                 bool optional, void* request, const Status& s) {
  if (request == nullptr && s.ok()) {
    r->Tally(comm);
    return;
  }
  const uint64_t retries = r->Take(comm);
  r->Write("net.irecv", [&](record::Line& l) {
    l.Ref("comm", comm).Int("n", n).Bool("optional", optional);
    for (int i = 0; i < n && i < kMaxRecvs; ++i) {
      const std::string key = "recv" + std::to_string(i);
      l.Open(key.c_str()).Uint("size", sizes[i]).Int("tag", tags[i]);
      l.Bool("phandle", phandles != nullptr && phandles[i] != nullptr).Close();
    }
    l.Uint("retries", retries).NewId("request", request, 'q');
    Result(l, s);
  });
}

void RecordIflush(record::Recorder* r, void* comm, int n, const int* sizes, void* request, const Status& s) {
  r->Write("net.iflush", [&](record::Line& l) {
    l.Ref("comm", comm).Int("n", n);
    if (n > 0 && sizes != nullptr) l.Int("size0", sizes[0]);
    l.NewId("request", request, 'q');
    Result(l, s);
  });
}

void RecordTest(record::Recorder* r, void* request, int done, const int* sizes, const Status& s) {
  if (!done && s.ok()) {
    r->Tally(request);
    return;
  }
  const uint64_t polls = r->Take(request);
  r->Write("net.test", [&](record::Line& l) {
    l.Ref("request", request).Int("done", done).Uint("notDone", polls);
    if (done && sizes != nullptr) l.Int("size0", sizes[0]);
    Result(l, s);
  });
}

void RecordSimple(record::Recorder* r, const char* call, const void* object, const Status& s) {
  r->Write(call, [&](record::Line& l) {
    l.Ref("object", object);
    Result(l, s);
  });
}

}  // namespace ncclscope::net

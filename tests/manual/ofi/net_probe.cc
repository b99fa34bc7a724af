// net_probe: what a net plugin tells NCCL about itself, through one ncclNetPlugin_vN table.
//
//   net_probe PLUGIN_PATH VERSION [BYTES]
//
// dlopens PLUGIN_PATH (RTLD_NOW | RTLD_LOCAL, as NCCL does), resolves ncclNetPlugin_v<VERSION> (8..12),
// and prints, one "key: value" line each:
//   - the table's name and which optional entries are NULL;
//   - init's result, the device count and every field of every device's properties (the properties
//     struct is filled with 0xA5 first, as NCCL hands over uninitialised memory, so an unwritten field
//     shows as 0xa5a5a5a5);
//   - the listen handle: how many of its 128 bytes are non-zero, and the first 32 in hex;
//   - one host-memory message of BYTES (default 1 MiB) from a send comm to a receive comm on device 0 in
//     this one process, checked byte for byte, with the size test() reports;
//   - at v10+, how many times the plugin called the profiler callback init was given (NCCL passes one;
//     a plugin that raises NetPlugin events calls it around each isend/irecv).
// Exit status 0 when all of it worked, 1 otherwise. Includes only include/ncclscope/abi/*.h.
// Manual tool for tests/manual/ofi/ofi_proof.sh; not part of CI.
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <string>
#include <type_traits>
#include <vector>

#include "ncclscope/abi/net.h"

namespace {

std::atomic<int> g_prof_calls{0};
std::atomic<int> g_prof_starts{0};
std::atomic<int> g_log_lines{0};
int g_dummy_event;

void Logger(ncclscope_log_level_t level, unsigned long flags, const char* filefunc, int line, const char* fmt,
            ...) {
  g_log_lines.fetch_add(1);
  if (getenv("NET_PROBE_LOG") == nullptr) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  fprintf(stderr, "plugin log [level %d flags 0x%lx] %s\n", static_cast<int>(level), flags, buf);
}

ncclscope_result_t ProfCallback(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData) {
  g_prof_calls.fetch_add(1);
  if (type == NCCLSCOPE_NET_EVENT_START) {
    g_prof_starts.fetch_add(1);
    if (eHandle != nullptr) *eHandle = &g_dummy_event;
  }
  return NCCLSCOPE_SUCCESS;
}

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

template <class T>
std::string Hex(T v) {
  char b[32];
  snprintf(b, sizeof(b), "0x%llx", static_cast<unsigned long long>(static_cast<std::make_unsigned_t<T>>(v)));
  return b;
}

template <class R, class A0, class A1>
A1 Arg1(R (*)(A0, A1));

template <int V, class Table>
int Probe(const Table* t, size_t bytes) {
  printf("table: ncclNetPlugin_v%d\n", V);
  printf("name: %s\n", t->name != nullptr ? t->name : "(null)");
  std::string nulls;
  auto null_if = [&nulls](const void* p, const char* n) {
    if (p == nullptr) nulls += std::string(nulls.empty() ? "" : " ") + n;
  };
  null_if(reinterpret_cast<const void*>(t->regMrDmaBuf), "regMrDmaBuf");
  null_if(reinterpret_cast<const void*>(t->iflush), "iflush");
  null_if(reinterpret_cast<const void*>(t->getDeviceMr), "getDeviceMr");
  null_if(reinterpret_cast<const void*>(t->irecvConsumed), "irecvConsumed");
  if constexpr (V >= 9) null_if(reinterpret_cast<const void*>(t->makeVDevice), "makeVDevice");
  if constexpr (V >= 11) {
    null_if(reinterpret_cast<const void*>(t->finalize), "finalize");
    null_if(reinterpret_cast<const void*>(t->setNetAttr), "setNetAttr");
  }
  printf("null_entries: %s\n", nulls.empty() ? "none" : nulls.c_str());

  void* ctx = nullptr;
  int r;
  if constexpr (V >= 11) {
    ncclscope_net_comm_config_t cfg{NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};
    r = t->init(&ctx, 0x5eedULL, &cfg, Logger, ProfCallback);
  } else if constexpr (V == 10) {
    r = t->init(Logger, ProfCallback);
  } else {
    r = t->init(Logger);
  }
  printf("init: %d\n", r);
  if (r != 0) return 1;
  int ndev = 0;
  r = t->devices(&ndev);
  printf("devices: %d (result %d)\n", ndev, r);
  if (r != 0 || ndev < 1) return 1;

  using Props = std::remove_pointer_t<decltype(Arg1(t->getProperties))>;
  for (int d = 0; d < ndev; ++d) {
    Props p;
    memset(&p, 0xA5, sizeof(p));
    r = t->getProperties(d, &p);
    if (r != 0) {
      printf("dev%d: getProperties failed (%d)\n", d, r);
      continue;
    }
    printf("dev%d: name=%s pciPath=%s guid=%s ptrSupport=%s regIsGlobal=%d speed=%d port=%d latency=%g "
           "maxComms=%d maxRecvs=%d netDeviceType=%d netDeviceVersion=%s",
           d, p.name ? p.name : "(null)", p.pciPath ? p.pciPath : "(null)", Hex(p.guid).c_str(),
           Hex(p.ptrSupport).c_str(), p.regIsGlobal, p.speed, p.port, static_cast<double>(p.latency), p.maxComms,
           p.maxRecvs, static_cast<int>(p.netDeviceType), Hex(p.netDeviceVersion).c_str());
    if constexpr (V >= 9) {
      printf(" forceFlush=%d vProps.ndevs=%d maxP2pBytes=%zu maxCollBytes=%zu", p.forceFlush, p.vProps.ndevs,
             p.maxP2pBytes, p.maxCollBytes);
    }
    if constexpr (V >= 11) printf(" maxMultiRequestSize=%d", p.maxMultiRequestSize);
    if constexpr (V >= 12) printf(" railId=%d planeId=%d", p.railId, p.planeId);
    printf("\n");
  }

  // One message, device 0, send and receive comms in this process.
  unsigned char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE] = {};
  void* lc = nullptr;
  if constexpr (V >= 11) r = t->listen(ctx, 0, handle, &lc);
  else r = t->listen(0, handle, &lc);
  printf("listen: %d\n", r);
  if (r != 0) return 1;
  int nonzero = 0;
  for (unsigned char c : handle) nonzero += c != 0;
  printf("handle_nonzero_bytes: %d of %d\nhandle_head:", nonzero, NCCLSCOPE_NET_HANDLE_MAXSIZE);
  for (int i = 0; i < 32; ++i) printf("%s%02x", i % 8 == 0 ? " " : "", handle[i]);
  printf("\n");

  void* sc = nullptr;
  void* rc = nullptr;
  double deadline = Now() + 20;
  while ((sc == nullptr || rc == nullptr) && Now() < deadline) {
    ncclscope_net_device_handle_t* dh = nullptr;
    if (sc == nullptr) {
      if constexpr (V >= 11) r = t->connect(ctx, 0, handle, &sc, &dh);
      else if constexpr (V == 10) {
        ncclscope_net_comm_config_t cfg{NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};
        r = t->connect(0, &cfg, handle, &sc, &dh);
      } else {
        r = t->connect(0, handle, &sc, &dh);
      }
      if (r != 0) {
        printf("connect: %d\n", r);
        return 1;
      }
    }
    if (rc == nullptr) {
      r = t->accept(lc, &rc, &dh);
      if (r != 0) {
        printf("accept: %d\n", r);
        return 1;
      }
    }
  }
  printf("connected: %s\n", sc != nullptr && rc != nullptr ? "yes" : "no (20 s)");
  if (sc == nullptr || rc == nullptr) return 1;

  std::vector<unsigned char> src(bytes), dst(bytes + 64, 0);
  for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  void* smh = nullptr;
  void* rmh = nullptr;
  int rs = t->regMr(sc, src.data(), bytes, NCCLSCOPE_PTR_HOST, &smh);
  int rr = t->regMr(rc, dst.data(), dst.size(), NCCLSCOPE_PTR_HOST, &rmh);
  printf("regMr: send %d recv %d\n", rs, rr);
  if (rs != 0 || rr != 0) return 1;
  int prof_before = g_prof_calls.load();
  void* rreq = nullptr;
  void* sreq = nullptr;
  int tag = 7;
  void* rdata = dst.data();
  size_t rsize = dst.size();
  int rsize_int = static_cast<int>(dst.size());
  void* phandle = &g_dummy_event;  // as NCCL passes its ProxyStep's handle
  deadline = Now() + 20;
  while (rreq == nullptr && Now() < deadline) {
    if constexpr (V >= 10) r = t->irecv(rc, 1, &rdata, &rsize, &tag, &rmh, &phandle, &rreq);
    else if constexpr (V == 9) r = t->irecv(rc, 1, &rdata, &rsize, &tag, &rmh, &rreq);
    else r = t->irecv(rc, 1, &rdata, &rsize_int, &tag, &rmh, &rreq);
    if (r != 0) {
      printf("irecv: %d\n", r);
      return 1;
    }
  }
  while (sreq == nullptr && Now() < deadline) {
    if constexpr (V >= 10) r = t->isend(sc, src.data(), bytes, tag, smh, phandle, &sreq);
    else if constexpr (V == 9) r = t->isend(sc, src.data(), bytes, tag, smh, &sreq);
    else r = t->isend(sc, src.data(), static_cast<int>(bytes), tag, smh, &sreq);
    if (r != 0) {
      printf("isend: %d\n", r);
      return 1;
    }
  }
  int sdone = 0, rdone = 0, ssize = -1, rsizes[NCCLSCOPE_NET_MAX_REQUESTS] = {};
  double t0 = Now();
  while ((!sdone || !rdone) && Now() < deadline) {
    if (!sdone && (r = t->test(sreq, &sdone, &ssize)) != 0) {
      printf("test(send): %d\n", r);
      return 1;
    }
    if (!rdone && (r = t->test(rreq, &rdone, rsizes)) != 0) {
      printf("test(recv): %d\n", r);
      return 1;
    }
  }
  double secs = Now() - t0;
  bool intact = rdone && memcmp(src.data(), dst.data(), bytes) == 0;
  printf("message: %zu bytes %s; test sizes send=%d recv=%d; %.3f ms\n", bytes,
         !sdone || !rdone ? "NOT DONE in 20 s" : intact ? "intact" : "CORRUPTED", ssize, rsizes[0], secs * 1e3);
  if constexpr (V >= 10) {
    printf("profiler_callback_calls: %d during the message (%d starts), %d in all\n",
           g_prof_calls.load() - prof_before, g_prof_starts.load(), g_prof_calls.load());
  } else {
    printf("profiler_callback_calls: n/a (v%d init takes no callback)\n", V);
  }
  printf("log_lines: %d\n", g_log_lines.load());
  t->deregMr(sc, smh);
  t->deregMr(rc, rmh);
  int c1 = t->closeSend(sc), c2 = t->closeRecv(rc), c3 = t->closeListen(lc);
  printf("close: send %d recv %d listen %d\n", c1, c2, c3);
  if constexpr (V >= 11) {
    if (t->finalize != nullptr) printf("finalize: %d\n", t->finalize(ctx));
  }
  return intact && static_cast<size_t>(rsizes[0]) == bytes && static_cast<size_t>(ssize) == bytes ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: net_probe PLUGIN_PATH VERSION(8..12) [BYTES]\n");
    return 2;
  }
  int version = atoi(argv[2]);
  size_t bytes = argc > 3 ? strtoull(argv[3], nullptr, 10) : (1u << 20);
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 2;
  }
  std::string sym = "ncclNetPlugin_v" + std::to_string(version);
  const void* t = dlsym(lib, sym.c_str());
  if (t == nullptr) {
    fprintf(stderr, "%s not found in %s\n", sym.c_str(), argv[1]);
    return 2;
  }
  int rc = 2;
  switch (version) {
    case 8: rc = Probe<8>(static_cast<const ncclscope_net_v8_t*>(t), bytes); break;
    case 9: rc = Probe<9>(static_cast<const ncclscope_net_v9_t*>(t), bytes); break;
    case 10: rc = Probe<10>(static_cast<const ncclscope_net_v10_t*>(t), bytes); break;
    case 11: rc = Probe<11>(static_cast<const ncclscope_net_v11_t*>(t), bytes); break;
    case 12: rc = Probe<12>(static_cast<const ncclscope_net_v12_t*>(t), bytes); break;
    default: fprintf(stderr, "version %d: 8..12\n", version);
  }
  fflush(stdout);
  // Exit without unloading: some plugins keep threads that outlive their tables (NCCL never dlcloses
  // a net plugin while it runs either).
  _exit(rc);
}

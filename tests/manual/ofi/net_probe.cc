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
//   - makeVDevice of devices 0 and 1 (v9+) and setNetAttr with nothing set (v11+), or that the entry is NULL;
//   - the listen handle: how many of its 128 bytes are non-zero, and the first 32 in hex;
//   - one host-memory message of BYTES (default 1 MiB) from a send comm to a receive comm in this one
//     process, on device 0 (NET_PROBE_DEVS=0,3: one on each device listed), checked byte for byte, with the size test()
//     reports;
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

void Logger(ncclscope_log_level_t level, unsigned long flags, const char* filefunc, int line, const char* fmt, ...) {
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
    printf(
        "dev%d: name=%s pciPath=%s guid=%s ptrSupport=%s regIsGlobal=%d speed=%d port=%d latency=%g "
        "maxComms=%d maxRecvs=%d netDeviceType=%d netDeviceVersion=%s",
        d, p.name ? p.name : "(null)", p.pciPath ? p.pciPath : "(null)", Hex(p.guid).c_str(), Hex(p.ptrSupport).c_str(),
        p.regIsGlobal, p.speed, p.port, static_cast<double>(p.latency), p.maxComms, p.maxRecvs,
        static_cast<int>(p.netDeviceType), Hex(p.netDeviceVersion).c_str());
    if constexpr (V >= 9) {
      printf(" forceFlush=%d vProps.ndevs=%d maxP2pBytes=%zu maxCollBytes=%zu", p.forceFlush, p.vProps.ndevs,
             p.maxP2pBytes, p.maxCollBytes);
    }
    if constexpr (V >= 11) printf(" maxMultiRequestSize=%d", p.maxMultiRequestSize);
    if constexpr (V >= 12) printf(" railId=%d planeId=%d", p.railId, p.planeId);
    printf("\n");
  }

  // NIC fusion as NCCL's topology asks for it (devices 0 and 1), and the v11+ per-operation attributes with
  // nothing set: what a table that has these entries answers.
  if constexpr (V >= 9) {
    if (t->makeVDevice == nullptr) {
      printf("makeVDevice(0+1): entry is NULL\n");
    } else if (ndev < 2) {
      printf("makeVDevice(0+1): only %d device\n", ndev);
    } else {
      std::remove_pointer_t<decltype(Arg1(t->makeVDevice))> vp{};
      vp.ndevs = 2;
      vp.devs[0] = 0;
      vp.devs[1] = 1;
      int vdev = -1, after = -1;
      r = t->makeVDevice(&vdev, &vp);
      t->devices(&after);
      printf("makeVDevice(0+1): result %d, vdev %d, devices after %d\n", r, vdev, after);
    }
  }
  if constexpr (V >= 11) {
    if (t->setNetAttr == nullptr) {
      printf("setNetAttr: entry is NULL\n");
    } else {
      ncclscope_net_attr_t attr;
      memset(&attr, 0xFF, sizeof(attr));  // unset fields are -1, as NCCL leaves them
      printf("setNetAttr(unset): result %d\n", t->setNetAttr(ctx, &attr));
    }
  }

  // One message per device listed in NET_PROBE_DEVS (default "0"), send and receive comms in this process.
  auto one_message = [&](int dev) -> bool {
    unsigned char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE] = {};
    void* lc = nullptr;
    if constexpr (V >= 11)
      r = t->listen(ctx, dev, handle, &lc);
    else
      r = t->listen(dev, handle, &lc);
    printf("listen(dev %d): %d\n", dev, r);
    if (r != 0) return false;
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
        if constexpr (V >= 11)
          r = t->connect(ctx, dev, handle, &sc, &dh);
        else if constexpr (V == 10) {
          ncclscope_net_comm_config_t cfg{NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};
          r = t->connect(dev, &cfg, handle, &sc, &dh);
        } else {
          r = t->connect(dev, handle, &sc, &dh);
        }
        if (r != 0) {
          printf("connect: %d\n", r);
          return false;
        }
      }
      if (rc == nullptr) {
        r = t->accept(lc, &rc, &dh);
        if (r != 0) {
          printf("accept: %d\n", r);
          return false;
        }
      }
    }
    printf("connected: %s\n", sc != nullptr && rc != nullptr ? "yes" : "no (20 s)");
    if (sc == nullptr || rc == nullptr) return false;

    std::vector<unsigned char> src(bytes), dst(bytes + 64, 0);
    for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
    void* smh = nullptr;
    void* rmh = nullptr;
    int rs = t->regMr(sc, src.data(), bytes, NCCLSCOPE_PTR_HOST, &smh);
    int rr = t->regMr(rc, dst.data(), dst.size(), NCCLSCOPE_PTR_HOST, &rmh);
    printf("regMr: send %d recv %d\n", rs, rr);
    if (rs != 0 || rr != 0) return false;
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
      if constexpr (V >= 10)
        r = t->irecv(rc, 1, &rdata, &rsize, &tag, &rmh, &phandle, &rreq);
      else if constexpr (V == 9)
        r = t->irecv(rc, 1, &rdata, &rsize, &tag, &rmh, &rreq);
      else
        r = t->irecv(rc, 1, &rdata, &rsize_int, &tag, &rmh, &rreq);
      if (r != 0) {
        printf("irecv: %d\n", r);
        return false;
      }
    }
    while (sreq == nullptr && Now() < deadline) {
      if constexpr (V >= 10)
        r = t->isend(sc, src.data(), bytes, tag, smh, phandle, &sreq);
      else if constexpr (V == 9)
        r = t->isend(sc, src.data(), bytes, tag, smh, &sreq);
      else
        r = t->isend(sc, src.data(), static_cast<int>(bytes), tag, smh, &sreq);
      if (r != 0) {
        printf("isend: %d\n", r);
        return false;
      }
    }
    int sdone = 0, rdone = 0, ssize = -1, rsizes[NCCLSCOPE_NET_MAX_REQUESTS] = {};
    double t0 = Now();
    while ((!sdone || !rdone) && Now() < deadline) {
      if (!sdone && (r = t->test(sreq, &sdone, &ssize)) != 0) {
        printf("test(send): %d\n", r);
        return false;
      }
      if (!rdone && (r = t->test(rreq, &rdone, rsizes)) != 0) {
        printf("test(recv): %d\n", r);
        return false;
      }
    }
    double secs = Now() - t0;
    bool intact = rdone && memcmp(src.data(), dst.data(), bytes) == 0;
    printf("message: %zu bytes %s; test sizes send=%d recv=%d; %.3f ms\n", bytes,
           !sdone || !rdone ? "NOT DONE in 20 s"
           : intact         ? "intact"
                            : "CORRUPTED",
           ssize, rsizes[0], secs * 1e3);
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
    return intact && static_cast<size_t>(rsizes[0]) == bytes && static_cast<size_t>(ssize) == bytes;
  };
  bool all_ok = true;
  std::string devs = getenv("NET_PROBE_DEVS") != nullptr ? getenv("NET_PROBE_DEVS") : "0";
  for (size_t pos = 0; pos <= devs.size();) {
    size_t comma = devs.find(',', pos);
    if (comma == std::string::npos) comma = devs.size();
    all_ok = one_message(atoi(devs.substr(pos, comma - pos).c_str())) && all_ok;
    pos = comma + 1;
  }
  if constexpr (V >= 11) {
    if (t->finalize != nullptr) printf("finalize: %d\n", t->finalize(ctx));
  }
  return all_ok ? 0 : 1;
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
    case 8:
      rc = Probe<8>(static_cast<const ncclscope_net_v8_t*>(t), bytes);
      break;
    case 9:
      rc = Probe<9>(static_cast<const ncclscope_net_v9_t*>(t), bytes);
      break;
    case 10:
      rc = Probe<10>(static_cast<const ncclscope_net_v10_t*>(t), bytes);
      break;
    case 11:
      rc = Probe<11>(static_cast<const ncclscope_net_v11_t*>(t), bytes);
      break;
    case 12:
      rc = Probe<12>(static_cast<const ncclscope_net_v12_t*>(t), bytes);
      break;
    default:
      fprintf(stderr, "version %d: 8..12\n", version);
  }
  fflush(stdout);
  // Exit without unloading: some plugins keep threads that outlive their tables (NCCL never dlcloses
  // a net plugin while it runs either).
  _exit(rc);
}

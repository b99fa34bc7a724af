/* A stand-in for a cluster's own net plugin (aws-ofi-nccl, gIB), installed the way NCCL finds one by itself:
 * CMakeLists.txt builds it as build/fake-cluster/libnccl-net.so, apart from build/lib so that no other test
 * sees it. Its table, named "FakeCluster", is the one of libnccl-net-inner-tcp-v12.so (found through the
 * loader's search at load time, the table copied over ours as hostile.c's reentrant mode does), with isend and
 * finalize its own: it counts the bytes and sends it carried, and writes them at every finalize and send-close
 * to FAKE_CLUSTER_DIR/fake-cluster-<pid>.txt, the proof that it, not ncclscope's own transport, moved the data.
 * Without the TCP inner its init fails, saying so. Our own C, over our ABI header only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclscope/abi/net.h"

static ncclscope_result_t NoCarrier(void** ctx, uint64_t comm_id, ncclscope_net_comm_config_t* config,
                                    ncclscope_logger_t log, ncclscope_profiler_callback_t prof) {
  if (log != NULL) log(2 /* WARN */, ~0UL, __FILE__, __LINE__, "FakeCluster: libnccl-net-inner-tcp-v12.so not found");
  if (ctx != NULL) *ctx = NULL;
  return NCCLSCOPE_SYSTEM_ERROR;
}

__attribute__((visibility("default"))) ncclscope_net_v12_t ncclNetPlugin_v12 = {.name = "FakeCluster",
                                                                                .init = NoCarrier};

static ncclscope_net_v12_t carrier;  /* the TCP inner's own table */
static unsigned long long sent_bytes, isends, inits, finalizes;

static void WriteMarker(void) {
  const char* dir = getenv("FAKE_CLUSTER_DIR");
  if (dir == NULL) return;
  char path[4096], tmp[4200];
  snprintf(path, sizeof(path), "%s/fake-cluster-%d.txt", dir, (int)getpid());
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE* f = fopen(tmp, "w");
  if (f == NULL) return;
  fprintf(f, "inits %llu\nfinalizes %llu\nisends %llu\nsent_bytes %llu\n", __atomic_load_n(&inits, __ATOMIC_RELAXED),
          __atomic_load_n(&finalizes, __ATOMIC_RELAXED), __atomic_load_n(&isends, __ATOMIC_RELAXED),
          __atomic_load_n(&sent_bytes, __ATOMIC_RELAXED));
  fclose(f);
  rename(tmp, path);
}

static ncclscope_result_t Init(void** ctx, uint64_t comm_id, ncclscope_net_comm_config_t* config,
                               ncclscope_logger_t log, ncclscope_profiler_callback_t prof) {
  ncclscope_result_t r = carrier.init(ctx, comm_id, config, log, prof);
  if (r == NCCLSCOPE_SUCCESS) __atomic_add_fetch(&inits, 1, __ATOMIC_RELAXED);
  return r;
}

static ncclscope_result_t Isend(void* comm, void* data, size_t size, int tag, void* mh, void* ph, void** req) {
  ncclscope_result_t r = carrier.isend(comm, data, size, tag, mh, ph, req);
  if (r == NCCLSCOPE_SUCCESS && *req != NULL) {
    __atomic_add_fetch(&sent_bytes, size, __ATOMIC_RELAXED);
    __atomic_add_fetch(&isends, 1, __ATOMIC_RELAXED);
  }
  return r;
}

static ncclscope_result_t CloseSend(void* comm) {
  ncclscope_result_t r = carrier.closeSend(comm);
  WriteMarker();
  return r;
}

static ncclscope_result_t Finalize(void* ctx) {
  ncclscope_result_t r = carrier.finalize(ctx);
  __atomic_add_fetch(&finalizes, 1, __ATOMIC_RELAXED);
  WriteMarker();
  return r;
}

__attribute__((constructor)) static void FindCarrier(void) {
  void* h = dlopen("libnccl-net-inner-tcp-v12.so", RTLD_NOW | RTLD_LOCAL);
  const ncclscope_net_v12_t* t = h != NULL ? (const ncclscope_net_v12_t*)dlsym(h, "ncclNetPlugin_v12") : NULL;
  if (t == NULL) return;
  carrier = *t;
  const char* name = ncclNetPlugin_v12.name;
  ncclNetPlugin_v12 = *t;
  ncclNetPlugin_v12.name = name;
  ncclNetPlugin_v12.init = Init;
  ncclNetPlugin_v12.isend = Isend;
  ncclNetPlugin_v12.closeSend = CloseSend;
  ncclNetPlugin_v12.finalize = Finalize;
}

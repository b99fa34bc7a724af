/* Hostile inner net plugins, one per HOSTILE_* mode (CMakeLists.txt builds each as libnccl-net-inner-<mode>.so):
 * what a wrapped plugin may do to ncclscope, or to ncclscope-loadcheck, that a failing init does not.
 *   crash           init dereferences NULL (SIGSEGV);
 *   exit            init calls exit(3), ending the process;
 *   hang            init never returns;
 *   reentrant       its table is a copy of ncclscope's own (taken from the loaded ncclscope at load time):
 *                   every entry points back into ncclscope;
 *   reentrant-call  its own init calls ncclscope's init (a plugin that forwards to ncclscope).
 * ncclscope is found as already loaded: HOSTILE_TARGET (a path), else libnccl-net-ncclscope.so through the
 * loader's search; RTLD_NOLOAD, so nothing new is mapped. Every other entry fails (failing_entries.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "failing_entries.h"

#if defined(HOSTILE_REENTRANT) || defined(HOSTILE_REENTRANT_CALL)
static const ncclscope_net_v12_t* Ncclscope(void) {
  const char* target = getenv("HOSTILE_TARGET");
  void* h = dlopen(target != NULL ? target : "libnccl-net-ncclscope.so", RTLD_NOW | RTLD_NOLOAD);
  return h != NULL ? (const ncclscope_net_v12_t*)dlsym(h, "ncclNetPlugin_v12") : NULL;
}
#endif

static ncclscope_result_t Init(void** ctx, uint64_t comm_id, ncclscope_net_comm_config_t* config,
                               ncclscope_logger_t log, ncclscope_profiler_callback_t prof) {
#if defined(HOSTILE_CRASH)
  volatile int* nowhere = NULL;
  *nowhere = 1;
#elif defined(HOSTILE_EXIT)
  exit(3);
#elif defined(HOSTILE_HANG)
  for (;;) pause();
#elif defined(HOSTILE_REENTRANT_CALL)
  const ncclscope_net_v12_t* us = Ncclscope();
  if (us != NULL) return us->init(ctx, comm_id, config, log, prof);
#endif
  if (ctx != NULL) *ctx = NULL;
  return NCCLSCOPE_SYSTEM_ERROR;  /* reentrant, where the copy failed: ncclscope not found */
}

#if defined(HOSTILE_REENTRANT)
__attribute__((visibility("default"))) ncclscope_net_v12_t ncclNetPlugin_v12 = INNER_V12_TABLE("inner-reentrant", Init);

/* At load: ncclscope's table over ours, keeping our name (a wrapper that "forwards" by copying the table). */
__attribute__((constructor)) static void CopyNcclscope(void) {
  const ncclscope_net_v12_t* us = Ncclscope();
  if (us == NULL) return;
  const char* name = ncclNetPlugin_v12.name;
  memcpy(&ncclNetPlugin_v12, us, sizeof(ncclNetPlugin_v12));
  ncclNetPlugin_v12.name = name;
}
#else
__attribute__((visibility("default"))) const ncclscope_net_v12_t ncclNetPlugin_v12 =
    INNER_V12_TABLE("inner-" HOSTILE_NAME, Init);
#endif

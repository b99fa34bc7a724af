/* libnccl-net-inner-failinit.so: a net plugin whose init always fails, as a cluster's plugin does on a host
 * without its fabric. init logs one WARN through the logger it was given and returns ncclSystemError; every
 * other entry fails without touching anything (failing_entries.h). */
#include "failing_entries.h"

#define FAILINIT_WHY "inner-failinit: no fabric provider found (this test plugin's init always fails)"

static ncclscope_result_t Init(void** ctx, uint64_t comm_id, ncclscope_net_comm_config_t* config,
                               ncclscope_logger_t log, ncclscope_profiler_callback_t prof) {
  if (ctx != NULL) *ctx = NULL;
  if (log != NULL) log(NCCLSCOPE_LOG_WARN, NCCLSCOPE_SUBSYS_INIT | NCCLSCOPE_SUBSYS_NET, __func__, __LINE__, FAILINIT_WHY);
  return NCCLSCOPE_SYSTEM_ERROR;
}

__attribute__((visibility("default"))) const ncclscope_net_v12_t ncclNetPlugin_v12 =
    INNER_V12_TABLE("inner-failinit", Init);

/* libnccl-net-inner-notable.so: a net plugin too old for the chain, which takes v8..v12. It exports only
 * ncclNetPlugin_v7 (NCCL 2.14-2.18), so a loader looking for a table it wants finds none. Nothing may call
 * it: every entry is NULL, only the name is set. ncclNet_v7_t has the slots of v8 (a name and 18
 * functions; v8 changed argument types, not the layout): 152 bytes. */
#include <assert.h>

typedef struct {
  const char* name;
  void (*entries[18])(void);
} inner_net_v7_t;

static_assert(sizeof(inner_net_v7_t) == 152, "ncclNet_v7_t is 152 bytes on LP64");

__attribute__((visibility("default"))) const inner_net_v7_t ncclNetPlugin_v7 = {.name = "inner-notable"};

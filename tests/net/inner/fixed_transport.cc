// The one object that makes a link of ncclscope's objects an inner test plugin (src/common/build_role.h):
// its net init takes this transport whatever NCCLSCOPE_TRANSPORT says, and it starts none of the plugin's
// services, which the ncclscope wrapping it runs. Hidden: only this link's own objects resolve it.
#include "common/build_role.h"

#ifndef NCCLSCOPE_INNER_TRANSPORT
#error "NCCLSCOPE_INNER_TRANSPORT (\"tcp\" or \"ib\") must be defined"
#endif

extern "C" __attribute__((visibility("hidden"))) const char* ncclscope_fixed_transport() {
  return NCCLSCOPE_INNER_TRANSPORT;
}

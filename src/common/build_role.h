// Which library these objects were linked into. The plugin NCCL loads is the default. The stand-alone inner
// net plugins built for the wrapper's tests (tests/net/inner) add one object defining
// ncclscope_fixed_transport(): it fixes their transport whatever NCCLSCOPE_TRANSPORT or NCCLSCOPE_NET_CHAIN
// say (the ncclscope wrapping them reads those too), and keeps the plugin's services (metrics endpoint, dump
// signal, stall watch) off, since the wrapping ncclscope runs them. A weak hidden reference: null when no
// object of the link defines it.
#ifndef NCCLSCOPE_COMMON_BUILD_ROLE_H_
#define NCCLSCOPE_COMMON_BUILD_ROLE_H_

extern "C" const char* ncclscope_fixed_transport() __attribute__((weak, visibility("hidden")));

namespace ncclscope {

// The transport an inner test plugin is fixed to, or nullptr in the plugin NCCL loads.
inline const char* FixedTransport() {
  return ncclscope_fixed_transport != nullptr ? ncclscope_fixed_transport() : nullptr;
}

}  // namespace ncclscope

#endif  // NCCLSCOPE_COMMON_BUILD_ROLE_H_

// The net plugin NCCL loads by itself when NCCL_NET_PLUGIN is unset: `libnccl-net.so`, the one name NCCL tries
// then (NCCL 2.28 and 2.30 alike, nccl-abi.md §1.1), found as the loader finds it
// (LD_LIBRARY_PATH first, then its cache and the system folders). A job whose NCCL_NET_PLUGIN names ncclscope
// stops NCCL from trying it, so `auto` wraps it instead (transport_registry.h): the cluster's own transport keeps
// the job's data. ncclscope's own file under that name (a link to it, or another name of the same inode) is not
// one to wrap, nor is a file NCCL could not load either.
// Thread-safety: dlopen's own; nothing is kept here (a library found stays loaded, as the chain keeps it).
#ifndef NCCLSCOPE_NET_CHAIN_DEFAULT_PLUGIN_H_
#define NCCLSCOPE_NET_CHAIN_DEFAULT_PLUGIN_H_

#include <string>

namespace ncclscope::net::chain {

inline constexpr char kDefaultNetPluginName[] = "libnccl-net.so";

struct DefaultNetPlugin {
  std::string file;     // the file to wrap, "" when there is none
  std::string skipped;  // why a file found under the name is not wrapped, "" when none was skipped
};

DefaultNetPlugin FindDefaultNetPlugin();

}  // namespace ncclscope::net::chain

#endif  // NCCLSCOPE_NET_CHAIN_DEFAULT_PLUGIN_H_

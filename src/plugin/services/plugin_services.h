// The one place that wires the plugin's long-lived parts together: the exporters' dump hooks (core/registry.h)
// and every runtime Service (common/runtime.h). Nothing registers itself from a static initialiser: NCCL's
// first init call (profiler or net, any ABI version) runs this, and so do tests that drive the core without
// the NCCL tables. It sits above every module (common, profiler, exporters), so the ABI layers reach them
// through this one function without including each other's headers.
#ifndef NCCLSCOPE_PLUGIN_SERVICES_PLUGIN_SERVICES_H_
#define NCCLSCOPE_PLUGIN_SERVICES_PLUGIN_SERVICES_H_

namespace ncclscope {

// Registers every dump hook and service of this build once per process; later calls return at once. The
// library is linked -z nodelete, so the registrations outlive any number of init/finalize cycles (the
// runtime starts and stops the services each cycle). Thread-safe.
void InstallPluginServices();

}  // namespace ncclscope

#endif  // NCCLSCOPE_PLUGIN_SERVICES_PLUGIN_SERVICES_H_

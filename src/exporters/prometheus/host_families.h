// The host's NIC counters as metric families, from counters already read (host_nics/host_nics.h): what
// AppendHostFamilies (metric_families.h) serves at each scrape of the speaking process, and what the benchmark
// times on a host laid out with 8 NICs (tests/bench/host).
#ifndef NCCLSCOPE_EXPORTERS_PROMETHEUS_HOST_FAMILIES_H_
#define NCCLSCOPE_EXPORTERS_PROMETHEUS_HOST_FAMILIES_H_

#include <prometheus/metric_family.h>

#include <vector>

#include "exporters/prometheus/family_builders.h"
#include "host_nics/host_nics.h"

namespace ncclscope {

void AppendHostNicFamilies(const HostNics& nics, prom::Level level, std::vector<prometheus::MetricFamily>* out);

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_PROMETHEUS_HOST_FAMILIES_H_

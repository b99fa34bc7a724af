// NCCLSCOPE_PROM_TEXTFILE_DIR: the process's metrics as a node_exporter textfile, ncclscope-<host>-<pid>-<random>.prom,
// rewritten atomically every NCCLSCOPE_PROM_TEXTFILE_INTERVAL_S (10 s) while the plugin is in use and once more when the last communicator ends
// (then only the NIC and process counters are left: communicators leave the registry at finalize). Works with
// or without the HTTP endpoint (NCCLSCOPE_PROM_PORT=-1). A runtime Service: its thread is joined at the last
// finalize.
// Every series carries the identity labels (common/process_identity.h) and `pid`, so that the textfiles of
// several ranks on one host never collide in node_exporter; no series has a label named `job` or `instance`.
// The file outlives the process by NCCLSCOPE_OUTPUT_GRACE_S (common/output_dir.h, docs/identity-and-lifecycle.md).
#ifndef NCCLSCOPE_EXPORTERS_PROMETHEUS_TEXTFILE_WRITER_H_
#define NCCLSCOPE_EXPORTERS_PROMETHEUS_TEXTFILE_WRITER_H_

#include <prometheus/metric_family.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/output_dir.h"
#include "common/process_identity.h"
#include "common/runtime.h"

namespace ncclscope {

// The textfile's text: `families` with the identity labels and pid="<pid>" added to every series (a label the
// series has already is kept, not repeated), and any label named `job` or `instance` renamed `exported_job`,
// `exported_instance` (what Prometheus would do on the node_exporter scrape anyway, with honor_labels off).
std::string SerializeTextfile(std::vector<prometheus::MetricFamily> families, const ProcessIdentity& identity,
                              long pid);

class TextfileWriter final : public Service {
 public:
  static TextfileWriter& Instance();
  const char* name() const override { return "prometheus-textfile"; }
  void Start() override;
  void Stop() override;

 private:
  void Run();
  void Write();
  bool WaitForStop(absl::Duration timeout);

  OutputDir* dir_ = nullptr;
  std::string name_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_PROMETHEUS_TEXTFILE_WRITER_H_

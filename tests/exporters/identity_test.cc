// The identity labels (docs/metrics.md, "Identity"): read from the launcher's variables (precedence, bad
// values skipped with a warning), the GPU UUID's spelling, and where they go: target labels of the file_sd
// file (the exposition then has none of them), ncclscope_process_info without file_sd, every series of the
// textfile (with pid; never a `job` or `instance` label). ctest runs each TEST in its own process, so
// Identity(), computed once per process, sees the environment each test sets first.
#include <dirent.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/params.h"
#include "common/process_identity.h"
#include "common/runtime.h"
#include "common/safe_text.h"
#include "exporters/prometheus/metric_families.h"
#include "exporters/prometheus/metrics_endpoint.h"
#include "exporters/prometheus/textfile_writer.h"
#include "http_get.h"
#include "log_capture.h"
#include "plugin/services/plugin_services.h"

namespace ncclscope {
namespace {

using Env = std::map<std::string, std::string>;

ProcessIdentity FromEnv(const Env& env, std::vector<std::string>* warnings = nullptr) {
  ::ncclscope::testing::LogCapture::Clear();
  SetNcclLogger(&::ncclscope::testing::LogCapture::Logger);
  ProcessIdentity id = IdentityFromEnv(
      [&](const char* var) -> const char* {
        auto it = env.find(var);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      "job7", "node1");
  SetNcclLogger(nullptr);
  if (warnings != nullptr) *warnings = ::ncclscope::testing::LogCapture::AllWarnings();
  return id;
}

TEST(IdentityFromEnv, RankPrecedenceFollowsTheDocumentedOrder) {
  EXPECT_EQ(FromEnv({{"RANK", "3"}, {"SLURM_PROCID", "9"}, {"OMPI_COMM_WORLD_RANK", "8"}, {"PMI_RANK", "7"}}).global_rank, "3");
  EXPECT_EQ(FromEnv({{"SLURM_PROCID", "9"}, {"OMPI_COMM_WORLD_RANK", "8"}, {"PMI_RANK", "7"}}).global_rank, "9");
  EXPECT_EQ(FromEnv({{"OMPI_COMM_WORLD_RANK", "8"}, {"PMI_RANK", "7"}}).global_rank, "8");
  EXPECT_EQ(FromEnv({{"PMI_RANK", "7"}}).global_rank, "7");
  EXPECT_EQ(FromEnv({}).global_rank, "");
  EXPECT_EQ(FromEnv({{"LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}, {"SLURM_LOCALID", "3"}}).local_rank, "1");
  EXPECT_EQ(FromEnv({{"SLURM_LOCALID", "3"}, {"MPI_LOCALRANKID", "4"}}).local_rank, "3");
  EXPECT_EQ(FromEnv({{"MPI_LOCALRANKID", "4"}}).local_rank, "4");
  EXPECT_EQ(FromEnv({{"RANK", "0"}}).global_rank, "0") << "rank 0 is a rank";
  ProcessIdentity id = FromEnv({{"RANK", "12"}, {"LOCAL_RANK", "4"}});
  EXPECT_EQ(id.job, "job7");
  EXPECT_EQ(id.host, "node1");
}

TEST(IdentityFromEnv, InvalidValuesAreSkippedWithAWarning) {
  for (const char* bad : {"x", "-1", "+2", " 2", "2 ", "3.0", "0x10", "99999999999999999999", "2147483648"}) {
    std::vector<std::string> warnings;
    ProcessIdentity id = FromEnv({{"RANK", bad}, {"SLURM_PROCID", "5"}}, &warnings);
    EXPECT_EQ(id.global_rank, "5") << "RANK='" << bad << "'";
    ASSERT_EQ(warnings.size(), 1u) << "RANK='" << bad << "'";
    EXPECT_NE(warnings[0].find(std::string("RANK='") + bad + "'"), std::string::npos) << warnings[0];
  }
  std::vector<std::string> warnings;
  ProcessIdentity id = FromEnv({{"LOCAL_RANK", "4096"}, {"SLURM_LOCALID", "abc"}}, &warnings);
  EXPECT_EQ(id.local_rank, "");
  EXPECT_EQ(warnings.size(), 2u) << ::testing::PrintToString(warnings);
  // Empty means unset: no warning.
  FromEnv({{"RANK", ""}, {"SLURM_PROCID", "1"}}, &warnings);
  EXPECT_TRUE(warnings.empty()) << ::testing::PrintToString(warnings);
}

TEST(IdentityFromEnv, LabelsLeaveEmptyValuesOut) {
  ProcessIdentity id;
  id.host = "h";
  id.global_rank = "0";
  std::vector<std::pair<std::string, std::string>> labels = id.Labels();
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels[0], std::make_pair(std::string("host"), std::string("h")));
  EXPECT_EQ(labels[1], std::make_pair(std::string("global_rank"), std::string("0")));
  id.job = "j";
  id.local_rank = "1";
  id.gpu_uuid = "GPU-x";
  labels = id.Labels();
  ASSERT_EQ(labels.size(), 5u);
  for (size_t i = 0; i < labels.size(); ++i) EXPECT_EQ(labels[i].first, IdentityLabelNames()[i]);
}

TEST(GpuUuid, FormattedAsNvidiaSmiDoes) {
  const unsigned char bytes[16] = {0x3f, 0x2a, 0x06, 0x9b, 0x1c, 0x4d, 0x5e, 0x60,
                                   0x71, 0x82, 0x93, 0xa4, 0xb5, 0xc6, 0xd7, 0xe8};
  EXPECT_EQ(FormatGpuUuid(bytes, false), "GPU-3f2a069b-1c4d-5e60-7182-93a4b5c6d7e8");
  EXPECT_EQ(FormatGpuUuid(bytes, true), "MIG-3f2a069b-1c4d-5e60-7182-93a4b5c6d7e8");
  const unsigned char zero[16] = {};
  EXPECT_EQ(FormatGpuUuid(zero, false), "GPU-00000000-0000-0000-0000-000000000000");
}

TEST(GpuUuid, EmptyWithoutADriverOrAContext) {
  // No CUDA driver in this process (the sim and the tests never load one): nothing, at once.
  EXPECT_EQ(CurrentGpuUuid(), "");
}

// The launchers' job ids and the Kubernetes node name, through the parameters as Identity() reads them.
std::string JobFrom(const Env& env) {
  auto getenv_fn = [&](const char* var) -> const char* {
    auto it = env.find(var);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  return JobIdFromEnv(ParseParams(getenv_fn).Str(ParamId::kJobId), getenv_fn);
}

TEST(IdentityFromEnv, JobIdFromTheLaunchersInTheDocumentedOrder) {
  const std::vector<std::pair<std::string, std::string>> order = {
      {"NCCLSCOPE_JOB_ID", "mine"}, {"SLURM_JOB_ID", "4242"},  {"FLUX_JOB_ID", "f1"},         {"PBS_JOBID", "7.pbs"},
      {"LSB_JOBID", "55"},          {"JOBSET_NAME", "llm-a"}, {"TORCHELASTIC_RUN_ID", "rdzv-9"}};
  Env env(order.begin(), order.end());
  for (const auto& [var, value] : order) {
    EXPECT_EQ(JobFrom(env), value) << var << " comes next";
    env.erase(var);
  }
  EXPECT_EQ(JobFrom(env), "");
  // torchrun without --rdzv-id exports "none": no job id.
  EXPECT_EQ(JobFrom({{"TORCHELASTIC_RUN_ID", "none"}}), "");
  EXPECT_EQ(JobFrom({{"TORCHELASTIC_RUN_ID", "None"}, {"JOBSET_NAME", ""}}), "");
  EXPECT_EQ(JobFrom({{"NCCLSCOPE_JOB_ID", ""}, {"TORCHELASTIC_RUN_ID", "r2"}}), "r2") << "empty means unset";
}

TEST(IdentityFromEnv, HostIsTheKubernetesNodeNameWhenSet) {
  auto host = [](const Env& env) {
    return HostLabel(ParseParams([&](const char* var) -> const char* {
                       auto it = env.find(var);
                       return it == env.end() ? nullptr : it->second.c_str();
                     }).Str(ParamId::kNodeName),
                     "pod-7f9c");
  };
  EXPECT_EQ(host({}), "pod-7f9c");
  EXPECT_EQ(host({{"NODE_NAME", "gpu-node-17"}}), "gpu-node-17");
  EXPECT_EQ(host({{"NODE_NAME", "gpu-node-17"}, {"NCCLSCOPE_NODE_NAME", "n3"}}), "n3");
  EXPECT_EQ(host({{"NODE_NAME", ""}}), "pod-7f9c");
}

TEST(IdentityFromEnv, IdentityUsesTheNodeNameAndTheLauncherJobId) {
  unsetenv("NCCLSCOPE_JOB_ID");
  unsetenv("SLURM_JOB_ID");
  setenv("TORCHELASTIC_RUN_ID", "rdzv-31", 1);
  setenv("NODE_NAME", "gpu-node-17", 1);
  ReloadParams();
  EXPECT_EQ(Identity().job, "rdzv-31");
  EXPECT_EQ(Identity().host, "gpu-node-17");
}

// The job and host labels are made safe where they are read (common/safe_text.h), so the exposition, the
// textfile, file_sd and the dumps all carry the same valid value; the warning names what was changed.
TEST(IdentityFromEnv, JobAndHostAreMadeSafeWhereTheyAreRead) {
  ::ncclscope::testing::LogCapture::Clear();
  SetNcclLogger(&::ncclscope::testing::LogCapture::Logger);
  const ProcessIdentity id = IdentityFromEnv([](const char*) -> const char* { return nullptr; },
                                             "job\xFF\n7", std::string(100 * 1024, 'h'));
  SetNcclLogger(nullptr);
  EXPECT_EQ(id.job, "job\xEF\xBF\xBD\xEF\xBF\xBD" "7");
  EXPECT_EQ(id.host, std::string(kMaxIdentityValueBytes, 'h'));
  const std::vector<std::string> warnings = ::ncclscope::testing::LogCapture::AllWarnings();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("ncclscope_job label"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("2 invalid byte sequence(s) or control character(s)"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("cut from 102400 bytes"), std::string::npos) << warnings[1];
  std::vector<std::string> none;
  FromEnv({}, &none);
  EXPECT_TRUE(none.empty()) << "plain values warn about nothing";
}

// MIG: the FAKE driver (fake_cuda.cc) plays a MIG instance of a GPU and the FAKE NVML (fake_nvml.cc) knows both.
constexpr char kFakeMig[] = "MIG-6a1b2c3d-0000-4000-8000-00000000000a";
constexpr char kFakeGpu[] = "GPU-9f8e7d6c-1111-4111-8111-00000000000b";

void* OpenFakeNvml() {
  void* h = dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(h, nullptr) << dlerror();
  return h;
}

std::vector<std::string> Apply(const std::string& cuda_uuid, const char* nvml, ProcessIdentity* id) {
  ::ncclscope::testing::LogCapture::Clear();
  SetNcclLogger(&::ncclscope::testing::LogCapture::Logger);
  ApplyGpuUuid(cuda_uuid, nvml, id);
  SetNcclLogger(nullptr);
  return ::ncclscope::testing::LogCapture::AllWarnings();
}

TEST(MigIdentity, NvmlGivesTheParentGpuAndTheInstanceId) {
  void* nvml = OpenFakeNvml();
  ProcessIdentity id;
  EXPECT_TRUE(Apply(kFakeMig, FAKE_NVML_PATH, &id).empty());
  EXPECT_EQ(id.gpu_uuid, kFakeGpu) << "dcgm-exporter's UUID: the parent GPU's";
  EXPECT_EQ(id.gpu_instance_id, "3") << "dcgm-exporter's GPU_I_ID";
  EXPECT_EQ(id.mig_uuid, kFakeMig);
  auto open_count = reinterpret_cast<int (*)()>(dlsym(nvml, "fake_nvml_open_count"));
  ASSERT_NE(open_count, nullptr);
  EXPECT_EQ(open_count(), 0) << "every nvmlInit_v2 has its nvmlShutdown";
  std::vector<std::pair<std::string, std::string>> labels = id.Labels();
  EXPECT_EQ(labels.back(), std::make_pair(std::string("gpu_instance_id"), std::string("3")));
  for (const auto& [name, value] : labels) EXPECT_NE(value, kFakeMig) << "mig_uuid is no identity label";
}

TEST(MigIdentity, EveryNvmlFailureFallsBackToTheMigUuidWithOneWarning) {
  void* nvml = OpenFakeNvml();
  auto fail = reinterpret_cast<void (*)(const char*, int)>(dlsym(nvml, "fake_nvml_fail"));
  auto open_count = reinterpret_cast<int (*)()>(dlsym(nvml, "fake_nvml_open_count"));
  ASSERT_NE(fail, nullptr);
  for (const char* step : {"nvmlInit_v2", "nvmlDeviceGetHandleByUUID", "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
                           "nvmlDeviceGetUUID", "nvmlDeviceGetGpuInstanceId"}) {
    fail(step, 999);
    ProcessIdentity id;
    id.gpu_instance_id = "stale";
    std::vector<std::string> warnings = Apply(kFakeMig, FAKE_NVML_PATH, &id);
    EXPECT_EQ(id.gpu_uuid, kFakeMig) << step;
    EXPECT_EQ(id.gpu_instance_id, "") << step;
    EXPECT_EQ(id.mig_uuid, kFakeMig) << step;
    ASSERT_EQ(warnings.size(), 1u) << step;
    EXPECT_NE(warnings[0].find(std::string(step) + " returned 999"), std::string::npos) << warnings[0];
    EXPECT_EQ(open_count(), 0) << step;
  }
  fail("", 0);
  // A MIG UUID NVML does not know, and no NVML at all.
  ProcessIdentity id;
  std::vector<std::string> warnings = Apply("MIG-00000000-0000-0000-0000-000000000000", FAKE_NVML_PATH, &id);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("nvmlDeviceGetHandleByUUID returned 6"), std::string::npos) << warnings[0];
  warnings = Apply(kFakeMig, "/nonexistent/libnvidia-ml.so.1", &id);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cannot load"), std::string::npos) << warnings[0];
  EXPECT_EQ(id.gpu_uuid, kFakeMig);
}

TEST(MigIdentity, OffMigNvmlIsNeverAsked) {
  ProcessIdentity id;
  EXPECT_TRUE(Apply(kFakeGpu, "/nonexistent/libnvidia-ml.so.1", &id).empty());
  EXPECT_EQ(id.gpu_uuid, kFakeGpu);
  EXPECT_EQ(id.gpu_instance_id, "");
  EXPECT_EQ(id.mig_uuid, "");
  EXPECT_TRUE(Apply("", "/nonexistent/libnvidia-ml.so.1", &id).empty());
  EXPECT_EQ(id.gpu_uuid, "");
}

std::map<std::string, std::string> LabelsOf(const prometheus::ClientMetric& m) {
  std::map<std::string, std::string> out;
  for (const auto& l : m.label) out[l.name] = l.value;
  return out;
}

// The whole path as in a MIG job: the driver the process loaded (found by soname, never loaded by us), NVML
// by its usual name, then the labels: gpu_uuid and gpu_instance_id as identity labels, mig_uuid on
// ncclscope_process_info alone.
TEST(MigIdentity, AMigProcessJoinsDcgmByParentUuidAndInstance) {
  ASSERT_NE(dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL), nullptr) << dlerror();
  OpenFakeNvml();
  EXPECT_EQ(CurrentGpuUuid(), kFakeMig);
  EXPECT_EQ(Identity().gpu_uuid, kFakeGpu);
  EXPECT_EQ(Identity().gpu_instance_id, "3");
  EXPECT_EQ(Identity().mig_uuid, kFakeMig);
  SetIdentityOnTarget(false);
  for (const bool on_target : {false, true}) {
    SetIdentityOnTarget(on_target);
    std::vector<prometheus::MetricFamily> families = CollectMetricFamilies();
    for (const auto& f : families) {
      for (const auto& m : f.metric) {
        std::map<std::string, std::string> labels = LabelsOf(m);
        if (f.name != "ncclscope_process_info") {
          EXPECT_FALSE(labels.contains("mig_uuid")) << f.name;
          continue;
        }
        EXPECT_EQ(labels["mig_uuid"], kFakeMig) << "on the process info metric with or without file_sd";
        EXPECT_EQ(labels.contains("gpu_uuid"), !on_target);
        if (!on_target) {
          EXPECT_EQ(labels["gpu_instance_id"], "3");
        }
      }
    }
  }
  // The textfile: the identity labels (with gpu_instance_id) on every series, mig_uuid on process info only.
  const std::string text = SerializeTextfile(CollectMetricFamilies(IdentityPlacement::kTextfile), Identity(), 1);
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_NE(line.find("gpu_uuid=\"" + std::string(kFakeGpu) + "\""), std::string::npos) << line;
    EXPECT_NE(line.find("gpu_instance_id=\"3\""), std::string::npos) << line;
    EXPECT_EQ(line.find("mig_uuid="), line.rfind("ncclscope_process_info", 0) == 0 ? line.find("mig_uuid=\"MIG-")
                                                                                     : std::string::npos)
        << line;
  }
}

void SetIdentityEnv() {
  setenv("NCCLSCOPE_JOB_ID", "job-42", 1);
  setenv("RANK", "6", 1);
  setenv("LOCAL_RANK", "2", 1);
}

const prometheus::MetricFamily* Find(const std::vector<prometheus::MetricFamily>& families, const std::string& name) {
  for (const auto& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::map<std::string, std::string> LabelMap(const prometheus::ClientMetric& m) {
  std::map<std::string, std::string> out;
  for (const auto& l : m.label) out[l.name] = l.value;
  return out;
}

TEST(LabelPlacement, WithoutFileSdTheIdentityIsOnProcessInfoOnly) {
  SetIdentityEnv();
  SetIdentityOnTarget(false);
  std::vector<prometheus::MetricFamily> families = CollectMetricFamilies();
  const prometheus::MetricFamily* build = Find(families, "ncclscope_build_info");
  ASSERT_NE(build, nullptr);
  ASSERT_EQ(build->metric.size(), 1u);
  EXPECT_EQ(LabelMap(build->metric[0]), (std::map<std::string, std::string>{{"version", NCCLSCOPE_VERSION}}));
  const prometheus::MetricFamily* info = Find(families, "ncclscope_process_info");
  ASSERT_NE(info, nullptr);
  ASSERT_EQ(info->metric.size(), 1u);
  std::map<std::string, std::string> labels = LabelMap(info->metric[0]);
  EXPECT_EQ(labels["pid"], std::to_string(getpid()));
  ASSERT_EQ(labels.count("nccl_version"), 1u) << "always there, empty when no NCCL is found";
  EXPECT_EQ(labels["nccl_version"], "") << "no NCCL in this test process";
  EXPECT_EQ(labels["ncclscope_job"], "job-42");
  EXPECT_EQ(labels["global_rank"], "6");
  EXPECT_EQ(labels["local_rank"], "2");
  EXPECT_FALSE(labels["host"].empty());
  EXPECT_EQ(labels.count("gpu_uuid"), 0u) << "no GPU here: left out, not empty";
  EXPECT_EQ(info->metric[0].gauge.value, 1);
  for (const auto& f : families) {
    if (f.name == "ncclscope_process_info") continue;
    for (const auto& m : f.metric) {
      for (const auto& l : m.label) {
        for (const std::string& id : IdentityLabelNames()) EXPECT_NE(l.name, id) << f.name;
      }
    }
  }
}

// A Kubernetes PodMonitor's targets cannot carry the identity: with series, every series does (once each), so
// rules and dashboards see host and ranks on every series; a file_sd target still takes them all.
TEST(LabelPlacement, SeriesModePutsTheIdentityOnEverySeriesUnlessTheTargetCarriesIt) {
  SetIdentityEnv();
  setenv("NCCLSCOPE_PROM_IDENTITY_LABELS", "series", 1);
  ReloadParams();
  SetIdentityOnTarget(false);
  size_t series = 0;
  for (const auto& f : CollectMetricFamilies()) {
    for (const auto& m : f.metric) {
      ++series;
      std::map<std::string, std::string> labels = LabelMap(m);
      EXPECT_EQ(labels["ncclscope_job"], "job-42") << f.name;
      EXPECT_EQ(labels["global_rank"], "6") << f.name;
      EXPECT_FALSE(labels["host"].empty()) << f.name;
      size_t job_labels = 0;
      for (const auto& l : m.label) job_labels += l.name == "ncclscope_job";
      EXPECT_EQ(job_labels, 1u) << f.name << ": one label of each name";
    }
  }
  EXPECT_GE(series, 3u);
  SetIdentityOnTarget(true);
  for (const auto& f : CollectMetricFamilies()) {
    for (const auto& m : f.metric) EXPECT_EQ(LabelMap(m).count("global_rank"), 0u) << f.name;
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Files(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) out.push_back(n);
    }
    closedir(d);
  }
  return out;
}

TEST(LabelPlacement, WithFileSdTheIdentityIsOnTheTargetAndNowhereInTheExposition) {
  SetIdentityEnv();
  char dir_buf[] = "/tmp/ncclscope-sd-XXXXXX";
  ASSERT_NE(mkdtemp(dir_buf), nullptr);
  const std::string dir = dir_buf;
  setenv("NCCLSCOPE_SD_DIR", dir.c_str(), 1);
  setenv("NCCLSCOPE_PROM_PORT", "0", 1);
  setenv("NCCLSCOPE_PROM_BIND", "127.0.0.1", 1);
  InstallPluginServices();  // as NCCL's first init does: the runtime then runs the endpoint
  Runtime::Instance().Acquire("file_sd test");
  const int port = MetricsEndpoint::Instance().port();
  ASSERT_GT(port, 0);
  std::vector<std::string> files = Files(dir, ".json");
  ASSERT_EQ(files.size(), 1u);
  nlohmann::json sd = nlohmann::json::parse(ReadFile(dir + "/" + files[0]));
  ASSERT_EQ(sd.size(), 1u);
  EXPECT_EQ(sd[0]["targets"][0], "127.0.0.1:" + std::to_string(port));
  const nlohmann::json& labels = sd[0]["labels"];
  EXPECT_EQ(labels["ncclscope_job"], "job-42");
  EXPECT_EQ(labels["global_rank"], "6");
  EXPECT_EQ(labels["local_rank"], "2");
  EXPECT_TRUE(labels.contains("host"));
  EXPECT_FALSE(labels.contains("gpu_uuid")) << "empty labels are left out";
  EXPECT_FALSE(labels.contains("pid"));

  int status = 0;
  const std::string body = ::ncclscope::testing::HttpGet(port, "/metrics", &status);
  EXPECT_EQ(status, 200);
  const std::regex info("ncclscope_process_info\\{pid=\"" + std::to_string(getpid()) +
                        "\",nccl_version=\"\",nics=\"[^\"]*\",nic_mapping=\"[a-z_]+\"\\} 1");
  EXPECT_TRUE(std::regex_search(body, info)) << body;
  for (const std::string& id : IdentityLabelNames()) {
    EXPECT_EQ(body.find(id + "=\""), std::string::npos) << id << " is both on the target and in the exposition";
  }
  Runtime::Instance().Release("file_sd test");
  EXPECT_EQ(Files(dir, ".json").size(), 1u) << "the target outlives the endpoint by the grace period";
}

TEST(LabelPlacement, TextfileSeriesCarryIdentityAndPidAndNeverJobOrInstance) {
  ProcessIdentity id;
  id.job = "j1";
  id.host = "node3";
  id.global_rank = "5";
  id.local_rank = "1";
  id.gpu_uuid = "GPU-00000000-0000-0000-0000-000000000001";
  std::vector<prometheus::MetricFamily> families = CollectMetricFamilies(IdentityPlacement::kTextfile);
  // A family with the labels node_exporter's own target has, and a histogram.
  prometheus::MetricFamily clash{"ncclscope_test_clash", "test", prometheus::MetricType::Counter, {}};
  prometheus::ClientMetric m;
  m.label = {{"job", "x"}, {"instance", "y"}, {"comm", "0x1"}};
  m.counter.value = 3;
  clash.metric.push_back(m);
  families.push_back(clash);
  prometheus::MetricFamily hist{"ncclscope_test_seconds", "test", prometheus::MetricType::Histogram, {}};
  prometheus::ClientMetric h;
  h.histogram.sample_count = 2;
  h.histogram.sample_sum = 0.5;
  h.histogram.bucket = {{1, 0.1}, {2, std::numeric_limits<double>::infinity()}};
  hist.metric.push_back(h);
  families.push_back(hist);

  const std::string text = SerializeTextfile(families, id, 4321);
  std::istringstream lines(text);
  std::string line;
  int samples = 0;
  const std::string want[] = {"ncclscope_job=\"j1\"", "host=\"node3\"", "global_rank=\"5\"", "local_rank=\"1\"",
                              "gpu_uuid=\"GPU-00000000-0000-0000-0000-000000000001\"", "pid=\"4321\""};
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    ++samples;
    for (const std::string& w : want) {
      if (w == "pid=\"4321\"" && line.rfind("ncclscope_process_info", 0) == 0) continue;  // its own, below
      EXPECT_NE(line.find(w), std::string::npos) << w << " missing: " << line;
      EXPECT_EQ(line.find(w), line.rfind(w)) << w << " twice: " << line;
    }
    EXPECT_FALSE(std::regex_search(line, std::regex("[{,]job=\""))) << line;
    EXPECT_FALSE(std::regex_search(line, std::regex("[{,]instance=\""))) << line;
  }
  EXPECT_GE(samples, 7) << text;
  EXPECT_NE(text.find("exported_job=\"x\""), std::string::npos) << text;
  EXPECT_NE(text.find("exported_instance=\"y\""), std::string::npos) << text;
  // pid stays the process's own on ncclscope_process_info (one pid label, not two).
  EXPECT_TRUE(std::regex_search(text, std::regex("ncclscope_process_info\\{pid=\"" + std::to_string(getpid()) + "\"")))
      << text;
}

}  // namespace
}  // namespace ncclscope

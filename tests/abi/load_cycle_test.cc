// NCCL dlopens the plugin per communicator tree and dlcloses it after the last one; net ABIs v8-v10 have
// no finalize. This drives the built library through that life 200 times for every exported table
// version and checks that threads, file descriptors and memory do not grow, and that every descriptor
// the plugin opens is close-on-exec.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>

#include "ncclscope/abi/layout_asserts.h"

namespace {

void QuietLogger(ncclscope_log_level_t, unsigned long, const char*, int, const char*, ...) {}

ncclscope_result_t NoopProfilerCallback(void**, int, void*, int64_t, void*) { return NCCLSCOPE_SUCCESS; }

int CountEntries(const char* dir) {
  int n = 0;
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - (std::string(dir) == "/proc/self/fd" ? 1 : 0);  // the DIR* itself
}

long RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      long kib = 0;
      in >> kib;
      return kib;
    }
  }
  return -1;
}

std::set<int> OpenFds() {
  std::set<int> fds;
  DIR* d = opendir("/proc/self/fd");
  int self = dirfd(d);
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd != self) fds.insert(fd);
  }
  closedir(d);
  return fds;
}

// One communicator's life as NCCL drives it: load, net init, profiler init from a thread that then exits,
// finalize both (net finalize only exists from v11), unload.
void OneCycle(int net_version, int profiler_version, uint64_t comm_id) {
  const int threads_before = CountEntries("/proc/self/task");
  void* lib = dlopen(NCCLSCOPE_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  std::string net_sym = "ncclNetPlugin_v" + std::to_string(net_version);
  std::string prof_sym = "ncclProfiler_v" + std::to_string(profiler_version);
  void* net_table = dlsym(lib, net_sym.c_str());
  void* prof_table = dlsym(lib, prof_sym.c_str());
  ASSERT_NE(net_table, nullptr) << net_sym << " not exported";
  ASSERT_NE(prof_table, nullptr) << prof_sym << " not exported";

  void* net_ctx = nullptr;
  ncclscope_net_comm_config_t cfg = {NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};
  int ndev = 0;
  switch (net_version) {
    case 8: {
      auto* t = static_cast<const ncclscope_net_v8_t*>(net_table);
      ASSERT_EQ(t->init(&QuietLogger), NCCLSCOPE_SUCCESS);
      ASSERT_EQ(t->devices(&ndev), NCCLSCOPE_SUCCESS);
      break;
    }
    case 9: {
      auto* t = static_cast<const ncclscope_net_v9_t*>(net_table);
      ASSERT_EQ(t->init(&QuietLogger), NCCLSCOPE_SUCCESS);
      ASSERT_EQ(t->devices(&ndev), NCCLSCOPE_SUCCESS);
      break;
    }
    case 10: {
      auto* t = static_cast<const ncclscope_net_v10_t*>(net_table);
      ASSERT_EQ(t->init(&QuietLogger, &NoopProfilerCallback), NCCLSCOPE_SUCCESS);
      ASSERT_EQ(t->devices(&ndev), NCCLSCOPE_SUCCESS);
      break;
    }
    case 11: {
      auto* t = static_cast<const ncclscope_net_v11_t*>(net_table);
      ASSERT_EQ(t->init(&net_ctx, comm_id, &cfg, &QuietLogger, &NoopProfilerCallback), NCCLSCOPE_SUCCESS);
      ASSERT_EQ(t->devices(&ndev), NCCLSCOPE_SUCCESS);
      break;
    }
    case 12: {
      auto* t = static_cast<const ncclscope_net_v12_t*>(net_table);
      ASSERT_EQ(t->init(&net_ctx, comm_id, &cfg, &QuietLogger, &NoopProfilerCallback), NCCLSCOPE_SUCCESS);
      ASSERT_EQ(t->devices(&ndev), NCCLSCOPE_SUCCESS);
      break;
    }
  }
  EXPECT_GE(ndev, 1);
  // v8-v10 have no finalize: the plugin holds the runtime from init until its last net object closes, so
  // each cycle opens and closes a listen comm (as a communicator's life does) and the close joins the threads.
  void* listen_comm = nullptr;
  char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE] = {};
  auto legacy = [&](auto* t) {
    if (listen_comm == nullptr) {
      EXPECT_EQ(t->listen(0, handle, &listen_comm), NCCLSCOPE_SUCCESS);
      EXPECT_NE(listen_comm, nullptr);
    } else {
      EXPECT_EQ(t->closeListen(listen_comm), NCCLSCOPE_SUCCESS);
    }
  };
  auto legacy_call = [&] {
    if (net_version == 8) legacy(static_cast<const ncclscope_net_v8_t*>(net_table));
    if (net_version == 9) legacy(static_cast<const ncclscope_net_v9_t*>(net_table));
    if (net_version == 10) legacy(static_cast<const ncclscope_net_v10_t*>(net_table));
  };
  legacy_call();  // listen

  // Profiler init on a thread that exits afterwards: init takes the registry lock, so abseil leaves
  // per-thread state behind for that thread's exit handlers.
  void* prof_ctx = nullptr;
  int mask = 0;
  ncclscope_result_t init_rc = NCCLSCOPE_INTERNAL_ERROR;
  std::thread init_thread([&] {
    if (profiler_version == 4) {
      auto* t = static_cast<const ncclscope_profiler_v4_t*>(prof_table);
      init_rc = t->init(&prof_ctx, &mask, "cycle", comm_id, 1, 2, 0, &QuietLogger);
    } else {
      // v5 and v6 share the table shape.
      auto* t = static_cast<const ncclscope_profiler_v5_t*>(prof_table);
      init_rc = t->init(&prof_ctx, comm_id, &mask, "cycle", 1, 2, 0, &QuietLogger);
    }
  });
  init_thread.join();
  ASSERT_EQ(init_rc, NCCLSCOPE_SUCCESS);

  auto* prof = static_cast<const ncclscope_profiler_v5_t*>(prof_table);  // finalize is slot 5 in every version
  if (prof_ctx != nullptr) {
    EXPECT_EQ(prof->finalize(prof_ctx), NCCLSCOPE_SUCCESS);
  }
  if (listen_comm != nullptr) legacy_call();  // closeListen: the last legacy object, the runtime stops
  if (net_version == 11) {
    EXPECT_EQ(static_cast<const ncclscope_net_v11_t*>(net_table)->finalize(net_ctx), 0);
  }
  if (net_version == 12) {
    EXPECT_EQ(static_cast<const ncclscope_net_v12_t*>(net_table)->finalize(net_ctx), 0);
  }
  // Every cycle, every net version: the last finalize (v11+) or close (v8-v10) joined the runtime's threads.
  // A joined thread's /proc entry can linger a moment on a loaded host: allow it 2 s to go.
  int threads_after = CountEntries("/proc/self/task");
  for (int i = 0; i < 200 && threads_after != threads_before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    threads_after = CountEntries("/proc/self/task");
  }
  EXPECT_EQ(threads_after, threads_before) << "runtime threads outlived net v" << net_version;
  EXPECT_EQ(dlclose(lib), 0);
}

// Runs `cycle` 200 times after 10 warm-up cycles and checks that threads and file descriptors come back exactly and
// that memory does not grow per cycle. Memory is judged on windows of 50 cycles: after the warm-up RSS still grows in
// one-time steps, glibc's malloc arenas made when threads meet in malloc (measured: steps of 156 and 748 KiB, each
// in one window, 908 KiB in all on a quiet host; 4 KiB with MALLOC_ARENA_MAX=1), more often on a loaded host, where
// the former bound of 1 MiB on the whole once failed at 1108 KiB. A leak grows every window alike, a step does not:
// the verdict is on the smallest window's growth (256 KiB: 5 KiB a cycle, the former bound's rate; an injected
// 6 KiB-a-cycle leak fails it at 300 KiB a window), and a generous bound on the whole (4 MiB) still catches a large
// leak that only some cycles make.
void CheckCyclesLeakNothing(const std::function<void(int)>& cycle, const std::string& what) {
  for (int i = 0; i < 10; ++i) {
    cycle(i);
    if (::testing::Test::HasFatalFailure()) return;
  }
  const int threads0 = CountEntries("/proc/self/task");
  const int fds0 = CountEntries("/proc/self/fd");
  constexpr int kWindows = 4, kPerWindow = 50;
  long rss[kWindows + 1] = {RssKiB()};
  for (int w = 0; w < kWindows; ++w) {
    for (int i = 0; i < kPerWindow; ++i) {
      cycle(10 + w * kPerWindow + i);
      if (::testing::Test::HasFatalFailure()) return;
    }
    rss[w + 1] = RssKiB();
  }
  EXPECT_EQ(CountEntries("/proc/self/task"), threads0) << "plugin threads outlived the last finalize";
  EXPECT_EQ(CountEntries("/proc/self/fd"), fds0) << "file descriptors leaked";
  std::string windows;
  long smallest = LONG_MAX;
  for (int w = 0; w < kWindows; ++w) {
    smallest = std::min(smallest, rss[w + 1] - rss[w]);
    windows += (w ? " " : "") + std::to_string(rss[w + 1] - rss[w]);
  }
  const long growth = rss[kWindows] - rss[0];
  printf("%s: 200 cycles, threads %d, fds %d, RSS growth %ld KiB (per 50 cycles: %s)\n", what.c_str(), threads0, fds0,
         growth, windows.c_str());
#if defined(__SANITIZE_ADDRESS__)
  // ASan's quarantine keeps freed memory resident, so RSS says nothing here; LeakSanitizer checks leaks.
  printf("RSS bound not checked under AddressSanitizer (quarantine); LeakSanitizer covers leaks\n");
#else
  EXPECT_LT(smallest, 256) << "memory grew by at least " << smallest << " KiB in every 50 cycles (" << windows
                           << " KiB): a leak per cycle";
  EXPECT_LT(growth, 4096) << "memory grew by " << growth << " KiB over 200 cycles (per 50 cycles: " << windows << ")";
#endif
}

class LoadCycle : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    setenv("NCCLSCOPE_TRANSPORT", "tcp", 1);
    setenv("NCCLSCOPE_SOCKET_IFNAME", "lo", 1);
    unsetenv("NCCLSCOPE_DUMP_DIR");
  }
};

TEST_P(LoadCycle, TwoHundredCyclesLeakNothing) {
  const int net_version = GetParam();
  CheckCyclesLeakNothing([&](int i) { OneCycle(net_version, 4 + i % 3, 0x2000 + i); },
                         "net v" + std::to_string(net_version));
}

INSTANTIATE_TEST_SUITE_P(EveryNetVersion, LoadCycle, ::testing::Values(8, 9, 10, 11, 12),
                         [](const ::testing::TestParamInfo<int>& p) { return "net_v" + std::to_string(p.param); });

// The same life with ncclscope wrapping an inner plugin (NCCLSCOPE_NET_CHAIN; ncclscope's TCP built alone,
// tests/net/inner): the inner's per-communicator init and finalize (v12) or its one init (v8) every cycle.
struct ChainCase {
  int served;
  const char* inner;
};

class LoadCycleChain : public ::testing::TestWithParam<ChainCase> {
 protected:
  void SetUp() override {
    const std::string plugin = NCCLSCOPE_PLUGIN_PATH;
    const std::string inner = plugin.substr(0, plugin.rfind('/')) + "/libnccl-net-" + GetParam().inner + ".so";
    setenv("NCCLSCOPE_TRANSPORT", "chain", 1);
    setenv("NCCLSCOPE_NET_CHAIN", inner.c_str(), 1);
    setenv("NCCLSCOPE_SOCKET_IFNAME", "lo", 1);
    unsetenv("NCCLSCOPE_DUMP_DIR");
  }
  void TearDown() override {
    setenv("NCCLSCOPE_TRANSPORT", "tcp", 1);
    unsetenv("NCCLSCOPE_NET_CHAIN");
  }
};

TEST_P(LoadCycleChain, TwoHundredCyclesLeakNothing) {
  const int v = GetParam().served;
  CheckCyclesLeakNothing([&](int i) { OneCycle(v, 4 + i % 3, 0x4000 + i); },
                         "net v" + std::to_string(v) + " over " + GetParam().inner);
}

INSTANTIATE_TEST_SUITE_P(Inners, LoadCycleChain,
                         ::testing::Values(ChainCase{12, "inner-tcp-v8"}, ChainCase{8, "inner-tcp-v12"},
                                           ChainCase{11, "inner-tcp-v10"}),
                         [](const ::testing::TestParamInfo<ChainCase>& p) {
                           std::string n = "net_v" + std::to_string(p.param.served) + "_" + p.param.inner;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

TEST(CloseOnExec, EveryDescriptorThePluginOpensIsCloseOnExec) {
  setenv("NCCLSCOPE_TRANSPORT", "tcp", 1);
  setenv("NCCLSCOPE_SOCKET_IFNAME", "lo", 1);
  void* lib = dlopen(NCCLSCOPE_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto* net = static_cast<const ncclscope_net_v12_t*>(dlsym(lib, "ncclNetPlugin_v12"));
  auto* prof = static_cast<const ncclscope_profiler_v6_t*>(dlsym(lib, "ncclProfiler_v6"));
  ASSERT_NE(net, nullptr);
  ASSERT_NE(prof, nullptr);
  const std::set<int> before = OpenFds();

  void* net_ctx = nullptr;
  ncclscope_net_comm_config_t cfg = {NCCLSCOPE_NET_TRAFFIC_CLASS_UNDEF};
  ASSERT_EQ(net->init(&net_ctx, 7, &cfg, &QuietLogger, &NoopProfilerCallback), NCCLSCOPE_SUCCESS);
  void* prof_ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(prof->init(&prof_ctx, 7, &mask, "cloexec", 1, 2, 0, &QuietLogger), NCCLSCOPE_SUCCESS);
  char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE] = {};
  void* listen_comm = nullptr;
  ASSERT_EQ(net->listen(net_ctx, 0, handle, &listen_comm), NCCLSCOPE_SUCCESS);
  ASSERT_NE(listen_comm, nullptr);

  int opened = 0;
  for (int fd : OpenFds()) {
    if (before.count(fd)) continue;
    ++opened;
    int flags = fcntl(fd, F_GETFD);
    EXPECT_TRUE(flags >= 0 && (flags & FD_CLOEXEC)) << "fd " << fd << " is not close-on-exec";
  }
  EXPECT_GE(opened, 1) << "listen opened no descriptor?";
  EXPECT_EQ(net->closeListen(listen_comm), NCCLSCOPE_SUCCESS);
  if (prof_ctx != nullptr) {
    EXPECT_EQ(prof->finalize(prof_ctx), NCCLSCOPE_SUCCESS);
  }
  EXPECT_EQ(net->finalize(net_ctx), NCCLSCOPE_SUCCESS);
  EXPECT_EQ(OpenFds(), before) << "descriptors left open after close and finalize";
  dlclose(lib);
}

}  // namespace

// The module exports exactly NCCL's tables (no C++, abseil or prometheus symbols), and its run-time
// dependencies are the documented ones: never libibverbs or the CUDA driver, which are dlopen'ed.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>

namespace {

std::string RunCommand(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  return out;
}

std::set<std::string> Lines(const std::string& text) {
  std::set<std::string> out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

TEST(ExportList, OnlyTheNcclTables) {
  std::set<std::string> symbols =
      Lines(RunCommand(std::string("nm -D --defined-only ") + NCCLSCOPE_PLUGIN_PATH + " | awk '{print $NF}'"));
  // Linker-defined markers that every shared object carries are not ours.
  for (const char* marker : {"_init", "_fini", "_edata", "_end", "__bss_start"}) symbols.erase(marker);
  const std::set<std::string> expected = {"ncclNetPlugin_v8",  "ncclNetPlugin_v9", "ncclNetPlugin_v10",
                                          "ncclNetPlugin_v11", "ncclNetPlugin_v12", "ncclProfiler_v1",
                                          "ncclProfiler_v2",   "ncclProfiler_v3",   "ncclProfiler_v4",
                                          "ncclProfiler_v5",   "ncclProfiler_v6",   "ncclProfiler_v7"};
  EXPECT_EQ(symbols, expected);
}

TEST(ExportList, TablesAreDataObjects) {
  std::string out = RunCommand(std::string("nm -D --defined-only ") + NCCLSCOPE_PLUGIN_PATH);
  std::stringstream ss(out);
  std::string addr, type, name;
  while (ss >> addr >> type >> name) {
    if (name.rfind("ncclNetPlugin_", 0) == 0 || name.rfind("ncclProfiler_", 0) == 0) {
      EXPECT_TRUE(type == "R" || type == "D" || type == "B") << name << " has type " << type;
    }
  }
}

// A loader built from a v7 header with optional hooks appended after finalize (some NCCL and RCCL trees) reads
// them from our table: the symbol must cover those slots (80 bytes) and hold null there.
TEST(ExportList, ProfilerV7CarriesNullSlotsAfterFinalize) {
  void* lib = dlopen(NCCLSCOPE_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  const auto* slots = static_cast<void* const*>(dlsym(lib, "ncclProfiler_v7"));
  ASSERT_NE(slots, nullptr);
  for (int i = 1; i <= 5; ++i) EXPECT_NE(slots[i], nullptr) << "v7 slot " << i;
  for (int i = 6; i < 10; ++i) EXPECT_EQ(slots[i], nullptr) << "slot " << i << " after finalize";
  const std::string size = RunCommand(std::string("nm -D -S --defined-only ") + NCCLSCOPE_PLUGIN_PATH +
                                      " | awk '$NF == \"ncclProfiler_v7\" {print $2}'");
  EXPECT_EQ(size, "0000000000000050\n") << "the exported table's symbol size";
  dlclose(lib);
}

TEST(Dependencies, NeededEntriesAreTheDocumentedOnes) {
  std::set<std::string> needed = Lines(
      RunCommand(std::string("readelf -d ") + NCCLSCOPE_PLUGIN_PATH + " | sed -n 's/.*Shared library: \\[\\(.*\\)\\]/\\1/p'"));
  ASSERT_FALSE(needed.empty());
  for (const std::string& lib : needed) {
    // abseil is linked in (NCCLSCOPE_STATIC_ABSEIL) except in builds that chose Debian's shared one; so are
    // libstdc++ and libgcc in a portable link (NCCLSCOPE_PORTABLE_LINK), which names libpthread and libdl instead,
    // where old glibc keeps pthread_* and dl*.
    bool toolchain = NCCLSCOPE_PORTABLE_LINK ? (lib == "libpthread.so.0" || lib == "libdl.so.2")
                                             : (lib == "libstdc++.so.6" || lib == "libgcc_s.so.1");
    bool allowed = (!NCCLSCOPE_ABSEIL_STATIC && lib.rfind("libabsl_", 0) == 0) || lib == "libz.so.1" || toolchain ||
                   lib == "libm.so.6" || lib == "libc.so.6" || lib.rfind("ld-linux", 0) == 0 ||
                   lib.rfind("libasan", 0) == 0 || lib.rfind("libubsan", 0) == 0 || lib.rfind("libtsan", 0) == 0;
    EXPECT_TRUE(allowed) << "undocumented run-time dependency: " << lib;
    EXPECT_EQ(lib.find("ibverbs"), std::string::npos) << "libibverbs must be dlopen'ed, not linked";
    EXPECT_EQ(lib.find("libcuda"), std::string::npos) << "the CUDA driver must be dlopen'ed, not linked";
  }
}

TEST(Dependencies, LinkedNoDelete) {
  std::string flags = RunCommand(std::string("readelf -d ") + NCCLSCOPE_PLUGIN_PATH + " | grep FLAGS_1");
  EXPECT_NE(flags.find("NODELETE"), std::string::npos) << flags;
}

}  // namespace

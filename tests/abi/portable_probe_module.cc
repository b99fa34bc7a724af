// A module linked as the plugin is (cmake/portable_link.cmake: libstdc++ and libgcc linked in, glibc symbols at
// their oldest versions), so that tests/abi/portable_probe.c can check on this host and on an old glibc
// (tests/package/old_glibc_test.sh) that exceptions still unwind inside such a library: thrown by our code and
// by the linked-in libstdc++, through several frames, and carried across threads. The unwinder that finds the
// frames is the linked-in libgcc's, through glibc_floor.c's _dl_find_object. Nothing escapes the C function.
#include <functional>
#include <future>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

char* volatile g_sink;

[[gnu::noinline]] int Thrower(int depth) {
  if (depth == 0) throw std::runtime_error("deep");
  return Thrower(depth - 1) + 1;
}

int Probe() {
  int passed = 0;
  try {
    Thrower(8);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()) == "deep") passed |= 1;
  }
  try {
    std::vector<int> v(1);
    (void)v.at(5);
  } catch (const std::out_of_range&) {
    passed |= 2;
  }
  try {
    auto f = std::async(std::launch::async, [] { return Thrower(3); });
    f.get();
  } catch (const std::runtime_error&) {
    passed |= 4;
  }
  try {
    std::function<void()> f;
    f();
  } catch (const std::bad_function_call&) {
    passed |= 8;
  }
  try {
    volatile size_t huge = size_t{1} << 62;
    g_sink = new char[huge];  // stored, so the allocation cannot be elided
    delete[] g_sink;
  } catch (const std::bad_alloc&) {
    passed |= 16;
  }
  return passed;
}

}  // namespace

// 0 when every case threw and was caught where it should; otherwise the bits of the cases that passed, | 0x100.
extern "C" __attribute__((visibility("default"))) int ncclscope_portable_probe(void) {
  try {
    int passed = Probe();
    return passed == 31 ? 0 : (passed | 0x100);
  } catch (...) {
    return 0x200;
  }
}

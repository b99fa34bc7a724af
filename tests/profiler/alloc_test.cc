// Proves the event path allocates nothing after communicator init: this binary replaces the global
// operator new and counts calls made while a thread-local flag is set around the event calls.
#include <atomic>
#include <cstdlib>
#include <new>

#include "gtest/gtest.h"
#include "profiler/profiler.h"

namespace {
std::atomic<uint64_t> g_news{0};
thread_local bool t_counting = false;
}  // namespace

void* operator new(std::size_t n) {
  if (t_counting) g_news.fetch_add(1, std::memory_order_relaxed);
  void* p = std::malloc(n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace ncclscope::profiler {
namespace {

TEST(ProfilerAlloc, EventPathAllocatesNothing) {
  InitArgs a;
  a.comm_hash = 0xa110c;
  a.nranks = 8;
  void* ctx = nullptr;
  ASSERT_TRUE(Init(a, &ctx).ok());
  // Sanity: the counter does see allocations.
  t_counting = true;
  void* probe = ::operator new(16);  // a direct call may not be elided, unlike a new-expression
  asm volatile("" : : "r"(probe) : "memory");
  ::operator delete(probe);
  t_counting = false;
  ASSERT_EQ(g_news.exchange(0), 1u);

  t_counting = true;
  uint64_t handles = 0;
  for (uint64_t i = 1; i <= 5000; ++i) {  // > the flight recorder depth: wraps the ring too
    EventDesc c;
    c.type = (i % 3 == 0) ? EventType::kP2p : EventType::kColl;
    c.has_seq = c.type == EventType::kColl;
    c.seq = i;
    c.func = c.type == EventType::kP2p ? "Send" : "AllReduce";
    c.datatype = "ncclBfloat16";
    c.count = i * 64;
    c.root_or_peer = static_cast<int>(i % 8);
    c.nchannels = 32;
    c.algo = "RING";
    c.proto = "LL";
    void* h = StartEvent(ctx, c);
    handles += h != nullptr;
    StopEvent(h);
    EventDesc p;
    p.type = EventType::kProxyOp;
    p.parent = h;
    p.nsteps = 4;
    void* ph = StartEvent(ctx, p);
    EventDesc s;
    s.type = EventType::kProxyStep;
    s.parent = ph;
    void* sh = StartEvent(ctx, s);
    RecordEventState(sh, StateUpdate{9, true, 1 << 20});
    StopEvent(sh);
    RecordEventState(ph, StateUpdate{kStateProxyOpInProgress, false, 0});
    StopEvent(ph);
    for (int ch = 0; ch < 32; ++ch) {
      EventDesc k;
      k.type = EventType::kKernelCh;
      k.parent = h;
      k.has_ptimer = true;
      k.ptimer = i * 1000 + ch;
      void* kh = StartEvent(ctx, k);
      RecordEventState(kh, StateUpdate{kStateKernelChStop, true, i * 1000 + 700});
      StopEvent(kh);
    }
    EventDesc g;
    g.type = EventType::kGroupApi;
    void* gh = StartEvent(ctx, g);
    RecordEventState(gh, StateUpdate{23, false, 0});
    StopEvent(gh);
    StartEvent(nullptr, g);  // NULL context path
    EventDesc u;
    u.type = EventType::kUnknown;
    StartEvent(ctx, u);
  }
  t_counting = false;
  EXPECT_EQ(handles, 5000u);
  EXPECT_EQ(g_news.load(), 0u) << "heap allocations on the event path";
  Finalize(ctx);
}

}  // namespace
}  // namespace ncclscope::profiler

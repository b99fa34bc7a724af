// Failing loudly on device events: one thread per opened verbs device context reads its
// asynchronous events (ibv_get_async_event on the context's async_fd, polled with a timeout so it can be
// stopped) and turns the fatal ones into errors that the NEXT isend/irecv/test() of every affected comm
// returns, naming the peer, device:port, QP number and the event (ibv_event_type_str):
//  - IBV_EVENT_DEVICE_FATAL: bump the device's fatal generation; every comm created before it fails (a comm
//    remembers the generation it started at);
//  - IBV_EVENT_PORT_ERR on the context's port: the same, but only once the port has stayed down for
//    NCCLSCOPE_IB_PORT_DOWN_TIMEOUT (no IBV_EVENT_PORT_ACTIVE in between). A shorter flap costs the job only the
//    outage: the QPs' own retries ride it out, as under NCCL's IB transport, which never fails on a port event.
//    A port that stays down fails every connection on it with that cause, however idle the connection is;
//  - IBV_EVENT_QP_FATAL / QP_REQ_ERR / QP_ACCESS_ERR on one of our QPs, IBV_EVENT_CQ_ERR on one of our
//    CQs: stored in that comm's AsyncFault slot, found through the device's registry of watched objects.
// The data path only does relaxed loads of the comm's slot and the device's generation (AsyncFault::Seen):
// no lock, no syscall. The registry's mutex is taken when a comm registers or unregisters its QPs and CQ
// (connect, close) and by the event thread; unregistering before destroying the objects means the thread
// never touches a freed comm, and the thread acks each event right after handling it, so ibv_destroy_qp
// (which waits for the acks of its QP's events) never waits on us for long.
//
// Lifetime: devices are never closed (verbs_device.h), so each thread lives until process exit. An atexit
// handler, registered when the first thread starts, stops and joins them (each wakes within
// kAsyncPollMs); it does nothing in a fork()ed child, which has the handler but not the threads.
#ifndef NCCLSCOPE_NET_VERBS_ASYNC_EVENTS_H_
#define NCCLSCOPE_NET_VERBS_ASYNC_EVENTS_H_

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace ncclscope::net::verbs {

struct VerbsDeviceCtx;

inline constexpr int kAsyncPollMs = 200;

// What the event thread records for one comm; the comm checks it on every data-path call.
class AsyncFault {
 public:
  // First event wins: (event type + 1) << 32 | QP number.
  void Record(ibv_event_type type, uint32_t qp_num) {
    uint64_t expected = 0;
    word_.compare_exchange_strong(expected, (uint64_t{static_cast<uint32_t>(type)} + 1) << 32 | qp_num,
                                  std::memory_order_relaxed);
  }
  // True when neither this comm nor its device (since `gen_at_start`) reported a fatal event.
  bool Clear(const std::atomic<uint32_t>& device_gen, uint32_t gen_at_start) const {
    return word_.load(std::memory_order_relaxed) == 0 &&
           device_gen.load(std::memory_order_relaxed) == gen_at_start;
  }
  bool has_qp_event() const { return word_.load(std::memory_order_relaxed) != 0; }
  ibv_event_type type() const {
    return static_cast<ibv_event_type>((word_.load(std::memory_order_relaxed) >> 32) - 1);
  }
  uint32_t qp_num() const { return static_cast<uint32_t>(word_.load(std::memory_order_relaxed)); }

 private:
  std::atomic<uint64_t> word_{0};
};

// Per device context: the fatal generation, the registry and the thread.
struct AsyncEventState {
  std::atomic<uint32_t> fatal_gen{0};      // DEVICE_FATAL, or our port down past the timeout, counted
  std::atomic<int> last_fatal_event{-1};   // the ibv_event_type of the latest of them
  uint64_t port_down_timeout_ns = 0;       // NCCLSCOPE_IB_PORT_DOWN_TIMEOUT; 0: a PORT_ERR fails at once
  std::atomic<uint64_t> port_down_since_ns{0};  // when our port went down (PORT_ERR); 0 while it is up
  struct Watched {
    const void* object;  // an ibv_qp* or ibv_cq*
    AsyncFault* fault;
    uint32_t qp_num;     // for a CQ: the comm's first QP, to name in the message
  };
  absl::Mutex mu;
  std::vector<Watched> watched ABSL_GUARDED_BY(mu);
  std::atomic<bool> stop{false};
  std::thread thread;
};

// Fails the device's comms once its port has been down for port_down_timeout_ns at `now_ns` (the event thread
// calls it after every poll).
void CheckPortDownTimeout(VerbsDeviceCtx* dev, uint64_t now_ns);
// Starts `dev`'s event thread (once per device context; called by OpenVerbsDevice).
void StartAsyncEventThread(VerbsDeviceCtx* dev);
// Registers a comm's QP or CQ; Unwatch removes every entry of `fault` (call before destroying them).
void WatchForAsyncEvents(VerbsDeviceCtx* dev, const void* object, uint32_t qp_num, AsyncFault* fault);
void UnwatchAsyncEvents(VerbsDeviceCtx* dev, AsyncFault* fault);
// What the thread does with one event (before acking it): a fatal one for our port, device, or a watched
// QP or CQ is recorded (and logged as a warning), our port's going down and coming back are noted (at `now_ns`),
// the rest logged at INFO. Exposed for the unit test.
void HandleAsyncEvent(VerbsDeviceCtx* dev, const ibv_async_event& ev, uint64_t now_ns);
// "ibv_event_type_str text (IBV_EVENT_…)" for messages.
std::string DescribeAsyncEvent(const VerbsDeviceCtx* dev, ibv_event_type type);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_ASYNC_EVENTS_H_

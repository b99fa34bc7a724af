#include "net/verbs/async_events.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "absl/base/const_init.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/tsan_lock.h"
#include "net/verbs/verbs_device.h"

namespace ncclscope::net::verbs {
namespace {

ABSL_CONST_INIT absl::Mutex threads_mu(absl::kConstInit);
// Every device context with a running thread (contexts are never freed) and the process that started them.
std::vector<VerbsDeviceCtx*>* running ABSL_GUARDED_BY(threads_mu) = nullptr;
pid_t owner_pid ABSL_GUARDED_BY(threads_mu) = 0;

const char* EventName(ibv_event_type t) {
  switch (t) {
    case IBV_EVENT_DEVICE_FATAL: return "IBV_EVENT_DEVICE_FATAL";
    case IBV_EVENT_PORT_ERR: return "IBV_EVENT_PORT_ERR";
    case IBV_EVENT_PORT_ACTIVE: return "IBV_EVENT_PORT_ACTIVE";
    case IBV_EVENT_QP_FATAL: return "IBV_EVENT_QP_FATAL";
    case IBV_EVENT_QP_REQ_ERR: return "IBV_EVENT_QP_REQ_ERR";
    case IBV_EVENT_QP_ACCESS_ERR: return "IBV_EVENT_QP_ACCESS_ERR";
    case IBV_EVENT_CQ_ERR: return "IBV_EVENT_CQ_ERR";
    default: return "IBV_EVENT_other";
  }
}

// Every comm on the device that started before now fails at its next call.
void MarkDeviceFailed(AsyncEventState& st, ibv_event_type type) {
  st.last_fatal_event.store(type, std::memory_order_relaxed);
  st.fatal_gen.fetch_add(1, std::memory_order_release);
}

void StopAllAtExit() {
  AnnotatedLock lock(&threads_mu);
  if (running == nullptr || owner_pid != getpid()) return;  // a fork()ed child has no threads to join
  for (VerbsDeviceCtx* d : *running) d->events.stop.store(true, std::memory_order_relaxed);
  for (VerbsDeviceCtx* d : *running) {
    if (d->events.thread.joinable()) d->events.thread.join();
  }
  running->clear();
}

}  // namespace

void HandleAsyncEvent(VerbsDeviceCtx* dev, const ibv_async_event& ev, uint64_t now_ns) {
  AsyncEventState& st = dev->events;
  const std::string what = DescribeAsyncEvent(dev, ev.event_type);
  const std::string where = dev->info.device_name + ":" + std::to_string(dev->info.port_num);
  switch (ev.event_type) {
    case IBV_EVENT_DEVICE_FATAL:
      MarkDeviceFailed(st, ev.event_type);
      NCCLSCOPE_WARN(subsys::kNet, "verbs: async event %s on %s: every open connection on it fails",
                     what.c_str(), where.c_str());
      return;
    case IBV_EVENT_PORT_ERR:
      if (ev.element.port_num != dev->info.port_num) return;
      if (st.port_down_timeout_ns == 0) {
        MarkDeviceFailed(st, ev.event_type);
        NCCLSCOPE_WARN(subsys::kNet, "verbs: async event %s on %s: every open connection on it fails "
                       "(NCCLSCOPE_IB_PORT_DOWN_TIMEOUT=0)", what.c_str(), where.c_str());
        return;
      }
      st.port_down_since_ns.store(std::max<uint64_t>(now_ns, 1), std::memory_order_relaxed);
      NCCLSCOPE_WARN(subsys::kNet, "verbs: async event %s on %s: its connections wait up to %llu s for the port "
                     "to come back (NCCLSCOPE_IB_PORT_DOWN_TIMEOUT), as long as the QPs' retries last",
                     what.c_str(), where.c_str(),
                     static_cast<unsigned long long>(st.port_down_timeout_ns / 1000000000ull));
      return;
    case IBV_EVENT_PORT_ACTIVE: {
      if (ev.element.port_num != dev->info.port_num) return;
      const uint64_t since = st.port_down_since_ns.exchange(0, std::memory_order_relaxed);
      if (since != 0) {
        NCCLSCOPE_WARN(subsys::kNet, "verbs: %s on %s: the port is back after %.1f s down", what.c_str(),
                       where.c_str(), static_cast<double>(now_ns - std::min(now_ns, since)) / 1e9);
      }
      return;
    }
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_CQ_ERR: {
      const void* obj = ev.event_type == IBV_EVENT_CQ_ERR ? static_cast<const void*>(ev.element.cq)
                                                         : static_cast<const void*>(ev.element.qp);
      bool ours = false;
      uint32_t qpn = 0;
      {
        AnnotatedLock lock(&st.mu);
        for (const AsyncEventState::Watched& w : st.watched) {
          if (w.object != obj) continue;
          qpn = w.qp_num;
          w.fault->Record(ev.event_type, w.qp_num);
          ours = true;
        }
      }
      if (ours) {
        NCCLSCOPE_WARN(subsys::kNet, "verbs: async event %s on %s, QP %u: its connection fails",
                       what.c_str(), where.c_str(), qpn);
      }
      return;
    }
    default:
      NCCLSCOPE_INFO(subsys::kNet, "NET/verbs: async event %s on %s", what.c_str(), where.c_str());
      return;
  }
}

namespace {

void Run(VerbsDeviceCtx* dev) {
  const int fd = dev->ctx->async_fd;
  while (!dev->events.stop.load(std::memory_order_relaxed)) {
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, kAsyncPollMs);
    CheckPortDownTimeout(dev, SystemMonotonicNs());
    if (ready <= 0) continue;
    ibv_async_event ev;
    if (dev->api->get_async_event(dev->ctx, &ev) != 0) continue;  // non-blocking fd: nothing after all
    HandleAsyncEvent(dev, ev, SystemMonotonicNs());
    dev->api->ack_async_event(&ev);
  }
}

}  // namespace

void CheckPortDownTimeout(VerbsDeviceCtx* dev, uint64_t now_ns) {
  AsyncEventState& st = dev->events;
  uint64_t since = st.port_down_since_ns.load(std::memory_order_relaxed);
  if (since == 0 || now_ns - std::min(now_ns, since) < st.port_down_timeout_ns) return;
  // Cleared first, so that the comms fail once for this outage.
  if (!st.port_down_since_ns.compare_exchange_strong(since, 0, std::memory_order_relaxed)) return;
  MarkDeviceFailed(st, IBV_EVENT_PORT_ERR);
  NCCLSCOPE_WARN(subsys::kNet, "verbs: port %s:%d down for %llu s (NCCLSCOPE_IB_PORT_DOWN_TIMEOUT): every open "
                 "connection on it fails", dev->info.device_name.c_str(), dev->info.port_num,
                 static_cast<unsigned long long>(st.port_down_timeout_ns / 1000000000ull));
}

std::string DescribeAsyncEvent(const VerbsDeviceCtx* dev, ibv_event_type type) {
  return std::string(dev->api->event_type_str(type)) + " (" + EventName(type) + ")";
}

void StartAsyncEventThread(VerbsDeviceCtx* dev) {
  // Non-blocking, so a readiness that another reader took cannot park the thread in get_async_event.
  const int fd = dev->ctx->async_fd;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  AnnotatedLock lock(&threads_mu);
  if (running == nullptr) {
    running = new std::vector<VerbsDeviceCtx*>();
    owner_pid = getpid();
    atexit(StopAllAtExit);
  }
  if (owner_pid != getpid()) {  // first device opened in a fork()ed child: the child owns its threads
    running->clear();
    owner_pid = getpid();
  }
  dev->events.thread = std::thread(Run, dev);
  // Named here, not in Run: the name is there as soon as OpenVerbsDevice returns.
  pthread_setname_np(dev->events.thread.native_handle(), "ncclscope-ibev");
  running->push_back(dev);
}

void WatchForAsyncEvents(VerbsDeviceCtx* dev, const void* object, uint32_t qp_num, AsyncFault* fault) {
  AnnotatedLock lock(&dev->events.mu);
  dev->events.watched.push_back({object, fault, qp_num});
}

void UnwatchAsyncEvents(VerbsDeviceCtx* dev, AsyncFault* fault) {
  AnnotatedLock lock(&dev->events.mu);
  std::erase_if(dev->events.watched, [fault](const AsyncEventState::Watched& w) { return w.fault == fault; });
}

}  // namespace ncclscope::net::verbs

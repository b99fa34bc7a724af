// Per-NIC telemetry when NCCL's own IB transport carries the data: NCCL built with NET_PROFILER=1 raises one
// NetPlugin event per QP per request (plugin id 0x10001, ncclProfilerNetIbDescr_v1_t), parented by the
// ProxyStep of that request, started at post time and stopped at completion (docs/nccl-abi.md#net-callback).
// We count them into the same NetCounters the net half fills, under nic="nccl-ib<N>", N being NCCL's IB device
// index (qp.device). What is counted where:
//  - the direction comes from the ProxyOp above the step (isSend): NCCL writes no opcode on receive events;
//  - send bytes: qp.length of each QP event, at its stop; receive bytes: the ProxyStep's RecvFlushWait
//    transSize, split over the step's receive QPs with the sender's rule (NCCL sends ceil(ceil(size/nqps)/128)*128
//    bytes per QP, the last ones taking what is left), the QPs' devices being those of the events in post order;
//  - messages and requests in flight: one per request, on the request's first QP event (its device);
//  - completion latency: one sample per QP event, stop − start on our monotonic clock.
// Only IB-type events are counted: socket-type events come from NCCL's socket transport (not a NIC we can name)
// or from ncclscope's own TCP transport, whose net half counts itself. Events with a bad descriptor, a device
// outside [0, kMaxIbDevices) or no ProxyStep parent stay tracked but are counted as dropped figures.
// Thread-safety as CommContext: no lock and no allocation, except NetCountersFor() the first time a context sees
// a device.
#include <string>

#include "common/clock.h"
#include "profiler/comm_context.h"

namespace ncclscope::profiler {
namespace {

constexpr uint64_t kCountShift = 56;
constexpr uint64_t kDevBits = 6;
static_assert(kMaxIbDevices <= (1 << kDevBits));
static_assert(kStepQpSlots * kDevBits <= kCountShift);
constexpr uint64_t kIbWriteAlign = 128;  // NCCL's IB_WRITE_CHUNK_ALIGNMENT

std::string IbNicName(int dev) { return "nccl-ib" + std::to_string(dev); }

}  // namespace

void CommContext::IbCounters(int dev, NetCounters** nic, NetCounters** comm) {
  *nic = ib_nic_[dev].load(std::memory_order_acquire);
  if (*nic == nullptr) {
    *nic = NetCountersFor(IbNicName(dev), 0, /*nic_total=*/true);  // the same block from every thread
    ib_nic_[dev].store(*nic, std::memory_order_release);
  }
  *comm = nullptr;
  // Communicator rows only for a real communicator: the process context (NULL context, PXN proxies of other
  // processes) knows no comm id, so their QPs count towards the NIC total only.
  if (is_process_ || comm_hash() == 0) return;
  *comm = ib_comm_[dev].load(std::memory_order_acquire);
  if (*comm == nullptr) {
    *comm = NetCountersFor(IbNicName(dev), comm_hash(), /*nic_total=*/false);
    ib_comm_[dev].store(*comm, std::memory_order_release);
  }
}

void* CommContext::StartNetPlugin(const EventDesc& d, EventSlot* parent) {
  void* h = StartChild(d, parent);
  if (h == nullptr) return nullptr;
  if ((cfg_.event_mask & kMaskNetPlugin) == 0) return h;
  switch (d.net_source) {
    case NetSource::kIb:
      break;
    case NetSource::kIbMalformed:
      CountDrop(Drop::kNetBadDescriptor);
      return h;
    case NetSource::kUnknown:
      CountDrop(Drop::kNetUnknownPlugin);
      return h;
    default:  // socket type, ncclscope's own verbs, or not decoded: not ours to count here
      return h;
  }
  if (d.net_device < 0 || d.net_device >= kMaxIbDevices) {
    CountDrop(Drop::kNetBadDevice);
    return h;
  }
  if (parent == nullptr || parent->type != EventType::kProxyStep || parent->net_dir == 0) {
    CountDrop(Drop::kNetUnattributed);
    return h;
  }
  // This QP's ordinal in its request, and its device remembered on the step (for the receive split).
  const auto dev = static_cast<uint64_t>(d.net_device);
  uint64_t v = parent->net_qps.load(std::memory_order_relaxed), nv;
  uint64_t ordinal;
  do {
    ordinal = v >> kCountShift;
    nv = v;
    if (ordinal < 255) nv += 1ull << kCountShift;
    if (ordinal < kStepQpSlots) nv |= dev << (kDevBits * ordinal);
  } while (!parent->net_qps.compare_exchange_weak(v, nv, std::memory_order_acq_rel, std::memory_order_relaxed));

  NetCounters *nic, *comm;
  IbCounters(d.net_device, &nic, &comm);
  EventSlot* s = HandleSlot(h);
  s->net_dev = static_cast<uint8_t>(d.net_device);
  s->net_bytes = parent->net_dir == kNetDirSend ? d.net_length : 0;
  s->net_qps.store(ordinal, std::memory_order_relaxed);
  s->start_ns = MonotonicNs();
  const uint64_t posted_ns = s->start_ns;
  if (ordinal == 0) ForNicAndComm(nic, comm, [posted_ns](NetCounters& c) { c.Posted(posted_ns); });
  return h;
}

void CommContext::StopNetPlugin(EventSlot* s) {
  const uint64_t now = MonotonicNs();
  const uint64_t latency = now > s->start_ns ? now - s->start_ns : 0;
  const bool first = s->net_qps.load(std::memory_order_relaxed) == 0;
  const bool send = s->net_dir == kNetDirSend;
  const uint64_t bytes = s->net_bytes;
  NetCounters *nic, *comm;
  s->owner->IbCounters(s->net_dev, &nic, &comm);  // resolved at start: lock-free here
  s->net_dev = kNoNetDev;  // a second stop of the same handle (NCCL stops send QPs twice) counts nothing
  ForNicAndComm(nic, comm, [&](NetCounters& c) {
    if (send) {
      c.bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
      if (first) c.messages_sent.fetch_add(1, std::memory_order_relaxed);
    } else if (first) {
      c.messages_received.fetch_add(1, std::memory_order_relaxed);
    }
    if (first) {
      c.Completed(latency, now);  // the request: in flight no more, and the block made progress
    } else {
      c.AddLatency(latency);  // another QP of the same request
    }
  });
}

void CommContext::RecordStepReceived(EventSlot* step, uint64_t bytes) {
  const uint64_t v = step->net_qps.exchange(0, std::memory_order_acq_rel);  // once per step
  const uint64_t nqps = v >> kCountShift;
  if (nqps == 0 || step->owner == nullptr) return;
  const uint64_t per_qp = (bytes + nqps - 1) / nqps;
  const uint64_t chunk = (per_qp + kIbWriteAlign - 1) / kIbWriteAlign * kIbWriteAlign;
  uint64_t left = bytes;
  for (uint64_t i = 0; i < nqps && i < kStepQpSlots && left > 0; ++i) {
    const uint64_t n = left < chunk ? left : chunk;
    left -= n;
    NetCounters *nic, *comm;
    step->owner->IbCounters(static_cast<int>((v >> (kDevBits * i)) & ((1u << kDevBits) - 1)), &nic, &comm);
    ForNicAndComm(nic, comm, [n](NetCounters& c) { c.bytes_received.fetch_add(n, std::memory_order_relaxed); });
  }
  // More than kStepQpSlots QPs (NCCL allows at most 8 per request): the rest has no known device.
  if (left > 0) step->owner->CountDrop(Drop::kNetUnattributed);
}

}  // namespace ncclscope::profiler

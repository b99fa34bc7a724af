// The communicator's proxy progress thread: takes enqueued ops (ProxyCtrl events), and drives every channel's
// NCCL_STEPS-deep send and receive pipelines through the net plugin's isend/irecv/test, emitting ProxyOp,
// ProxyStep and KernelCh events with NCCL's states; the "GPU" copies and reductions happen here too.
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>

#include "communicator.h"
#include "logger.h"
#include "op_state.h"
#include "sim_events.h"
#include "strict_number.h"

namespace ncclscope::sim {
namespace {

// A tuning knob of the progress loop from the environment; a malformed value is named once and ignored.
int EnvInt(const char* name, int def, int min, int max) {
  const char* v = getenv(name);
  if (v == nullptr) return def;
  int out = def;
  std::string why;
  if (!ParseInteger(v, min, max, &out, &why)) {
    SIM_WARN("ncclscope-sim: ignoring %s='%s' (%s), using %d", name, v, why.c_str(), def);
    return def;
  }
  return out;
}

}  // namespace

// One ProxyCtrl event per progress-thread phase, as real NCCL 2.28.9 emits them (golden traces): Idle and
// Active alone, Sleep then Wakeup on one event, Append then AppendEnd (with the number of ops) on one event.
void* Communicator::ProxyCtrlStart(ncclscope_profiler_state_t s, int appended) {
  // ProxyCtrl reads the live mask for every event.
  if (prof_ == nullptr || (__atomic_load_n(ActivationMask(), __ATOMIC_RELAXED) & NCCLSCOPE_PROFILE_PROXY_CTRL) == 0) {
    return nullptr;
  }
  void* h = StartEvent(Descr(NCCLSCOPE_PROFILE_PROXY_CTRL, nullptr, 0));
  ProxyCtrlState(h, s, appended);
  return h;
}

void Communicator::ProxyCtrlState(void* h, ncclscope_profiler_state_t s, int appended) {
  if (h == nullptr) return;
  ncclscope_profiler_state_args_t a;
  a.proxyCtrl.appendedProxyOps = appended;
  Record(h, s, &a);
}

void Communicator::ProxyCtrlStop(void* h) {
  if (h != nullptr) StopEvent(h);
}

void Communicator::ProgressLoop() {
  pthread_setname_np(pthread_self(), "NCCL Progress");
  ProxyCtrlStop(ProxyCtrlStart(NCCLSCOPE_STATE_PROXY_CTRL_IDLE, 0));
  for (;;) {
    std::vector<OpState*> ops;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (queue_.empty() && !stop_) {
        lock.unlock();
        void* sleep = ProxyCtrlStart(NCCLSCOPE_STATE_PROXY_CTRL_SLEEP, 0);
        lock.lock();
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        lock.unlock();
        ProxyCtrlState(sleep, NCCLSCOPE_STATE_PROXY_CTRL_WAKEUP, 0);
        ProxyCtrlStop(sleep);
        lock.lock();
      }
      if (stop_ && queue_.empty()) return;
      while (!queue_.empty()) {
        ops.push_back(queue_.front());
        queue_.pop_front();
      }
    }
    void* append = ProxyCtrlStart(NCCLSCOPE_STATE_PROXY_CTRL_APPEND, 0);
    ProxyCtrlState(append, NCCLSCOPE_STATE_PROXY_CTRL_APPEND_END, static_cast<int>(ops.size()));
    ProxyCtrlStop(append);
    ProxyCtrlStop(ProxyCtrlStart(NCCLSCOPE_STATE_PROXY_CTRL_ACTIVE, 0));
    for (OpState* op : ops) ProgressOp(op);
    ProxyCtrlStop(ProxyCtrlStart(NCCLSCOPE_STATE_PROXY_CTRL_IDLE, 0));
  }
}

// NCCL IB (NET_PROFILER=1) raises one NetPlugin event per QP of a request when it posts the request (isend:
// ncclIbMultiSend; irecv: per posted receive WR) and stops them when the request completes in test. Each QP of
// a send carries ceil(ceil(size/nqps)/128)*128 bytes, the last ones what is left (possibly 0). The descriptor
// is one struct per request, rewritten for every QP and passed by pointer. QP i sits on device i % devices.
void Communicator::StartIbQps(OpState* op, void* step_event, IbQpEvents* ev, bool send, int channel, int slot,
                              size_t bytes) {
  ev->n = 0;
  if (cfg_.ib_devices <= 0) return;
  const int nqps = cfg_.ib_qps;
  const size_t chunk = ((bytes + nqps - 1) / nqps + 127) / 128 * 128;
  size_t offset = 0;
  for (int i = 0; i < nqps; ++i) {
    ncclscope_net_ib_descr_v1_t& q = ev->descr;
    q.type = NCCLSCOPE_NET_IB_DESCR_TYPE_QP;
    q.qp.device = i % cfg_.ib_devices;
    q.qp.wr_id = static_cast<uint64_t>(slot & 0xff);
    q.qp.qpNum = 0x100 + channel * kMaxIbQps + i;
    if (send) {
      // One request, no adaptive routing: the data WR is the IMM one (IBV_WR_RDMA_WRITE_WITH_IMM = 1).
      q.qp.opcode = 1;
      q.qp.length = std::min(chunk, bytes - offset);
      offset += q.qp.length;
    } else {
      // Receive events fill only device, wr_id and qpNum; what NCCL leaves in the rest is stale: make it loud.
      q.qp.opcode = 0;
      q.qp.length = 0xdeadbeef;
    }
    ev->handles[i] = nullptr;
    StartNetPluginEvent(op, step_event, NCCLSCOPE_NET_PLUGIN_TYPE_IB | 1, &ev->descr, &ev->handles[i]);
    ev->n = i + 1;
  }
}

void Communicator::StopIbQps(IbQpEvents* ev) {
  for (int i = 0; i < ev->n; ++i) {
    if (ev->handles[i] != nullptr) StopEvent(ev->handles[i]);
    ev->handles[i] = nullptr;
  }
  ev->n = 0;
}

void Communicator::ProgressOp(OpState* op) {
  const int mask = op->mask;
  const int n = cfg_.nranks;
  const size_t es = sizeof(float);
  std::string err;
  // Real NCCL 2.28.9 tells the net plugin what runs next on the proxy thread: 1 << ncclFunc (Broadcast 0,
  // AllGather 2, ReduceScatter 3, AllReduce 4, Send 6, Recv 7), 1 << algorithm (Ring 1), 1 << protocol (Simple 2).
  static constexpr uint32_t kNcclFuncBit[] = {1u << 4, 1u << 2, 1u << 3, 1u << 0};
  if (op->func == Func::kSendRecv) {
    net_->SetNetAttr(net_ctx_, 2, 1u << 6, ~0u, ~0u);
    net_->SetNetAttr(net_ctx_, 2, 1u << 7, ~0u, ~0u);
  } else {
    net_->SetNetAttr(net_ctx_, 2, kNcclFuncBit[static_cast<int>(op->func)], 1u << 1, 1u << 2);
  }
  // The "GPU" side of the kernel: initial copies into the output.
  switch (op->func) {
    case Func::kAllReduce:
      if (op->send != op->recv) memcpy(op->recv, op->send, op->count * es);
      break;
    case Func::kAllGather:
      memcpy(reinterpret_cast<char*>(op->recv) + static_cast<size_t>(cfg_.rank) * op->count * es, op->send,
             op->count * es);
      break;
    case Func::kBroadcast:
      if (cfg_.rank == op->root && op->send != op->recv) memcpy(op->recv, op->send, op->count * es);
      break;
    default:
      break;
  }
  pid_t pid = getpid();
  int ntasks = op->func == Func::kSendRecv ? 2 : 1;
  for (int c = 0; c < cfg_.channels; ++c) {
    ChannelState& ch = op->chans[c];
    if (mask & kKernelCh) {
      for (int t = 0; t < ntasks; ++t) {
        auto d = Descr(kKernelCh, op->task_ev[t], 0);  // NCCL leaves rank unset (0)
        d.kernelCh.channelId = static_cast<uint8_t>(c);
        d.kernelCh.pTimer = GlobalTimer();
        ch.kernel_start_gt = d.kernelCh.pTimer;
        ch.kernel_ch_ev[t] = StartEvent(d);
      }
    }
    if (mask & kProxyOpTrig) {
      for (int dir = 0; dir < 2; ++dir) {
        int nsteps = dir == 0 ? static_cast<int>(ch.sends.size()) : static_cast<int>(ch.recvs.size());
        if (nsteps == 0) continue;
        void* parent = op->func == Func::kSendRecv ? op->task_ev[dir] : op->task_ev[0];
        auto d = Descr(NCCLSCOPE_PROFILE_PROXY_OP, parent, cfg_.rank);
        d.proxyOp.pid = pid;
        d.proxyOp.channelId = static_cast<uint8_t>(c);
        d.proxyOp.peer = dir == 0 ? next_ : prev_;
        d.proxyOp.nSteps = nsteps;
        d.proxyOp.chunkSize = static_cast<int>(cfg_.step_bytes);
        d.proxyOp.isSend = dir == 0 ? 1 : 0;
        void* h = StartEvent(d);
        Record(h, NCCLSCOPE_STATE_PROXY_OP_IN_PROGRESS, nullptr);
        if (prof_ != nullptr) prof_->RecordRcclProxyDiag(h);  // RCCL layouts only
        (dir == 0 ? ch.send_op_ev : ch.recv_op_ev) = h;
        (dir == 0 ? ch.send_op_open : ch.recv_op_open) = true;
      }
    }
  }
  if (op->stall) {
    // --mismatch: the peers run another collective, so no step of this one can ever match theirs. Moving no
    // bytes keeps the peers' ring and this rank's buffers intact; the op waits, open, like NCCL's hang.
    while (!abort_.load(std::memory_order_relaxed)) usleep(1000);
    err = "communicator aborted";
  }
  const bool steps_on = (mask & kStepTrig) != 0;
  static const int spin = EnvInt("NCCLSCOPE_SIM_SPIN", 1000, 0, 1 << 30);
  static const int nap_us = EnvInt("NCCLSCOPE_SIM_NAP_US", 20, 0, 1000000);
  int idle = 0;
  bool all_done = false;
  while (!all_done && err.empty()) {
    if (abort_.load(std::memory_order_relaxed)) {
      err = "communicator aborted";
      break;
    }
    bool progressed = false;
    all_done = true;
    for (int c = 0; c < cfg_.channels && err.empty(); ++c) {
      ChannelState& ch = op->chans[c];
      Link& l = links_[c];
      const int ns = static_cast<int>(ch.sends.size()), nr = static_cast<int>(ch.recvs.size());
      // Receives: up to NCCL_STEPS posted ahead into the staging slots.
      while (ch.r_posted < nr && ch.r_posted - ch.r_done < kNcclSteps) {
        int k = ch.r_posted, slot = k % kNcclSteps;
        if (ch.r_started == k) {
          ch.r_ph[slot].op = op;
          ch.r_ph[slot].step_event = nullptr;
          if (steps_on) {
            auto d = Descr(NCCLSCOPE_PROFILE_PROXY_STEP, ch.recv_op_ev, cfg_.rank);
            d.proxyStep.step = k;
            ch.r_ph[slot].step_event = StartEvent(d);
          }
          ++ch.r_started;
        }
        void* data = l.recv_stage.data() + slot * cfg_.step_bytes;
        size_t cap = cfg_.step_bytes;
        int tag = prev_;
        void* mh = l.recv_mh;
        void* ph = &ch.r_ph[slot];
        void* req = nullptr;
        ncclscope_result_t r = net_->Irecv(l.recv_comm, 1, &data, &cap, &tag, &mh, &ph, &req);
        if (r != NCCLSCOPE_SUCCESS) {
          err = "irecv from rank " + std::to_string(prev_) + " failed (ncclResult " + std::to_string(r) + ")";
          break;
        }
        if (req == nullptr) break;
        StartIbQps(op, ch.r_ph[slot].step_event, &ch.r_ib[slot], false, c, slot, 0);
        ncclscope_profiler_state_args_t a;
        a.proxyStep.transSize = 0;
        Record(ch.r_ph[slot].step_event, NCCLSCOPE_STATE_PROXY_STEP_RECV_WAIT, &a);
        ch.r_req[slot] = req;
        ++ch.r_posted;
        progressed = true;
      }
      while (err.empty() && ch.r_done < ch.r_posted) {
        int k = ch.r_done, slot = k % kNcclSteps;
        int done = 0;
        int sizes[64] = {0};
        ncclscope_result_t r = net_->Test(ch.r_req[slot], &done, sizes);
        if (r != NCCLSCOPE_SUCCESS) {
          err = "test of a receive from rank " + std::to_string(prev_) + " failed (ncclResult " + std::to_string(r) + ")";
          break;
        }
        if (!done) break;
        const RecvStep& st = ch.recvs[k];
        if (static_cast<size_t>(sizes[0]) != st.bytes) {
          err = "receive from rank " + std::to_string(prev_) + " step " + std::to_string(k) + " got " +
                std::to_string(sizes[0]) + " bytes, expected " + std::to_string(st.bytes);
          break;
        }
        StopIbQps(&ch.r_ib[slot]);
        ncclscope_profiler_state_args_t a;
        a.proxyStep.transSize = static_cast<size_t>(sizes[0]);
        Record(ch.r_ph[slot].step_event, NCCLSCOPE_STATE_PROXY_STEP_RECV_FLUSH_WAIT, &a);
        Record(ch.r_ph[slot].step_event, NCCLSCOPE_STATE_PROXY_STEP_RECV_GPU_WAIT, &a);
        const char* src = l.recv_stage.data() + slot * cfg_.step_bytes;
        if (st.reduce) {
          float* dst = reinterpret_cast<float*>(st.dst);
          const float* in = reinterpret_cast<const float*>(src);
          for (size_t i = 0, e = st.bytes / es; i < e; ++i) dst[i] += in[i];
        } else {
          memcpy(st.dst, src, st.bytes);
        }
        StopEvent(ch.r_ph[slot].step_event);
        r = net_->IrecvConsumed(l.recv_comm, 1, ch.r_req[slot]);
        if (r != NCCLSCOPE_SUCCESS) {
          err = "irecvConsumed of a receive from rank " + std::to_string(prev_) + " failed (ncclResult " +
                std::to_string(r) + ")";
          break;
        }
        if (ch.r_done == 0) ch.first_recv_gt = GlobalTimer();
        ++ch.r_done;
        progressed = true;
      }
      // Sends: a slot is handed to the "GPU" (GPUWait), filled once its input is ready (PeerWait), posted.
      while (err.empty() && ch.s_started < ns && ch.s_started - ch.s_done < kNcclSteps) {
        int k = ch.s_started, slot = k % kNcclSteps;
        ch.s_ph[slot].op = op;
        ch.s_ph[slot].step_event = nullptr;
        if (steps_on) {
          auto d = Descr(NCCLSCOPE_PROFILE_PROXY_STEP, ch.send_op_ev, cfg_.rank);
          d.proxyStep.step = k;
          ch.s_ph[slot].step_event = StartEvent(d);
          ncclscope_profiler_state_args_t a;
          a.proxyStep.transSize = 0;
          Record(ch.s_ph[slot].step_event, NCCLSCOPE_STATE_PROXY_STEP_SEND_GPU_WAIT, &a);
        }
        ++ch.s_started;
        progressed = true;
      }
      while (err.empty() && ch.s_posted < ch.s_started) {
        int k = ch.s_posted, slot = k % kNcclSteps;
        const SendStep& st = ch.sends[k];
        if (st.dep >= 0 && ch.r_done <= st.dep) break;
        char* data = l.send_stage.data() + slot * cfg_.step_bytes;
        ncclscope_profiler_state_args_t a;
        a.proxyStep.transSize = st.bytes;
        if (ch.s_filled == k) {
          memcpy(data, st.src, st.bytes);
          ++ch.s_filled;
        }
        Record(ch.s_ph[slot].step_event, NCCLSCOPE_STATE_PROXY_STEP_SEND_PEER_WAIT, &a);
        void* req = nullptr;
        ncclscope_result_t r = net_->Isend(l.send_comm, data, st.bytes, cfg_.rank, l.send_mh, &ch.s_ph[slot], &req);
        if (r != NCCLSCOPE_SUCCESS) {
          err = "isend to rank " + std::to_string(next_) + " failed (ncclResult " + std::to_string(r) + ")";
          break;
        }
        if (req == nullptr) break;
        StartIbQps(op, ch.s_ph[slot].step_event, &ch.s_ib[slot], true, c, slot, st.bytes);
        Record(ch.s_ph[slot].step_event, NCCLSCOPE_STATE_PROXY_STEP_SEND_WAIT, &a);
        ch.s_req[slot] = req;
        ++ch.s_posted;
        progressed = true;
      }
      while (err.empty() && ch.s_done < ch.s_posted) {
        int slot = ch.s_done % kNcclSteps;
        int done = 0, size = 0;
        ncclscope_result_t r = net_->Test(ch.s_req[slot], &done, &size);
        if (r != NCCLSCOPE_SUCCESS) {
          err = "test of a send to rank " + std::to_string(next_) + " failed (ncclResult " + std::to_string(r) + ")";
          break;
        }
        if (!done) break;
        StopIbQps(&ch.s_ib[slot]);
        StopEvent(ch.s_ph[slot].step_event);
        ++ch.s_done;
        progressed = true;
      }
      if (ch.send_op_open && ch.s_done == ns) {
        StopEvent(ch.send_op_ev);
        ch.send_op_open = false;
      }
      if (ch.recv_op_open && ch.r_done == nr) {
        StopEvent(ch.recv_op_ev);
        ch.recv_op_open = false;
      }
      all_done &= ch.s_done == ns && ch.r_done == nr;
    }
    if (!progressed && !all_done) {
      // NCCL's proxy spins on its own core; rank processes here share a few cores with the plugin's
      // threads, so after a short spin the progress thread naps (NCCLSCOPE_SIM_SPIN / _NAP_US tune it).
      if (++idle > spin) usleep(nap_us);
      else sched_yield();
    } else {
      idle = 0;
    }
  }
  (void)n;
  if (err.empty()) {
    if (op->func == Func::kReduceScatter) {
      memcpy(op->recv, op->scratch.data() + static_cast<size_t>(cfg_.rank) * op->count, op->count * es);
    }
    for (int c = 0; c < static_cast<int>(op->chans.size()); ++c) {
      ChannelState& ch = op->chans[c];
      for (int t = 0; t < ntasks; ++t) {
        if (ch.kernel_ch_ev[t] == nullptr) continue;
        ncclscope_profiler_state_args_t a;
        a.kernelCh.pTimer = GlobalTimer();
        if (mask & NCCLSCOPE_PROFILE_KERNEL_PHASE) EmitKernelPhases(ch, c, t, a.kernelCh.pTimer);
        Record(ch.kernel_ch_ev[t], NCCLSCOPE_STATE_KERNEL_CH_STOP, &a);
        StopEvent(ch.kernel_ch_ev[t]);
      }
    }
  } else {
    SIM_WARN("comm 0x%016lx rank %d: %s %s", cfg_.comm_hash, cfg_.rank, FuncName(op->func), err.c_str());
  }
  std::lock_guard<std::mutex> lock(op->mu);
  op->error = err;
  op->done = true;
  op->cv.notify_all();
}


// NCCL 2.31 (v7): before a KernelCh stops, its channel's barrier phases, each started, stopped with state 31
// (stop time in the kernelCh argument) and ended. The sim's stand-ins: in a symmetric kernel initial_sync lasts
// until the channel's first data from its peer arrived (the wait for a late peer); in a ring kernel it is empty
// and the wait falls inside compute; compute until the end, and an empty final_sync.
void Communicator::EmitKernelPhases(const ChannelState& ch, int channel, int task, uint64_t end_gt) {
  if (prof_ == nullptr) return;
  const uint64_t start = ch.kernel_start_gt != 0 ? ch.kernel_start_gt : end_gt;
  const uint64_t first = cfg_.symmetric && ch.first_recv_gt != 0 ? std::max(start, ch.first_recv_gt) : start;
  const uint64_t bounds[4] = {start, first, end_gt, end_gt};
  for (int phase = 0; phase < 3; ++phase) {
    void* h = nullptr;
    prof_->StartKernelPhase(prof_ctx_, &h, ch.kernel_ch_ev[task], channel, phase, bounds[phase]);
    if (h == nullptr) continue;
    ncclscope_profiler_state_args_t a;
    a.kernelCh.pTimer = std::max(bounds[phase], bounds[phase + 1]);
    prof_->RecordEventState(h, NCCLSCOPE_STATE_KERNEL_PHASE_STOP, &a);
    prof_->StopEvent(h);
  }
}
}  // namespace ncclscope::sim

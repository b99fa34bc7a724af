#include "communicator.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "logger.h"
#include "op_state.h"
#include "ring_plan.h"
#include "sim_events.h"

namespace ncclscope::sim {
namespace {

int g_mask = 0;

char* stream_token = reinterpret_cast<char*>(0x57ea3);  // a fake cudaStream_t the plugin can key on

}  // namespace

int* ActivationMask() { return &g_mask; }

const char* FuncName(Func f) {
  static const char* kNames[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "SendRecv"};
  return kNames[static_cast<int>(f)];
}
const char* FuncOption(Func f) {
  static const char* kNames[] = {"allreduce", "allgather", "reducescatter", "broadcast", "sendrecv"};
  return kNames[static_cast<int>(f)];
}

// NCCL's net-plugin -> profiler callback (docs/nccl-abi.md#net-callback).
extern "C" ncclscope_result_t SimProfilerCallback(void** eHandle, int type, void* pHandle, int64_t pluginId,
                                                  void* extData) {
  switch (type) {
    case NCCLSCOPE_NET_EVENT_START: {
      if (pHandle == nullptr) return NCCLSCOPE_SUCCESS;
      auto* ph = static_cast<PHandle*>(pHandle);
      if (ph->op == nullptr) return NCCLSCOPE_SUCCESS;
      ph->op->comm->StartNetPluginEvent(ph->op, ph->step_event, pluginId, extData, eHandle);
      return NCCLSCOPE_SUCCESS;
    }
    case NCCLSCOPE_NET_EVENT_STOP:
    case NCCLSCOPE_NET_EVENT_UPDATE:
    case NCCLSCOPE_NET_EVENT_UPDATE_AND_STOP: {
      // NCCL forwards these to the one loaded profiler, whichever communicator, and ignores pHandle.
      ProfilerApi* p = PluginHost::Instance().LoadedProfiler();
      if (p == nullptr || *eHandle == nullptr) return NCCLSCOPE_SUCCESS;
      if (type != NCCLSCOPE_NET_EVENT_STOP) {
        ncclscope_profiler_state_args_t a;
        a.netPlugin.data = extData;
        p->RecordEventState(*eHandle, NCCLSCOPE_STATE_NET_PLUGIN_UPDATE, &a);
      }
      if (type != NCCLSCOPE_NET_EVENT_UPDATE) p->StopEvent(*eHandle);
      return NCCLSCOPE_SUCCESS;
    }
    default:
      return NCCLSCOPE_SUCCESS;
  }
}

Communicator::Communicator() = default;
Communicator::~Communicator() { Destroy(false); }

const char* Communicator::profiler_desc() const { return prof_ ? prof_->Name() : "none"; }

void* Communicator::StartEvent(const ncclscope_profiler_descr_v6_t& d, uint64_t tag, bool symmetric) {
  if (prof_ == nullptr) return nullptr;
  void* h = nullptr;
  prof_->StartEvent(prof_ctx_, &h, d, tag, symmetric, cfg_.comm_hash, cfg_.name.c_str());
  return h;
}
void Communicator::StopEvent(void* h) {
  if (prof_ != nullptr && h != nullptr) prof_->StopEvent(h);
}
void Communicator::Record(void* h, ncclscope_profiler_state_t s, ncclscope_profiler_state_args_t* a) {
  if (prof_ != nullptr && h != nullptr) prof_->RecordEventState(h, s, a);
}

void* Communicator::StartNetPluginEvent(OpState* op, void* step_event, int64_t plugin_id, void* data,
                                        void** handle) {
  if (prof_ == nullptr || (op->mask & kNetPlugin) == 0) return nullptr;  // *handle left untouched, as NCCL
  auto d = Descr(kNetPlugin, step_event, cfg_.rank);
  d.netPlugin.id = plugin_id;
  d.netPlugin.data = data;
  prof_->StartEvent(prof_ctx_, handle, d);
  return *handle;
}

void Communicator::RunOnService(const std::function<void()>& fn) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  {
    std::lock_guard<std::mutex> lock(svc_mu_);
    svc_q_.push_back([&] {
      fn();
      std::lock_guard<std::mutex> l(m);
      done = true;
      cv.notify_one();
    });
  }
  svc_cv_.notify_one();
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return done; });
}

void Communicator::ServiceLoop() {
  pthread_setname_np(pthread_self(), "NCCL Service");
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(svc_mu_);
      svc_cv_.wait(lock, [&] { return svc_stop_ || !svc_q_.empty(); });
      if (svc_q_.empty()) return;
      fn = std::move(svc_q_.front());
      svc_q_.pop_front();
    }
    fn();
  }
}

bool Communicator::Init(const CommConfig& cfg, std::string* error) {
  cfg_ = cfg;
  next_ = (cfg.rank + 1) % cfg.nranks;
  prev_ = (cfg.rank + cfg.nranks - 1) % cfg.nranks;
  if (!boot_.Connect(cfg.rendezvous, 60.0, error)) return false;
  PluginHost& host = PluginHost::Instance();
  net_ = host.AcquireNet(error);
  if (net_ == nullptr) return false;
  ncclscope_result_t r = NCCLSCOPE_SUCCESS;
  if (net_->PerCommInit()) {
    r = net_->Init(&net_ctx_, cfg.comm_hash, SimNcclLogger, SimProfilerCallback);
  } else if (!host.NetLoadInitDone()) {
    r = net_->Init(&net_ctx_, cfg.comm_hash, SimNcclLogger, SimProfilerCallback);
    if (r == NCCLSCOPE_SUCCESS) host.SetNetLoadInitDone();
  }
  if (r != NCCLSCOPE_SUCCESS) {
    *error = std::string("net plugin ") + net_->Name() + " init failed with ncclResult " + std::to_string(r) +
             " (Failed to initialize any NET plugin)";
    host.ReleaseNet();
    net_ = nullptr;
    return false;
  }
  net_inited_ = true;
  int ndev = 0;
  std::string dev_name;
  int type = -1, max_recvs = 0, speed = 0;
  if (net_->Devices(&ndev) != NCCLSCOPE_SUCCESS || ndev <= 0) {
    *error = std::string("net plugin ") + net_->Name() + " reports no devices";
    return false;
  }
  if (net_->GetProperties(0, &dev_name, &type, &max_recvs, &speed) != NCCLSCOPE_SUCCESS ||
      type != NCCLSCOPE_NET_DEVICE_HOST) {
    *error = std::string("net plugin ") + net_->Name() + " device 0 is not a HOST device (type " +
             std::to_string(type) + ")";
    return false;
  }
  if (cfg.fuse_nics) {
    // NCCL makes its virtual devices once per process; every communicator then uses them.
    static std::mutex fuse_mu;
    static int fused_dev = -1;
    std::lock_guard<std::mutex> lock(fuse_mu);
    if (fused_dev < 0) {
      std::vector<int> all(static_cast<size_t>(std::min(ndev, 8)));
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
      if (ndev < 2 || net_->MakeVDevice(all, &fused_dev) != NCCLSCOPE_SUCCESS) {
        *error = std::string("--fuse-nics: net plugin ") + net_->Name() + " cannot fuse its " + std::to_string(ndev) +
                 " device(s)";
        return false;
      }
    }
    net_dev_ = fused_dev;
    if (net_->GetProperties(net_dev_, &dev_name, &type, &max_recvs, &speed) != NCCLSCOPE_SUCCESS) {
      *error = "--fuse-nics: getProperties of the fused device " + std::to_string(net_dev_) + " failed";
      return false;
    }
  }
  SIM_INFO(NCCLSCOPE_SUBSYS_INIT | NCCLSCOPE_SUBSYS_NET,
           "comm 0x%016lx rank %d nranks %d: NET/%s (%s) dev %d '%s' %d Mbps, %d channels", cfg.comm_hash, cfg.rank,
           cfg.nranks, net_->Name(), net_->symbol.c_str(), net_dev_, dev_name.c_str(), speed, cfg.channels);

  // The profiler loads after the net plugin, before the proxy threads start.
  std::string reason;
  prof_ = host.AcquireProfiler(&reason);
  if (prof_ != nullptr) {
    ncclscope_result_t pr = prof_->Init(&prof_ctx_, cfg.comm_hash, &g_mask, cfg.name.c_str(), 1, cfg.nranks,
                                        cfg.rank, SimNcclLogger);
    if (pr != NCCLSCOPE_SUCCESS) {
      SIM_INFO(NCCLSCOPE_SUBSYS_INIT, "Profiler init failed with error %d. Continue without profiler", pr);
      host.ReleaseProfiler();
      prof_ = nullptr;
      prof_ctx_ = nullptr;
    }
  } else {
    SIM_INFO(NCCLSCOPE_SUBSYS_INIT, "no profiler: %s", reason.c_str());
  }

  service_ = std::thread([this] { ServiceLoop(); });
  progress_ = std::thread([this] { ProgressLoop(); });

  // Service thread: listen per channel; handles go through the bootstrap; then connect + accept.
  links_.resize(cfg.channels);
  std::string handles(static_cast<size_t>(cfg.channels) * NCCLSCOPE_NET_HANDLE_MAXSIZE, '\0');
  std::string svc_err;
  RunOnService([&] {
    for (int c = 0; c < cfg.channels && svc_err.empty(); ++c) {
      ncclscope_result_t lr = net_->Listen(net_ctx_, net_dev_, &handles[c * NCCLSCOPE_NET_HANDLE_MAXSIZE], &links_[c].listen_comm);
      if (lr != NCCLSCOPE_SUCCESS || links_[c].listen_comm == nullptr) svc_err = "listen failed on channel " + std::to_string(c);
    }
  });
  if (!svc_err.empty()) { *error = svc_err; return false; }
  std::vector<std::string> all;
  if (!boot_.AllGather(BootKey("handles"), cfg.nranks, cfg.rank, handles, &all)) {
    *error = "bootstrap all-gather of connect handles failed";
    return false;
  }
  RunOnService([&] {
    // As real NCCL 2.28.9 does on its service thread (golden traces): properties and flow hints per connection.
    for (int c = 0; c < cfg.channels; ++c) {
      std::string name;
      int type = 0, recvs = 0, speed = 0;
      net_->GetProperties(0, &name, &type, &recvs, &speed);
      net_->SetNetAttr(net_ctx_, 2, ~0u, ~0u, ~0u);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    // One handle buffer per connection, handed to every connect retry, as NCCL does: a plugin may keep
    // its in-progress state in the handle (ncclscope's stage cookie), so a fresh copy per call would
    // restart the handshake each time.
    std::vector<std::string> connect_handles;
    for (int c = 0; c < cfg.channels; ++c) {
      connect_handles.push_back(all[next_].substr(c * NCCLSCOPE_NET_HANDLE_MAXSIZE, NCCLSCOPE_NET_HANDLE_MAXSIZE));
    }
    for (;;) {
      bool pending = false;
      for (int c = 0; c < cfg.channels; ++c) {
        Link& l = links_[c];
        if (l.send_comm == nullptr) {
          std::string& h = connect_handles[c];
          if (net_->Connect(net_ctx_, net_dev_, h.data(), &l.send_comm) != NCCLSCOPE_SUCCESS) {
            svc_err = "connect to rank " + std::to_string(next_) + " failed";
            return;
          }
        }
        if (l.recv_comm == nullptr && net_->Accept(l.listen_comm, &l.recv_comm) != NCCLSCOPE_SUCCESS) {
          svc_err = "accept from rank " + std::to_string(prev_) + " failed";
          return;
        }
        pending |= l.send_comm == nullptr || l.recv_comm == nullptr;
      }
      if (!pending) break;
      if (std::chrono::steady_clock::now() > deadline) {
        svc_err = "connect/accept did not complete within 60 s";
        return;
      }
      usleep(100);
    }
    for (auto& l : links_) {
      l.send_stage.assign(kNcclSteps * cfg.step_bytes, 0);
      l.recv_stage.assign(kNcclSteps * cfg.step_bytes, 0);
      if (net_->RegMr(l.send_comm, l.send_stage.data(), l.send_stage.size(), &l.send_mh) != NCCLSCOPE_SUCCESS ||
          net_->RegMr(l.recv_comm, l.recv_stage.data(), l.recv_stage.size(), &l.recv_mh) != NCCLSCOPE_SUCCESS) {
        svc_err = "regMr of the staging buffers failed";
        return;
      }
    }
  });
  if (!svc_err.empty()) { *error = svc_err; return false; }
  if (!boot_.Barrier(BootKey("init-done"), cfg.nranks, cfg.rank)) {
    *error = "bootstrap barrier after connect failed";
    return false;
  }
  initialized_ = true;
  return true;
}

std::string Communicator::BootKey(const char* what) const {
  // Communicators of different groups (--layout) initialise at once with the same rank numbers; their
  // rendezvous rounds must not meet, so each key carries the comm hash.
  char h[24];
  snprintf(h, sizeof(h), "%016lx/", static_cast<unsigned long>(cfg_.comm_hash));
  return h + std::string(what);
}

uint64_t Communicator::SplitHash(int color) {
  // NCCL hashes (parent hash, split count, color); any good mix serves the plugin equally.
  uint64_t h = cfg_.comm_hash ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(++split_count_));
  h ^= static_cast<uint64_t>(color) * 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 29;
  return h;
}

// The host-callback part of a plan (Group, Coll/P2p); on a graph replay it runs on another thread.
void Communicator::EmitHostCallbackEvents(OpState* op, uint64_t seq, bool replay) {
  int mask = op->mask;
  // Coll/P2p are parented by the CollApi/P2pApi handles of the (captured) API call, even on replays.
  void* api_parent[2] = {op->api_ev[0], op->api_ev[1]};
  op->group_ev = (mask & kGroupTrig) ? StartEvent(Descr(NCCLSCOPE_PROFILE_GROUP, nullptr, 0)) : nullptr;
  op->task_ev[0] = op->task_ev[1] = nullptr;
  if (op->func == Func::kSendRecv) {
    if (mask & kP2pTrig) {
      for (int i = 0; i < 2; ++i) {
        auto d = Descr(NCCLSCOPE_PROFILE_P2P, api_parent[i], cfg_.rank);
        d.p2p.func = i == 0 ? "Send" : "Recv";
        d.p2p.buff = i == 0 ? const_cast<float*>(op->send) : op->recv;
        d.p2p.datatype = "ncclFloat32";
        d.p2p.count = op->count;
        d.p2p.peer = i == 0 ? next_ : prev_;
        d.p2p.nChannels = static_cast<uint8_t>(cfg_.channels);
        d.p2p.parentGroup = op->group_ev;
        op->task_ev[i] = StartEvent(d, op->tag);
        StopEvent(op->task_ev[i]);
      }
    }
  } else if (mask & kCollTrig) {
    auto d = Descr(NCCLSCOPE_PROFILE_COLL, api_parent[0], cfg_.rank);
    d.coll.seqNumber = seq;
    d.coll.func = FuncName(op->func);
    d.coll.sendBuff = op->send;
    d.coll.recvBuff = op->recv;
    bool bytes = op->func == Func::kAllGather || op->func == Func::kBroadcast;  // NCCL reports these as int8
    d.coll.count = bytes ? op->count * sizeof(float) : op->count;
    d.coll.datatype = bytes ? "ncclInt8" : "ncclFloat32";
    d.coll.root = op->root;
    d.coll.nChannels = static_cast<uint8_t>(cfg_.channels);
    d.coll.nWarps = 16;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    d.coll.parentGroup = op->group_ev;
    op->task_ev[0] = StartEvent(d, op->tag, cfg_.symmetric);
  }
  (void)replay;
}

bool Communicator::Run(Func f, const float* send, float* recv, size_t count, int root, std::string* error,
                       bool stall) {
  if (!initialized_ || failed_) {
    *error = "communicator is not usable (init failed or an earlier error)";
    return false;
  }
  if (!last_op_) last_op_ = std::make_unique<OpState>();
  OpState* op = last_op_.get();
  op->comm = this;
  op->func = f;
  op->send = send;
  op->recv = recv;
  op->count = count;
  op->root = root;
  op->stall = stall;
  op->done = false;
  op->error.clear();
  // The activation snapshot for everything this operation emits.
  int mask = __atomic_load_n(&g_mask, __ATOMIC_RELAXED);
  op->mask = mask;
  uint64_t seq = f == Func::kSendRecv ? 0 : seq_[static_cast<int>(f)]++;
  op->seq = seq;
  op->tag = cfg_.tags > 0 ? 1 + ops_run_ % static_cast<uint64_t>(cfg_.tags) : 0;
  ++ops_run_;

  // App thread: GroupApi (implicit group, or the sim's explicit group for Send+Recv), CollApi/P2pApi.
  bool grouped = f == Func::kSendRecv;
  void* group_api = nullptr;
  if (mask & kGroupApiTrig) {
    auto d = Descr(NCCLSCOPE_PROFILE_GROUP_API, nullptr, 0);
    d.groupApi.graphCaptured = cfg_.graph_captured;
    d.groupApi.groupDepth = grouped ? 2 : 1;
    group_api = StartEvent(d);
  }
  op->api_ev[0] = op->api_ev[1] = nullptr;
  if (grouped) {
    for (int i = 0; i < 2; ++i) {
      if (mask & kP2pApiTrig) {
        auto d = Descr(NCCLSCOPE_PROFILE_P2P_API, group_api, 0);
        d.p2pApi.func = i == 0 ? "Send" : "Recv";
        d.p2pApi.count = count;
        d.p2pApi.datatype = "ncclFloat32";
        d.p2pApi.stream = stream_token;
        d.p2pApi.graphCaptured = cfg_.graph_captured;
        op->api_ev[i] = StartEvent(d, op->tag);
      }
      if (i == 0) Record(group_api, NCCLSCOPE_STATE_GROUP_START_API_STOP, nullptr);
      StopEvent(op->api_ev[i]);
    }
  } else {
    if (mask & kCollApiTrig) {
      auto d = Descr(NCCLSCOPE_PROFILE_COLL_API, group_api, 0);
      d.collApi.func = FuncName(f);
      d.collApi.count = count;
      d.collApi.datatype = "ncclFloat32";
      d.collApi.root = root;
      d.collApi.stream = stream_token;
      d.collApi.graphCaptured = cfg_.graph_captured;
      op->api_ev[0] = StartEvent(d, op->tag);
    }
    Record(group_api, NCCLSCOPE_STATE_GROUP_START_API_STOP, nullptr);
    StopEvent(op->api_ev[0]);
  }
  Record(group_api, NCCLSCOPE_STATE_GROUP_END_API_START, nullptr);
  // Launch thread (blocking communicator: the app thread).
  if (mask & NCCLSCOPE_PROFILE_KERNEL_LAUNCH) {
    auto d = Descr(NCCLSCOPE_PROFILE_KERNEL_LAUNCH, group_api, 0);
    d.kernelLaunch.stream = stream_token;
    void* kl = StartEvent(d);
    StopEvent(kl);
  }
  // Host callback: Group and Coll/P2p events around the proxy-op upload.
  if (f == Func::kReduceScatter) op->scratch.assign(send, send + count * cfg_.nranks);
  Plan(op, cfg_.rank, cfg_.nranks, cfg_.channels, cfg_.step_bytes);
  auto host_callback = [&] {
    EmitHostCallbackEvents(op, seq, false);
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(op);
    }
    cv_.notify_one();
    if (f != Func::kSendRecv) StopEvent(op->task_ev[0]);  // Coll stops at enqueue, not at completion
    StopEvent(op->group_ev);
  };
  if (cfg_.graph_captured) {
    // Under capture real NCCL (2.28.9 golden trace) emits only the API events on the app thread; Group and
    // Coll/P2p come from the CUDA host-function thread of each launch (here the first launch follows at once).
    StopEvent(group_api);
    std::thread host_fn([&] {
      pthread_setname_np(pthread_self(), "cuda-hostfn");
      host_callback();
    });
    host_fn.join();
  } else {
    host_callback();
    StopEvent(group_api);
  }
  // The stream synchronize.
  std::unique_lock<std::mutex> lock(op->mu);
  op->cv.wait(lock, [&] { return op->done; });
  if (!op->error.empty()) {
    *error = op->error;
    failed_ = true;
    return false;
  }
  return true;
}

bool Communicator::Replay(std::string* error) {
  // A CUDA graph replay: no API events; the host callback runs on a CUDA host-function thread and repeats
  // the captured sequence number unless KernelCh is on (then NCCL re-numbers per launch).
  if (!last_op_ || failed_) {
    *error = "nothing captured to replay";
    return false;
  }
  OpState* op = last_op_.get();
  op->done = false;
  op->error.clear();
  op->mask = __atomic_load_n(&g_mask, __ATOMIC_RELAXED);
  uint64_t seq = op->seq;
  if ((op->mask & kKernelCh) && op->func != Func::kSendRecv) seq = seq_[static_cast<int>(op->func)]++;
  if (op->func == Func::kReduceScatter) op->scratch.assign(op->send, op->send + op->count * cfg_.nranks);
  Plan(op, cfg_.rank, cfg_.nranks, cfg_.channels, cfg_.step_bytes);
  std::thread host_fn([&] {
    pthread_setname_np(pthread_self(), "cuda-hostfn");
    op->task_ev[0] = op->task_ev[1] = nullptr;
    EmitHostCallbackEvents(op, seq, true);
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(op);
    }
    cv_.notify_one();
    if (op->func != Func::kSendRecv) StopEvent(op->task_ev[0]);
    StopEvent(op->group_ev);
  });
  host_fn.join();
  std::unique_lock<std::mutex> lock(op->mu);
  op->cv.wait(lock, [&] { return op->done; });
  if (!op->error.empty()) {
    *error = op->error;
    failed_ = true;
    return false;
  }
  return true;
}

void Communicator::Abort() {
  abort_.store(true);
  Destroy(false);
}

void Communicator::Destroy(bool barrier) {
  if (net_ == nullptr && !progress_.joinable() && !service_.joinable()) return;
  if (barrier && initialized_ && !failed_) boot_.Barrier(BootKey("destroy"), cfg_.nranks, cfg_.rank);
  if (progress_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    progress_.join();
  }
  if (service_.joinable()) {
    RunOnService([&] {
      for (auto& l : links_) {
        if (l.send_mh) net_->DeregMr(l.send_comm, l.send_mh);
        if (l.recv_mh) net_->DeregMr(l.recv_comm, l.recv_mh);
        if (l.send_comm) net_->CloseSend(l.send_comm);
        if (l.recv_comm) net_->CloseRecv(l.recv_comm);
        if (l.listen_comm) net_->CloseListen(l.listen_comm);
        l = Link();
      }
    });
    {
      std::lock_guard<std::mutex> lock(svc_mu_);
      svc_stop_ = true;
    }
    svc_cv_.notify_all();
    service_.join();
  }
  PluginHost& host = PluginHost::Instance();
  if (prof_ != nullptr) {
    if (prof_ctx_ != nullptr) prof_->Finalize(prof_ctx_);
    prof_ = nullptr;
    prof_ctx_ = nullptr;
    host.ReleaseProfiler();
  }
  if (net_ != nullptr) {
    if (net_inited_ && net_->PerCommInit()) net_->Finalize(net_ctx_);
    net_ = nullptr;
    net_ctx_ = nullptr;
    host.ReleaseNet();
  }
  initialized_ = false;
}

}  // namespace ncclscope::sim

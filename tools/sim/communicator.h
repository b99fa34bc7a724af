// One emulated NCCL communicator of one rank: net plugin ctx and ring connections (one send comm to the next
// rank and one recv comm from the previous rank per channel), a "service" thread that alone calls
// listen/connect/accept/regMr/close (NCCL Service), a "proxy progress" thread that alone calls
// isend/irecv/test (NCCL Progress), and the profiler events NCCL 2.28/2.30 emit for each operation, with
// the activation mask snapshotted per operation (docs/nccl-abi.md#profiler-events, #step-states,
// #kernel-timer, #net-threads).
// Thread-safety: Init/Run*/Destroy are called from one application thread at a time (NCCL's rule for one
// communicator); different communicators may be driven from different threads concurrently.
#ifndef NCCLSCOPE_TOOLS_SIM_COMMUNICATOR_H_
#define NCCLSCOPE_TOOLS_SIM_COMMUNICATOR_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap.h"
#include "plugin_loader.h"

namespace ncclscope::sim {

inline constexpr int kNcclSteps = 8;  // NCCL_STEPS

enum class Func { kAllReduce = 0, kAllGather, kReduceScatter, kBroadcast, kSendRecv, kCount };
const char* FuncName(Func f);        // nccl-tests / NCCL name, e.g. "AllReduce"
const char* FuncOption(Func f);      // command-line name, e.g. "allreduce"

// NCCL's process-wide ncclProfilerEventMask: every profiler init gets a pointer to this one int.
int* ActivationMask();

struct CommConfig {
  std::string rendezvous;  // host:port of the RendezvousServer
  int nranks = 0;
  int rank = 0;
  uint64_t comm_hash = 0;
  std::string name;
  int channels = 2;
  size_t step_bytes = 512 * 1024;  // NCCL_BUFFSIZE / NCCL_STEPS
  bool graph_captured = false;
  // --ib-events D:Q: also raise, through the profiler, the NetPlugin QP events NCCL's own IB transport raises
  // when built with NET_PROFILER=1 (one per QP per request, Q QPs per request spread over D devices).
  int ib_devices = 0;  // 0: off
  int ib_qps = 1;
  // --fuse-nics: fuse every device of the net plugin into one (makeVDevice, once per process, as NCCL's
  // topology does with NCCL_NET_FORCE_MERGE) and connect through it instead of device 0.
  bool fuse_nics = false;
  int tags = 0;  // --tags N: operation k of this communicator carries v7 user tag 1 + k % N
  // --symmetric: collectives are symmetric kernels (v7 isSymColl): their initial_sync phase is the wait for the
  // peers; otherwise (ring) initial_sync is empty and the wait falls inside compute, as in NCCL 2.31.
  bool symmetric = false;
};

inline constexpr int kMaxIbQps = 8;  // NCCL's MAX_QPS_PER_REQ

struct OpState;
struct ChannelState;
struct IbQpEvents;

class Communicator {
 public:
  Communicator();
  ~Communicator();
  bool Init(const CommConfig& cfg, std::string* error);
  // A collective on `count` float32 elements (per-rank count for AllGather / ReduceScatter, as NCCL's API).
  // Blocks until the proxy finished it (the sim's stream synchronize). Returns false with *error on failure.
  // stall (--mismatch): the op is issued as usual (API, Coll, ProxyOp, KernelCh events) but its proxy moves no
  // bytes and waits until the communicator is aborted, as a collective whose peers run another one waits in NCCL.
  bool Run(Func f, const float* send, float* recv, size_t count, int root, std::string* error, bool stall = false);
  // Graph replay: re-emits the host-callback and proxy events of the last captured op from another thread,
  // as a CUDA-graph replay does, and moves the data again.
  bool Replay(std::string* error);
  // Split: a new communicator over the same ranks (color 0), hash derived from (parent hash, split count, color).
  uint64_t SplitHash(int color);
  void Destroy(bool barrier);
  // Abort: stops the proxy without waiting for peers (NCCL's ncclCommAbort).
  void Abort();

  int rank() const { return cfg_.rank; }
  int nranks() const { return cfg_.nranks; }
  uint64_t hash() const { return cfg_.comm_hash; }
  const std::string& name() const { return cfg_.name; }
  // The sequence number the next collective of function f gets (its Coll event's seqNumber).
  uint64_t next_seq(Func f) const { return seq_[static_cast<int>(f)]; }
  BootstrapClient& bootstrap() { return boot_; }
  const char* net_name() const { return net_ ? net_->Name() : "-"; }
  const char* profiler_desc() const;

  // Called through the net plugin's profiler callback.
  void* StartNetPluginEvent(OpState* op, void* step_event, int64_t plugin_id, void* data, void** handle);
  ProfilerApi* profiler() const { return prof_; }

 private:
  struct Link {
    void* listen_comm = nullptr;
    void* send_comm = nullptr;
    void* recv_comm = nullptr;
    std::vector<char> send_stage, recv_stage;
    void* send_mh = nullptr;
    void* recv_mh = nullptr;
  };
  std::string BootKey(const char* what) const;  // a rendezvous key private to this communicator
  void RunOnService(const std::function<void()>& fn);
  void ServiceLoop();
  void ProgressLoop();
  void ProgressOp(OpState* op);
  // --ib-events: NCCL IB's QP events of one request (bytes split over the QPs as ncclIbMultiSend does).
  void StartIbQps(OpState* op, void* step_event, IbQpEvents* ev, bool send, int channel, int slot, size_t bytes);
  void StopIbQps(IbQpEvents* ev);
  void* ProxyCtrlStart(ncclscope_profiler_state_t s, int appended);
  void ProxyCtrlState(void* h, ncclscope_profiler_state_t s, int appended);
  void ProxyCtrlStop(void* h);
  void* StartEvent(const ncclscope_profiler_descr_v6_t& d, uint64_t tag = 0, bool symmetric = false);
  void EmitKernelPhases(const ChannelState& ch, int channel, int task, uint64_t end_gt);
  void StopEvent(void* h);
  void Record(void* h, ncclscope_profiler_state_t s, ncclscope_profiler_state_args_t* a);
  void EmitHostCallbackEvents(OpState* op, uint64_t seq, bool replay);

  CommConfig cfg_;
  BootstrapClient boot_;
  NetApi* net_ = nullptr;
  void* net_ctx_ = nullptr;
  int net_dev_ = 0;  // the device every connection uses: 0, or the fused one (--fuse-nics)
  bool net_inited_ = false;
  ProfilerApi* prof_ = nullptr;
  void* prof_ctx_ = nullptr;
  std::vector<Link> links_;
  int next_ = 0, prev_ = 0;
  uint64_t seq_[static_cast<int>(Func::kCount)] = {};
  uint64_t ops_run_ = 0;  // operations of this communicator, for --tags
  int split_count_ = 0;
  std::unique_ptr<OpState> last_op_;

  // Service thread.
  std::thread service_;
  std::mutex svc_mu_;
  std::condition_variable svc_cv_;
  std::deque<std::function<void()>> svc_q_;
  bool svc_stop_ = false;

  // Progress thread.
  std::thread progress_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<OpState*> queue_;
  bool stop_ = false;
  std::atomic<bool> abort_{false};
  bool initialized_ = false;
  bool failed_ = false;
};

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_COMMUNICATOR_H_

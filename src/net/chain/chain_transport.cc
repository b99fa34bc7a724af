#include "net/chain/chain_transport.h"

#include "common/inner_call.h"
#include "common/log.h"
#include "common/params.h"
#include "core/net_stats.h"
#include "net/chain/chain_comm.h"
#include "net/chain/default_plugin.h"

namespace ncclscope::net::chain {
namespace {

class ChainListenComm final : public ListenComm {
 public:
  ChainListenComm(ChainTransport& t, void* inner_comm, int dev, const NetContext* ctx)
      : t_(t), inner_comm_(inner_comm), dev_(dev), ctx_(ctx) {}

  Status Accept(RecvComm** recv_comm, ncclscope_net_device_handle_t** dev_comm) override {
    *recv_comm = nullptr;
    void* rc = nullptr;
    const ncclscope_result_t r = t_.inner().Accept(inner_comm_, &rc, dev_comm);
    if (r != NCCLSCOPE_SUCCESS) {
      Status s = InnerStatus(t_.inner(), "accept", r);
      RecordConnectionFailure(t_.nic_label(dev_), ctx_, NetErrorKind::kAccept, s, PeerInfo{});
      return s;
    }
    if (rc != nullptr) {
      const NetProperties& p = t_.properties(dev_);
      *recv_comm = new ChainRecvComm(t_.inner(), rc, t_.nic_label(dev_), ctx_,
                                     p.net_device_type != NCCLSCOPE_NET_DEVICE_HOST);
    }
    return Status::Ok();
  }

  Status Close() override {
    const ncclscope_result_t r = t_.inner().CloseListen(inner_comm_);
    Status s = r == NCCLSCOPE_SUCCESS ? Status::Ok() : InnerStatus(t_.inner(), "closeListen", r);
    delete this;
    return s;
  }

 private:
  ChainTransport& t_;
  void* inner_comm_;
  int dev_;
  const NetContext* ctx_;
};

std::string Configured() { return Params().Str(ParamId::kNetChain); }

// What the chain wraps: the plugin NCCLSCOPE_NET_CHAIN names, else the one NCCL would load by itself
// (default_plugin.h). `label` names where it came from, for messages.
struct Target {
  std::string value, label;
  bool found = false;  // not named: the default plugin
};

Target ChainTarget() {
  if (std::string v = Configured(); !v.empty()) return {v, "NCCLSCOPE_NET_CHAIN=" + v};
  DefaultNetPlugin d = FindDefaultNetPlugin();
  if (!d.skipped.empty()) {
    NCCLSCOPE_LOG_ONCE(NCCLSCOPE_INFO, subsys::kInit | subsys::kNet,
                       "auto: not wrapping %s: %s", kDefaultNetPluginName, d.skipped.c_str());
  }
  if (d.file.empty()) return {};
  return {d.file, std::string(kDefaultNetPluginName) + " (" + d.file + ")", true};
}

}  // namespace

Status ChainTransport::Open() {
  if (inner_ != nullptr) return Status::Ok();
  const Target target = ChainTarget();
  if (target.value.empty()) {
    return InvalidUsage(std::string("NCCLSCOPE_NET_CHAIN is not set and no ") + kDefaultNetPluginName +
                        " is on the loader's path: nothing names the net plugin to wrap");
  }
  Result<std::unique_ptr<InnerPlugin>> loaded = LoadInnerPlugin(target.value);
  if (!loaded.ok()) return Status(loaded.status().code(), target.label + ": " + loaded.status().message());
  inner_ = std::move(*loaded);
  if (target.found) {
    // The one line that says where the job's data goes when nobody named the plugin.
    NCCLSCOPE_INFO(subsys::kInit | subsys::kNet,
                   "auto: wrapping net plugin '%s' (ncclNetPlugin_v%d) from %s, the plugin NCCL loads by itself "
                   "when NCCL_NET_PLUGIN is unset: it carries the data, ncclscope counts it "
                   "(NCCLSCOPE_TRANSPORT=tcp or ib makes ncclscope carry it instead)",
                   inner_->name().c_str(), inner_->version(), inner_->path().c_str());
  } else {
    NCCLSCOPE_INFO(subsys::kInit | subsys::kNet, "wrapping net plugin '%s' (ncclNetPlugin_v%d) from %s",
                   inner_->name().c_str(), inner_->version(), inner_->path().c_str());
  }
  return Status::Ok();
}

Status ChainTransport::Attach(NetContext* ctx) {
  const ncclscope_logger_t logger = ctx->logger != nullptr ? ctx->logger : NcclLogger();
  void* inner_ctx = nullptr;
  // We hold the net API's init lock: an inner that calls back into our init is refused, then reported here.
  InnerCall call(inner_->who());
  auto undo = [&] {
    if (inner_->per_comm() && inner_ctx != nullptr) inner_->Finalize(inner_ctx);
  };
  if (inner_->per_comm() || !legacy_init_done_) {
    const ncclscope_result_t r =
        inner_->Init(&inner_ctx, ctx->comm_id, ctx->traffic_class, logger, ctx->profiler_cb);
    if (call.reentered()) {
      if (r == NCCLSCOPE_SUCCESS) undo();
      return call.ReentryError("init");
    }
    if (r != NCCLSCOPE_SUCCESS) return InnerStatus(*inner_, "init", r);
    legacy_init_done_ = true;
  }
  if (device_count() == 0) {
    Status s = ReadDevices();
    if (call.reentered()) s = call.ReentryError("devices or getProperties");
    if (!s.ok()) {
      undo();
      return s;
    }
  }
  if (inner_->per_comm()) ctx->transport_state = inner_ctx;
  return Status::Ok();
}

void ChainTransport::Detach(NetContext* ctx) {
  if (!inner_->per_comm() || ctx->transport_state == nullptr) return;
  const ncclscope_result_t r = inner_->Finalize(ctx->transport_state);
  ctx->transport_state = nullptr;
  if (r != NCCLSCOPE_SUCCESS) {
    NCCLSCOPE_WARN(subsys::kNet, "%s", InnerStatus(*inner_, "finalize", r).message().c_str());
  }
}

void ChainTransport::SetNetAttr(NetContext* ctx, const ncclscope_net_attr_t& attr) {
  if (!inner_->per_comm()) return;
  ncclscope_net_attr_t copy = attr;
  const ncclscope_result_t r = inner_->SetNetAttr(ctx->transport_state, &copy);
  if (r != NCCLSCOPE_SUCCESS) {
    NCCLSCOPE_WARN(subsys::kNet, "%s", InnerStatus(*inner_, "setNetAttr", r).message().c_str());
  }
}

Status ChainTransport::ReadDevices() {
  int n = 0;
  ncclscope_result_t r = inner_->Devices(&n);
  if (r != NCCLSCOPE_SUCCESS) return InnerStatus(*inner_, "devices", r);
  if (n < 1 || n > kMaxDevices) {
    return SystemError("the wrapped plugin '" + inner_->name() + "' (" + inner_->path() + ") reports " +
                       std::to_string(n) + " devices (1 to " + std::to_string(kMaxDevices) + " can be wrapped)");
  }
  for (int i = 0; i < n; ++i) {
    NetProperties p;
    r = inner_->GetProperties(i, &p);
    if (r != NCCLSCOPE_SUCCESS) return InnerStatus(*inner_, "getProperties(" + std::to_string(i) + ")", r);
    props_[i] = std::move(p);
    Describe(i);
  }
  ndevs_.store(n, std::memory_order_release);
  return Status::Ok();
}

void ChainTransport::Describe(int dev) {
  const NetProperties& p = props_[dev];
  labels_[dev] = p.name;
  for (int i = 0; i < dev; ++i) {
    if (props_[i].name == p.name) labels_[dev] = p.name + ":" + std::to_string(dev);
  }
  SetNicIdentity({labels_[dev], "chain:" + inner_->name(), p.rail_id, p.plane_id});
}

Status ChainTransport::MakeVDevice(const int* devs, int n, int* vdev) {
  if (!inner_->has_make_vdevice()) {
    if (n == 1) {  // a vNIC of one device is that device
      *vdev = devs[0];
      return Status::Ok();
    }
    return InvalidUsage("makeVDevice of " + std::to_string(n) + " devices: the wrapped plugin '" + inner_->name() +
                        "' (ncclNetPlugin_v" + std::to_string(inner_->version()) +
                        ") cannot fuse NICs; NCCL_NET_MERGE_LEVEL=LOC turns fusion off");
  }
  int made = -1;
  InnerCall call(inner_->who());
  ncclscope_result_t r = inner_->MakeVDevice(devs, n, &made);
  if (call.reentered()) return call.ReentryError("makeVDevice");
  if (r != NCCLSCOPE_SUCCESS) return InnerStatus(*inner_, "makeVDevice", r);
  if (made != device_count() || made >= kMaxDevices) {
    return InternalError("the wrapped plugin's makeVDevice returned device " + std::to_string(made) + ", not " +
                         std::to_string(device_count()));
  }
  NetProperties p;
  r = inner_->GetProperties(made, &p);
  if (r != NCCLSCOPE_SUCCESS) return InnerStatus(*inner_, "getProperties of a vNIC", r);
  props_[made] = std::move(p);
  Describe(made);
  ndevs_.store(made + 1, std::memory_order_release);
  *vdev = made;
  return Status::Ok();
}

Status ChainTransport::CheckDevice(int dev) const {
  if (dev >= 0 && dev < device_count()) return Status::Ok();
  return InvalidArgument("device " + std::to_string(dev) + " of " + std::to_string(device_count()));
}

Status ChainTransport::Listen(NetContext* ctx, int dev, void* handle, ListenComm** listen_comm) {
  *listen_comm = nullptr;
  NCCLSCOPE_RETURN_IF_ERROR(CheckDevice(dev));
  void* lc = nullptr;
  const ncclscope_result_t r = inner_->Listen(InnerContext(ctx), dev, handle, &lc);
  if (r != NCCLSCOPE_SUCCESS) return InnerStatus(*inner_, "listen", r);
  if (lc == nullptr) return InternalError("the wrapped plugin's listen returned no listen comm");
  *listen_comm = new ChainListenComm(*this, lc, dev, ctx);
  return Status::Ok();
}

Status ChainTransport::Connect(NetContext* ctx, int dev, void* handle, SendComm** send_comm,
                               ncclscope_net_device_handle_t** dev_comm) {
  *send_comm = nullptr;
  NCCLSCOPE_RETURN_IF_ERROR(CheckDevice(dev));
  void* sc = nullptr;
  const ncclscope_result_t r = inner_->Connect(InnerContext(ctx), ctx->traffic_class, dev, handle, &sc, dev_comm);
  if (r != NCCLSCOPE_SUCCESS) {
    Status s = InnerStatus(*inner_, "connect", r);
    RecordConnectionFailure(labels_[dev], ctx, NetErrorKind::kConnect, s, PeerInfo{});
    return s;
  }
  if (sc != nullptr) *send_comm = new ChainSendComm(*inner_, sc, labels_[dev], ctx);
  return Status::Ok();
}

ChainTransport& GetChainTransport() {
  static ChainTransport* t = new ChainTransport();  // never destroyed: comms may outlive static destructors
  return *t;
}

std::vector<std::string> ConfiguredChain() {
  const Target target = ChainTarget();
  if (target.value.empty()) return {};
  if (!target.found) return {target.label};
  return {"wrapping " + target.value + ", the net plugin NCCL loads by itself when NCCL_NET_PLUGIN is unset"};
}

Status WrappableChain() {
  const Target target = ChainTarget();
  if (!target.found) return Status::Ok();  // a named plugin that fails to load fails init (Open), as asked
  Result<std::unique_ptr<InnerPlugin>> loaded = LoadInnerPlugin(target.value);
  if (loaded.ok()) return Status::Ok();
  // NCCL would have run it (an older table) but ncclscope cannot: say so rather than carry the data elsewhere.
  return Declined(target.label + ", the net plugin NCCL loads by itself when NCCL_NET_PLUGIN is unset, cannot " +
                  "be wrapped: " + loaded.status().message() + "; declining. Name it in NCCL_NET_PLUGIN instead " +
                  "of ncclscope (keep NCCL_PROFILER_PLUGIN=ncclscope), or set NCCLSCOPE_TRANSPORT=tcp to " +
                  "carry the data over ncclscope's TCP");
}

TransportProbe ProbeChain() {
  TransportProbe p;
  const Target target = ChainTarget();
  if (target.value.empty()) {
    p.detail = std::string("NCCLSCOPE_NET_CHAIN is not set and no ") + kDefaultNetPluginName +
               " is on the loader's path";
    return p;
  }
  Result<std::unique_ptr<InnerPlugin>> loaded = LoadInnerPlugin(target.value);
  if (!loaded.ok()) {
    p.detail = target.label + ": " + loaded.status().message();
    return p;
  }
  p.present = p.usable = 1;
  p.detail = "wrapping '" + (*loaded)->name() + "' (ncclNetPlugin_v" + std::to_string((*loaded)->version()) +
             ", " + (*loaded)->path() + ")";
  return p;
}

}  // namespace ncclscope::net::chain

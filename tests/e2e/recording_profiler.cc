// Test fixture: a tiny recording profiler plugin (exports ncclProfiler_v4, _v5, _v6; or v4 or v5 only, by build
// flag; SIM_RECORD_INIT_FAIL makes its init fail) that checks what an NCCL
// emulator emits: parents, threads, state sequences, handles stopped. At finalize it writes
// $SIM_RECORD_DIR/rec-<commHash>-rank<rank>.json. Not part of ncclscope; proves the sim drives "any plugin".
// Thread-safety: one mutex per context (fine for a fixture, never for a real plugin's hot path).
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ncclscope/abi/profiler.h"

namespace {

struct Ctx;
struct Event {
  uint64_t type;
  Event* parent;
  void* parent_group = nullptr;
  long tid;
  int rank;
  bool stopped = false;
  std::vector<int> states;
  std::string func;
  uint64_t seq = 0;
  size_t count = 0;
  std::string datatype;
  int is_send = -1;
  int64_t net_id = 0;
};

struct Ctx {
  std::mutex mu;
  uint64_t hash;
  int rank, nranks, version;
  std::vector<std::unique_ptr<Event>> events;
  std::vector<std::string> errors;
};

long Tid() { return syscall(SYS_gettid); }

const char* TypeName(uint64_t t) {
  switch (t) {
    case 0x1: return "Group"; case 0x2: return "Coll"; case 0x4: return "P2p"; case 0x8: return "ProxyOp";
    case 0x10: return "ProxyStep"; case 0x20: return "ProxyCtrl"; case 0x40: return "KernelCh";
    case 0x80: return "NetPlugin"; case 0x100: return "GroupApi"; case 0x200: return "CollApi";
    case 0x400: return "P2pApi"; case 0x800: return "KernelLaunch"; default: return "Other";
  }
}

int MaskFromEnv(int dflt) {
  const char* m = getenv("SIM_RECORD_MASK");
  return m ? static_cast<int>(strtol(m, nullptr, 0)) : dflt;
}

ncclscope_result_t InitCommon(void** context, int* mask, uint64_t hash, int nranks, int rank, int version) {
  if (getenv("SIM_RECORD_INIT_FAIL") != nullptr) return NCCLSCOPE_INTERNAL_ERROR;  // a plugin that cannot start
  auto* c = new Ctx;
  c->hash = hash;
  c->rank = rank;
  c->nranks = nranks;
  c->version = version;
  *mask = MaskFromEnv(version >= 5 ? 0xFFF : 0xFF);
  *context = c;
  return NCCLSCOPE_SUCCESS;
}

template <typename D>
void Fill(Event* e, const D& d, bool v5) {
  if (d.type == NCCLSCOPE_PROFILE_COLL) {
    e->func = d.coll.func;
    e->seq = d.coll.seqNumber;
    e->count = d.coll.count;
    e->datatype = d.coll.datatype;
  } else if (d.type == NCCLSCOPE_PROFILE_P2P) {
    e->func = d.p2p.func;
    e->count = d.p2p.count;
    e->datatype = d.p2p.datatype;
  } else if (d.type == NCCLSCOPE_PROFILE_PROXY_OP) {
    e->is_send = d.proxyOp.isSend;
  } else if (d.type == NCCLSCOPE_PROFILE_NET_PLUGIN) {
    e->net_id = d.netPlugin.id;
  }
}

ncclscope_result_t StartV5(void* context, void** handle, ncclscope_profiler_descr_v5_t* d) {
  auto* c = static_cast<Ctx*>(context);
  if (c == nullptr) return NCCLSCOPE_SUCCESS;
  auto e = std::make_unique<Event>();
  e->type = d->type;
  e->parent = static_cast<Event*>(d->parentObj);
  e->tid = Tid();
  e->rank = d->rank;
  Fill(e.get(), *d, true);
  if (d->type == NCCLSCOPE_PROFILE_COLL) e->parent_group = d->coll.parentGroup;
  if (d->type == NCCLSCOPE_PROFILE_P2P) e->parent_group = d->p2p.parentGroup;
  std::lock_guard<std::mutex> lock(c->mu);
  *handle = e.get();
  c->events.push_back(std::move(e));
  return NCCLSCOPE_SUCCESS;
}

ncclscope_result_t StartV6(void* context, void** handle, ncclscope_profiler_descr_v6_t* d) {
  ncclscope_profiler_descr_v5_t v5;
  memcpy(&v5, d, sizeof(v5));  // fixture shortcut: v6 is a strict superset of v5 at the same offsets
  return StartV5(context, handle, &v5);
}

ncclscope_result_t StartV4(void* context, void** handle, ncclscope_profiler_descr_v4_t* d) {
  auto* c = static_cast<Ctx*>(context);
  if (c == nullptr) return NCCLSCOPE_SUCCESS;
  auto e = std::make_unique<Event>();
  e->type = d->type;
  e->parent = static_cast<Event*>(d->parentObj);
  e->tid = Tid();
  e->rank = d->rank;
  Fill(e.get(), *d, false);
  std::lock_guard<std::mutex> lock(c->mu);
  *handle = e.get();
  c->events.push_back(std::move(e));
  return NCCLSCOPE_SUCCESS;
}

ncclscope_result_t Stop(void* handle) {
  if (handle != nullptr) static_cast<Event*>(handle)->stopped = true;  // events of one op: one thread at a time
  return NCCLSCOPE_SUCCESS;
}

ncclscope_result_t Record(void* handle, ncclscope_profiler_state_t s, ncclscope_profiler_state_args_t* a) {
  if (handle != nullptr) static_cast<Event*>(handle)->states.push_back(static_cast<int>(s));
  return NCCLSCOPE_SUCCESS;
}

std::string States(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

ncclscope_result_t Finalize(void* context) {
  auto* c = static_cast<Ctx*>(context);
  if (c == nullptr) return NCCLSCOPE_SUCCESS;
  nlohmann::json counts = nlohmann::json::object();
  nlohmann::json ops = nlohmann::json::object();
  std::vector<std::string>& err = c->errors;
  std::map<Event*, bool> known;
  for (auto& e : c->events) known[e.get()] = true;
  long proxy_tid = 0;
  auto bad = [&](const Event& e, const std::string& what) {
    if (err.size() < 50) err.push_back(std::string(TypeName(e.type)) + ": " + what);
  };
  for (auto& ep : c->events) {
    Event& e = *ep;
    counts[TypeName(e.type)] = counts.value(TypeName(e.type), 0) + 1;
    uint64_t pt = e.parent && known.count(e.parent) ? e.parent->type : 0;
    if (!e.stopped && e.type != NCCLSCOPE_PROFILE_NET_PLUGIN) bad(e, "never stopped");
    switch (e.type) {
      case NCCLSCOPE_PROFILE_GROUP_API:
        if (States(e.states) != "23,24") bad(e, "states " + States(e.states));
        break;
      case NCCLSCOPE_PROFILE_COLL_API:
      case NCCLSCOPE_PROFILE_P2P_API:
      case NCCLSCOPE_PROFILE_KERNEL_LAUNCH:
        if (pt != NCCLSCOPE_PROFILE_GROUP_API) bad(e, "parent is not GroupApi");
        if (e.tid != e.parent->tid) bad(e, "not on the GroupApi's thread");
        break;
      case NCCLSCOPE_PROFILE_COLL:
      case NCCLSCOPE_PROFILE_P2P: {
        uint64_t want = c->version >= 5 ? (e.type == NCCLSCOPE_PROFILE_COLL ? NCCLSCOPE_PROFILE_COLL_API : NCCLSCOPE_PROFILE_P2P_API)
                                        : NCCLSCOPE_PROFILE_GROUP;
        if (pt != want) bad(e, "parent type " + std::to_string(pt));
        if (c->version >= 5 && (e.parent_group == nullptr || static_cast<Event*>(e.parent_group)->type != NCCLSCOPE_PROFILE_GROUP))
          bad(e, "parentGroup is not the Group event");
        if (e.rank != c->rank) bad(e, "rank");
        auto& o = ops[e.func];
        if (o.is_null()) o = {{"count", 0}, {"last_seq", 0}, {"elements", 0}};
        o["count"] = o["count"].get<int>() + 1;
        o["last_seq"] = std::max<uint64_t>(o["last_seq"].get<uint64_t>(), e.seq);
        o["elements"] = o["elements"].get<uint64_t>() + e.count;
        o["datatype"] = e.datatype;
        break;
      }
      case NCCLSCOPE_PROFILE_PROXY_OP:
        if (pt != NCCLSCOPE_PROFILE_COLL && pt != NCCLSCOPE_PROFILE_P2P) bad(e, "parent is not Coll/P2p");
        if (States(e.states) != "19") bad(e, "states " + States(e.states));
        if (proxy_tid == 0) proxy_tid = e.tid;
        if (e.tid != proxy_tid) bad(e, "not on the progress thread");
        if (e.parent && e.tid == e.parent->tid) bad(e, "on the host-callback thread");
        break;
      case NCCLSCOPE_PROFILE_PROXY_STEP: {
        if (pt != NCCLSCOPE_PROFILE_PROXY_OP) { bad(e, "parent is not ProxyOp"); break; }
        std::string s = States(e.states);
        if (e.parent->is_send == 1) {
          if (s.rfind("8,20", 0) != 0 || s.size() < 6 || s.substr(s.size() - 2) != ",9") bad(e, "send states " + s);
        } else if (s != "10,11,12") {
          bad(e, "recv states " + s);
        }
        if (e.tid != e.parent->tid) bad(e, "not on the ProxyOp's thread");
        break;
      }
      case NCCLSCOPE_PROFILE_KERNEL_CH:
        if (pt != NCCLSCOPE_PROFILE_COLL && pt != NCCLSCOPE_PROFILE_P2P) bad(e, "parent is not Coll/P2p");
        if (States(e.states) != "22") bad(e, "states " + States(e.states));
        if (e.rank != 0) bad(e, "rank should be unset (0)");
        break;
      case NCCLSCOPE_PROFILE_NET_PLUGIN:
        if (pt != NCCLSCOPE_PROFILE_PROXY_STEP) bad(e, "parent is not ProxyStep");
        break;
      case NCCLSCOPE_PROFILE_PROXY_CTRL:
        if (e.parent != nullptr) bad(e, "has a parent");
        // One event per progress-thread phase, as real NCCL 2.28.9 emits them (tests/data/golden).
        if (const std::string s = States(e.states); s != "13" && s != "14" && s != "15,16" && s != "17,18") {
          bad(e, "states " + s);
        }
        break;
      default:
        break;
    }
  }
  nlohmann::json out = {{"comm_hash", c->hash}, {"rank", c->rank}, {"nranks", c->nranks}, {"version", c->version},
                        {"counts", counts}, {"ops", ops}, {"errors", err}};
  const char* dir = getenv("SIM_RECORD_DIR");
  if (dir != nullptr) {
    char path[512];
    snprintf(path, sizeof(path), "%s/rec-%016lx-rank%d.json", dir, static_cast<unsigned long>(c->hash), c->rank);
    if (FILE* f = fopen(path, "w")) {
      fputs(out.dump(1).c_str(), f);
      fclose(f);
    }
  }
  delete c;
  return NCCLSCOPE_SUCCESS;
}

ncclscope_result_t InitV4(void** ctx, int* mask, const char*, uint64_t hash, int, int nranks, int rank, ncclscope_logger_t) {
  return InitCommon(ctx, mask, hash, nranks, rank, 4);
}
ncclscope_result_t InitV5(void** ctx, uint64_t hash, int* mask, const char*, int, int nranks, int rank, ncclscope_logger_t) {
  return InitCommon(ctx, mask, hash, nranks, rank, 5);
}
ncclscope_result_t InitV6(void** ctx, uint64_t hash, int* mask, const char*, int, int nranks, int rank, ncclscope_logger_t) {
  return InitCommon(ctx, mask, hash, nranks, rank, 6);
}

}  // namespace

#ifndef SIM_RECORDER_V5_ONLY
extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v4_t ncclProfiler_v4 = {
    "sim-recorder", InitV4, StartV4, Stop, Record, Finalize};
#endif
#if defined(SIM_RECORDER_V5_ONLY)
extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v5_t ncclProfiler_v5 = {
    "sim-recorder", InitV5, StartV5, Stop, Record, Finalize};
#elif !defined(SIM_RECORDER_V4_ONLY)
extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v5_t ncclProfiler_v5 = {
    "sim-recorder", InitV5, StartV5, Stop, Record, Finalize};
extern "C" __attribute__((visibility("default"))) const ncclscope_profiler_v6_t ncclProfiler_v6 = {
    "sim-recorder", InitV6, StartV6, Stop, Record, Finalize};
#endif

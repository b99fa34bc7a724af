#include "options.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "clock_offset.h"
#include "strict_number.h"

namespace ncclscope::sim {
namespace {

constexpr long long kIntMax = std::numeric_limits<int>::max();
constexpr long kMaxStraggleMs = 3600 * 1000;  // an hour per operation; usleep's argument stays in 32 bits
constexpr double kMaxPauseS = kMaxStraggleMs / 1000.0;  // as --straggle: an hour per operation
constexpr long kMaxSeq = std::numeric_limits<long>::max();
constexpr double kMaxHoldOnErrorS = 3600;

std::string BadValue(const std::string& opt, const std::string& value, const std::string& why) {
  return "bad value '" + value + "' for " + opt + ": " + why;
}

// RANK<sep>VALUE, both non-negative integers: the rank below 256 (the --ranks limit), VALUE up to max_value.
bool ParseFault(const std::string& opt, const std::string& s, char sep, const char* want, long max_value, Fault* f,
                std::string* error) {
  size_t p = s.find(sep);
  std::string why;
  if (p == std::string::npos) {
    *error = BadValue(opt, s, std::string("want ") + want);
    return false;
  }
  if (!ParseInteger(std::string_view(s).substr(0, p), 0, 255, &f->rank, &why)) {
    *error = BadValue(opt, s, "rank " + why);
    return false;
  }
  if (!ParseInteger(std::string_view(s).substr(p + 1), 0, max_value, &f->value, &why)) {
    *error = BadValue(opt, s, std::string(sep == ':' ? "MS " : "SEQ ") + why);
    return false;
  }
  return true;
}

// --pause RANK:SECONDS/EVERY: RANK below 256 (the --ranks limit), SECONDS a decimal in (0, an hour], EVERY >= 1.
bool ParsePause(const std::string& opt, const std::string& s, Pause* p, std::string* error) {
  const char* want = "want RANK:SECONDS/EVERY, e.g. 1:20/50";
  size_t c = s.find(':'), sl = s.find('/', c == std::string::npos ? 0 : c);
  std::string why;
  if (c == std::string::npos || sl == std::string::npos) {
    *error = BadValue(opt, s, want);
    return false;
  }
  if (!ParseInteger(std::string_view(s).substr(0, c), 0, 255, &p->rank, &why)) {
    *error = BadValue(opt, s, "rank " + why);
    return false;
  }
  if (!ParseDecimal(std::string_view(s).substr(c + 1, sl - c - 1), 0, kMaxPauseS, &p->seconds, &why)) {
    *error = BadValue(opt, s, "SECONDS " + why);
    return false;
  }
  if (p->seconds <= 0) {
    *error = BadValue(opt, s, "SECONDS must be above 0");
    return false;
  }
  if (!ParseInteger(std::string_view(s).substr(sl + 1), 1, kMaxSeq, &p->every, &why)) {
    *error = BadValue(opt, s, "EVERY " + why);
    return false;
  }
  return true;
}

// --clock-offset RANK:MS[,RANK:MS…]: MS a signed integer of at most a day either way; each rank once.
bool ParseClockOffsets(const std::string& opt, const std::string& v, std::vector<ClockOffset>* out,
                       std::string* error) {
  size_t pos = 0;
  for (;;) {
    size_t e = v.find(',', pos);
    if (e == std::string::npos) e = v.size();
    const std::string item = v.substr(pos, e - pos);
    size_t c = item.find(':');
    std::string why;
    ClockOffset co;
    if (c == std::string::npos) {
      *error = BadValue(opt, v, "want RANK:MS[,RANK:MS...], e.g. 1:250,3:-4000");
      return false;
    }
    if (!ParseInteger(std::string_view(item).substr(0, c), 0, 255, &co.rank, &why)) {
      *error = BadValue(opt, v, "rank " + why);
      return false;
    }
    if (!ParseInteger(std::string_view(item).substr(c + 1), -kMaxClockOffsetMs, kMaxClockOffsetMs, &co.ms, &why)) {
      *error = BadValue(opt, v, "MS " + why);
      return false;
    }
    for (const ClockOffset& other : *out) {
      if (other.rank == co.rank) {
        *error = BadValue(opt, v, "rank " + std::to_string(co.rank) + " given twice");
        return false;
      }
    }
    out->push_back(co);
    if (e == v.size()) return true;
    pos = e + 1;
  }
}

}  // namespace

long ClockOffsetMs(const Options& o, int rank) {
  for (const ClockOffset& c : o.clock_offsets) {
    if (c.rank == rank) return c.ms;
  }
  return 0;
}

bool SplitRoot(const std::string& root, std::string* host, int* port, std::string* why) {
  size_t c = root.rfind(':');
  if (c == std::string::npos || c == 0) {
    *why = "want HOST:PORT";
    return false;
  }
  if (!ParseInteger(std::string_view(root).substr(c + 1), 1, 65535, port, why)) {
    *why = "port " + *why;
    return false;
  }
  *host = root.substr(0, c);
  return true;
}

const char* Usage() {
  return "usage: ncclscope-sim [--ranks N] [--comms C] [--ops allreduce,allgather,reducescatter,broadcast,sendrecv|all]\n"
         "         [--sizes MIN:MAX] [--factor F] [--iters I] [--warmup W] [--channels K] [--step-bytes B]\n"
         "         [--abi 2.23|2.25|2.26|2.27|2.28|2.30|2.31] [--abi-layout nvidia|rccl|rccl-untagged] [--tags N]\n"
         "         [--net-plugin NAME|PATH] [--profiler-plugin NAME|PATH|none] [--json]\n"
         "         [--fuse-nics] [--symmetric]\n"
         "         [--layout tp=K]\n"
         "         [--straggle RANK:MS] [--hang RANK@SEQ] [--kill RANK@SEQ] [--mismatch RANK@SEQ] [--timeout S]\n"
         "         [--freeze RANK@SEQ] [--stuck-kernel RANK@SEQ] [--hold-on-error S] [--expect-hang]\n"
         "         [--pause RANK:SECONDS/EVERY]\n"
         "         [--clock-offset RANK:MS[,RANK:MS...]]\n"
         "         [--net-max-version 8..12] [--graph-replay R] [--compare-profiler REPS] [--rank R --root HOST:PORT]\n"
         "         [--ib-events DEVICES:QPS]\n"
         "       ncclscope-sim --help | --version\n"
         "Starts N rank processes (RANK, WORLD_SIZE, LOCAL_RANK set as torchrun does) that load the plugins as\n"
         "NCCL does and run ring collectives over the net plugin, checking every byte. Plugin names default to\n"
         "ncclscope (NCCL_NET_PLUGIN / NCCL_PROFILER_PLUGIN when set), resolved through LD_LIBRARY_PATH.\n"
         "SEQ counts the operations issued on the first communicator (the TP one with --layout), from 0.\n"
         "--mismatch RANK@SEQ: at op SEQ rank RANK issues AllGather where the others issue AllReduce (AllReduce\n"
         "where they issue anything else; same bytes where possible), as a program calling collectives in a\n"
         "different order; it waits in it (moving no bytes) and issues nothing more, so every rank stays at the\n"
         "mismatch and the job hangs (use --timeout, --expect-hang).\n"
         "--freeze RANK@SEQ: before op SEQ rank RANK stops its whole process (raise(SIGSTOP)): every thread, the\n"
         "plugins' too, stops; its sockets stay open, so its peers see silence, not an error. The launcher ends it\n"
         "(SIGKILL) at --timeout.\n"
         "--pause RANK:SECONDS/EVERY: rank RANK sleeps SECONDS (decimal, up to 3600) before ops EVERY, 2*EVERY, ...\n"
         "(never op 0), as a rank saving a checkpoint or evaluating every EVERY steps; its peers wait in that op,\n"
         "then the job goes on healthy. One stderr line per pause.\n"
         "SIGUSR1 to the launcher brings --timeout forward: the job ends at once as at its timeout.\n"
         "--stuck-kernel RANK@SEQ: a fake: a GPU kernel that never finishes cannot be produced without a GPU. At\n"
         "op SEQ rank RANK starts the op as NCCL does (API, Group, Coll/P2p at enqueue, ProxyOp, KernelCh starts\n"
         "with their GPU timer) but its kernel never ends: no KernelCh stop, and, as the kernel feeds the proxy,\n"
         "no isend/irecv for that op. The rank stays alive, its peers wait on it; the job hangs.\n"
         "--hold-on-error S (0..3600, default 0): after a communicator error (e.g. a peer was --kill'ed) a rank\n"
         "reports it, then stays alive S seconds with the communicator and the failed op's events left in flight\n"
         "(an application polling ncclCommGetAsyncError until its launcher ends it), then aborts and exits 3.\n"
         "--layout tp=K (K divides N, 2 <= K < N; not with --comms): each rank creates a tensor-parallel\n"
         "communicator over ranks [g*K, (g+1)*K) (sim-tp-<g>) and a data-parallel one over the ranks with the\n"
         "same index in their TP group (sim-dp-<i>), and issues each op on TP then on DP from one thread.\n"
         "With --rank and --root one invocation runs one rank (rank 0 hosts the rendezvous at --root).\n"
         "--ib-events DEVICES:QPS (1..64:1..8) also raises, through the profiler, the NetPlugin QP events of NCCL's\n"
         "own IB transport built with NET_PROFILER=1 (id 0x10001): QPS QPs per request, QP i on IB device\n"
         "i % DEVICES, data split over the QPs as net_ib does; the bytes still move through the net plugin.\n"
         "Needs the NetPlugin bit (0x80) in the profiler's mask, as in NCCL.\n"
         "--clock-offset RANK:MS (repeatable, or a comma-separated list; MS -86400000..86400000) runs every clock\n"
         "rank RANK reports MS ms ahead: the GPU timer of its KernelCh/KernelPhase events and the realtime and\n"
         "monotonic clocks the plugins read (a negative MS moves the monotonic ones by MS plus one day).\n"
         "--abi-layout rccl|rccl-untagged: the emulated library is RCCL (a fake librccl.so is loaded), its profiler\n"
         "descriptors in RCCL's layout: rccl appends proxy-trace fields (sentinels) to NVIDIA's v7 and sends\n"
         "ProxyDiag updates; rccl-untagged is a v7 without user tags and without the per-call config API.\n";
}

bool ParseOptions(int argc, char** argv, Options* o, bool* help, std::string* error) {
  *help = false;
  if (const char* v = getenv("NCCL_NET_PLUGIN")) o->net_plugin = v;
  if (const char* v = getenv("NCCL_PROFILER_PLUGIN")) o->profiler_plugin = v;
  for (int i = 0; i < argc; ++i) o->argv.push_back(argv[i]);
  static const char* const kTakesValue[] = {
      "--ranks", "-n", "--comms", "--ops", "--sizes", "--factor", "--iters", "--warmup", "--channels", "--tags",
      "--step-bytes", "--abi", "--net-plugin", "--profiler-plugin", "--straggle", "--hang", "--kill", "--timeout",
      "--net-max-version", "--graph-replay", "--compare-profiler", "--rank", "--root", "--ib-events",
      "--clock-offset", "--mismatch", "--layout", "--freeze", "--stuck-kernel", "--hold-on-error",
      "--abi-layout", "--pause"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      *help = true;
      return true;
    }
    if (a == "--version") { o->version = true; continue; }
    if (a == "--json") { o->json = true; continue; }
    if (a == "--fuse-nics") { o->fuse_nics = true; continue; }
    if (a == "--symmetric") { o->symmetric = true; continue; }
    if (a == "--expect-hang") { o->expect_hang = true; continue; }
    bool takes_value = false;
    for (const char* name : kTakesValue) takes_value |= a == name;
    if (!takes_value) {
      *error = a.size() > 1 && a[0] == '-' ? "unknown option '" + a + "'" : "unexpected argument '" + a + "'";
      return false;
    }
    if (i + 1 >= argc) {
      *error = "option '" + a + "' needs a value";
      return false;
    }
    const std::string v = argv[++i];
    std::string why;
    // An integer option in [min, max]; on failure names the option and the value.
    auto integer = [&](auto* out, long long min, long long max) {
      if (ParseInteger(v, min, max, out, &why)) return true;
      *error = BadValue(a, v, why);
      return false;
    };
    bool ok = true;
    if (a == "--ranks" || a == "-n") ok = integer(&o->ranks, 2, 256);
    else if (a == "--comms") ok = integer(&o->comms, 1, 16);
    else if (a == "--iters") ok = integer(&o->iters, 1, kIntMax);
    else if (a == "--warmup") ok = integer(&o->warmup, 0, kIntMax);
    else if (a == "--channels") ok = integer(&o->channels, 1, 64);  // MAXCHANNELS
    else if (a == "--tags") ok = integer(&o->tags, 0, 1 << 20);    // v7 user tags 1..N, round-robin per op
    else if (a == "--factor") ok = integer(&o->factor, 2, kIntMax);
    else if (a == "--net-max-version") ok = integer(&o->net_max_version, 8, 12);
    else if (a == "--graph-replay") ok = integer(&o->graph_replay, 0, kIntMax);
    else if (a == "--compare-profiler") ok = integer(&o->compare_profiler, 0, kIntMax);
    else if (a == "--rank") ok = integer(&o->rank, 0, 255);
    else if (a == "--timeout") {
      ok = ParseDecimal(v, 0.001, 1e9, &o->timeout_s, &why);
      if (!ok) *error = BadValue(a, v, why);
    } else if (a == "--root") {
      std::string host;
      int port = 0;
      ok = SplitRoot(v, &host, &port, &why);
      if (ok) o->root = v;
      else *error = BadValue(a, v, why);
    } else if (a == "--ib-events") {
      size_t c = v.find(':');
      if (c == std::string::npos) {
        ok = false;
        *error = BadValue(a, v, "want DEVICES:QPS, e.g. 2:4");
      } else if (!ParseInteger(std::string_view(v).substr(0, c), 1, 64, &o->ib_devices, &why)) {
        ok = false;
        *error = BadValue(a, v, "DEVICES " + why);
      } else if (!ParseInteger(std::string_view(v).substr(c + 1), 1, kMaxIbQps, &o->ib_qps, &why)) {
        ok = false;
        *error = BadValue(a, v, "QPS " + why);
      }
    } else if (a == "--net-plugin") o->net_plugin = v;
    else if (a == "--profiler-plugin") o->profiler_plugin = v;
    else if (a == "--step-bytes") {
      ok = ParseByteSize(v, &o->step_bytes, &why);
      if (!ok) *error = BadValue(a, v, why);
      else if (o->step_bytes < 4 || o->step_bytes % 4 != 0) {
        ok = false;
        *error = BadValue(a, v, "want a multiple of 4 bytes, at least 4");
      }
    } else if (a == "--abi-layout") {  // whose profiler headers the emulated library has (plugin_loader.h)
      if (v == "nvidia") o->abi_layout = AbiLayout::kNvidia;
      else if (v == "rccl") o->abi_layout = AbiLayout::kRccl;
      else if (v == "rccl-untagged") o->abi_layout = AbiLayout::kRcclUntagged;
      else { ok = false; *error = BadValue(a, v, "want nvidia, rccl or rccl-untagged"); }
    } else if (a == "--abi") {
      if (v == "2.23") o->abi = NcclVersion::k2_23;
      else if (v == "2.25") o->abi = NcclVersion::k2_25;
      else if (v == "2.26") o->abi = NcclVersion::k2_26;
      else if (v == "2.27") o->abi = NcclVersion::k2_27;
      else if (v == "2.28") o->abi = NcclVersion::k2_28;
      else if (v == "2.30") o->abi = NcclVersion::k2_30;
      else if (v == "2.31") o->abi = NcclVersion::k2_31;
      else { ok = false; *error = BadValue(a, v, "want 2.23, 2.25, 2.26, 2.27, 2.28, 2.30 or 2.31"); }
    } else if (a == "--sizes") {
      size_t c = v.find(':');
      std::string lo = c == std::string::npos ? v : v.substr(0, c), hi = c == std::string::npos ? v : v.substr(c + 1);
      if (!ParseByteSize(lo, &o->min_bytes, &why) || !ParseByteSize(hi, &o->max_bytes, &why)) {
        ok = false;
        *error = BadValue(a, v, why + "; want MIN:MAX, e.g. 8:256M");
      } else if (o->min_bytes > o->max_bytes) {
        ok = false;
        *error = BadValue(a, v, "MIN is above MAX");
      }
    } else if (a == "--ops") {
      o->ops.clear();
      size_t pos = 0;
      while (ok && pos <= v.size()) {
        size_t e = v.find(',', pos);
        if (e == std::string::npos) e = v.size();
        std::string name = v.substr(pos, e - pos);
        bool found = false;
        for (int f = 0; f < static_cast<int>(Func::kCount); ++f) {
          if (name == "all" || name == FuncOption(static_cast<Func>(f))) {
            o->ops.push_back(static_cast<Func>(f));
            found = true;
          }
        }
        if (!found) {
          ok = false;
          *error = BadValue(a, v, "unknown op '" + name + "'");
        }
        pos = e + 1;
      }
    } else if (a == "--straggle") ok = ParseFault(a, v, ':', "RANK:MS", kMaxStraggleMs, &o->straggle, error);
    else if (a == "--hang") ok = ParseFault(a, v, '@', "RANK@SEQ", kMaxSeq, &o->hang, error);
    else if (a == "--kill") ok = ParseFault(a, v, '@', "RANK@SEQ", kMaxSeq, &o->kill, error);
    else if (a == "--mismatch") ok = ParseFault(a, v, '@', "RANK@SEQ", kMaxSeq, &o->mismatch, error);
    else if (a == "--freeze") ok = ParseFault(a, v, '@', "RANK@SEQ", kMaxSeq, &o->freeze, error);
    else if (a == "--stuck-kernel") ok = ParseFault(a, v, '@', "RANK@SEQ", kMaxSeq, &o->stuck_kernel, error);
    else if (a == "--pause") ok = ParsePause(a, v, &o->pause, error);
    else if (a == "--hold-on-error") {
      ok = ParseDecimal(v, 0, kMaxHoldOnErrorS, &o->hold_on_error_s, &why);
      if (!ok) *error = BadValue(a, v, why);
    }
    else if (a == "--layout") {
      // Only tensor x data parallel for now; the prefix leaves room for other layouts.
      ok = v.rfind("tp=", 0) == 0 && ParseInteger(std::string_view(v).substr(3), 2, 256, &o->tp, &why);
      if (!ok) *error = BadValue(a, v, v.rfind("tp=", 0) == 0 ? "K " + why : "want tp=K, e.g. tp=2");
    }
    else if (a == "--clock-offset") ok = ParseClockOffsets(a, v, &o->clock_offsets, error);
    if (!ok) return false;
  }
  if (o->compare_profiler > 0 && o->comms != 1) { *error = "--compare-profiler needs --comms 1 (the mask is process-wide)"; return false; }
  if (o->rank >= o->ranks) { *error = "--rank " + std::to_string(o->rank) + " must be < --ranks " + std::to_string(o->ranks); return false; }
  if (o->rank >= 0 && o->root.empty()) { *error = "--rank needs --root HOST:PORT"; return false; }
  if (o->tp > 0) {
    const std::string k = std::to_string(o->tp), n = std::to_string(o->ranks);
    if (o->comms != 1) { *error = "--layout makes the communicators: it excludes --comms " + std::to_string(o->comms); return false; }
    if (o->tp >= o->ranks) { *error = "--layout tp=" + k + ": K must be < --ranks " + n; return false; }
    if (o->ranks % o->tp != 0) { *error = "--layout tp=" + k + ": K must divide --ranks " + n; return false; }
  }
  const std::pair<const char*, const Fault*> faults[] = {
      {"--straggle", &o->straggle}, {"--hang", &o->hang}, {"--kill", &o->kill}, {"--mismatch", &o->mismatch},
      {"--freeze", &o->freeze}, {"--stuck-kernel", &o->stuck_kernel}};
  for (const auto& [name, f] : faults) {
    if (f->rank >= o->ranks) {
      *error = std::string(name) + " rank " + std::to_string(f->rank) + " must be < --ranks " + std::to_string(o->ranks);
      return false;
    }
  }
  if (o->pause.rank >= o->ranks) {
    *error = "--pause rank " + std::to_string(o->pause.rank) + " must be < --ranks " + std::to_string(o->ranks);
    return false;
  }
  for (const ClockOffset& c : o->clock_offsets) {
    if (c.rank >= o->ranks) {
      *error = "--clock-offset rank " + std::to_string(c.rank) + " must be < --ranks " + std::to_string(o->ranks);
      return false;
    }
  }
  return true;
}

}  // namespace ncclscope::sim

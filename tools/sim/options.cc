#include "options.h"

#include <cstdlib>
#include <cstring>

namespace ncclscope::sim {
namespace {

bool ParseSize(const std::string& s, size_t* out) {
  char* end = nullptr;
  double v = strtod(s.c_str(), &end);
  if (end == s.c_str() || v < 0) return false;
  switch (*end) {
    case 'K': case 'k': v *= 1024; ++end; break;
    case 'M': case 'm': v *= 1024 * 1024; ++end; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != 0) return false;
  *out = static_cast<size_t>(v);
  return true;
}

bool ParseFault(const std::string& s, char sep, Fault* f) {
  size_t p = s.find(sep);
  if (p == std::string::npos) return false;
  f->rank = atoi(s.substr(0, p).c_str());
  f->value = atol(s.substr(p + 1).c_str());
  return f->rank >= 0 && f->value >= 0;
}

}  // namespace

const char* Usage() {
  return "usage: ncclscope-sim --ranks N [--comms C] [--ops allreduce,allgather,reducescatter,broadcast,sendrecv|all]\n"
         "         [--sizes MIN:MAX] [--factor F] [--iters I] [--warmup W] [--channels K] [--step-bytes B]\n"
         "         [--abi 2.28|2.30] [--net-plugin NAME|PATH] [--profiler-plugin NAME|PATH|none] [--json]\n"
         "         [--straggle RANK:MS] [--hang RANK@SEQ] [--kill RANK@SEQ] [--timeout S] [--expect-hang]\n"
         "         [--net-max-version 8..12] [--graph-replay R] [--compare-profiler REPS] [--rank R --root HOST:PORT]\n"
         "Starts N rank processes (RANK, WORLD_SIZE, LOCAL_RANK set as torchrun does) that load the plugins as\n"
         "NCCL does and run ring collectives over the net plugin, checking every byte. Plugin names default to\n"
         "ncclscope (NCCL_NET_PLUGIN / NCCL_PROFILER_PLUGIN when set), resolved through LD_LIBRARY_PATH.\n"
         "SEQ counts the operations issued on the first communicator, from 0.\n"
         "With --rank and --root one invocation runs one rank (rank 0 hosts the rendezvous at --root).\n";
}

bool ParseOptions(int argc, char** argv, Options* o, bool* help, std::string* error) {
  *help = false;
  if (const char* v = getenv("NCCL_NET_PLUGIN")) o->net_plugin = v;
  if (const char* v = getenv("NCCL_PROFILER_PLUGIN")) o->profiler_plugin = v;
  for (int i = 0; i < argc; ++i) o->argv.push_back(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need = [&](std::string* v) {
      if (i + 1 >= argc) {
        *error = a + " needs a value";
        return false;
      }
      *v = argv[++i];
      return true;
    };
    std::string v;
    if (a == "-h" || a == "--help") { *help = true; return true; }
    else if (a == "--json") o->json = true;
    else if (a == "--expect-hang") o->expect_hang = true;
    else if (!need(&v)) return false;
    else if (a == "--ranks" || a == "-n") o->ranks = atoi(v.c_str());
    else if (a == "--comms") o->comms = atoi(v.c_str());
    else if (a == "--iters") o->iters = atoi(v.c_str());
    else if (a == "--warmup") o->warmup = atoi(v.c_str());
    else if (a == "--channels") o->channels = atoi(v.c_str());
    else if (a == "--factor") o->factor = atoi(v.c_str());
    else if (a == "--timeout") o->timeout_s = atof(v.c_str());
    else if (a == "--net-max-version") o->net_max_version = atoi(v.c_str());
    else if (a == "--graph-replay") o->graph_replay = atoi(v.c_str());
    else if (a == "--compare-profiler") o->compare_profiler = atoi(v.c_str());
    else if (a == "--rank") o->rank = atoi(v.c_str());
    else if (a == "--root") o->root = v;
    else if (a == "--net-plugin") o->net_plugin = v;
    else if (a == "--profiler-plugin") o->profiler_plugin = v;
    else if (a == "--step-bytes") {
      if (!ParseSize(v, &o->step_bytes) || o->step_bytes < 4 || o->step_bytes % 4) { *error = "bad --step-bytes"; return false; }
    } else if (a == "--abi") {
      if (v == "2.28") o->abi = NcclVersion::k2_28;
      else if (v == "2.30") o->abi = NcclVersion::k2_30;
      else { *error = "--abi must be 2.28 or 2.30"; return false; }
    } else if (a == "--sizes") {
      size_t c = v.find(':');
      std::string lo = c == std::string::npos ? v : v.substr(0, c), hi = c == std::string::npos ? v : v.substr(c + 1);
      if (!ParseSize(lo, &o->min_bytes) || !ParseSize(hi, &o->max_bytes) || o->min_bytes > o->max_bytes) {
        *error = "bad --sizes '" + v + "' (want MIN:MAX, e.g. 8:256M)";
        return false;
      }
    } else if (a == "--ops") {
      o->ops.clear();
      size_t pos = 0;
      while (pos <= v.size()) {
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
        if (!found) { *error = "unknown op '" + name + "'"; return false; }
        pos = e + 1;
      }
    } else if (a == "--straggle") {
      if (!ParseFault(v, ':', &o->straggle)) { *error = "bad --straggle (want RANK:MS)"; return false; }
    } else if (a == "--hang") {
      if (!ParseFault(v, '@', &o->hang)) { *error = "bad --hang (want RANK@SEQ)"; return false; }
    } else if (a == "--kill") {
      if (!ParseFault(v, '@', &o->kill)) { *error = "bad --kill (want RANK@SEQ)"; return false; }
    } else {
      *error = "unknown option " + a;
      return false;
    }
  }
  if (o->net_max_version < 8 || o->net_max_version > 12) { *error = "--net-max-version must be 8..12"; return false; }
  if (o->ranks < 2 || o->ranks > 256) { *error = "--ranks must be 2..256"; return false; }
  if (o->comms < 1 || o->comms > 16) { *error = "--comms must be 1..16"; return false; }
  if (o->channels < 1 || o->channels > 64) { *error = "--channels must be 1..64 (MAXCHANNELS)"; return false; }
  if (o->iters < 1 || o->factor < 2) { *error = "--iters must be >= 1 and --factor >= 2"; return false; }
  if (o->compare_profiler > 0 && o->comms != 1) { *error = "--compare-profiler needs --comms 1 (the mask is process-wide)"; return false; }
  if (o->rank >= o->ranks) { *error = "--rank must be < --ranks"; return false; }
  if (o->rank >= 0 && o->root.empty()) { *error = "--rank needs --root HOST:PORT"; return false; }
  return true;
}

}  // namespace ncclscope::sim

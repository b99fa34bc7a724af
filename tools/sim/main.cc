// ncclscope-sim entry point: the launcher (starts N rank processes like torchrun, hosts the rendezvous,
// watches them, ends the job on a kill or a hang with a report and a non-zero exit) or, with --rank/--root or
// when started by the launcher, one rank process.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "options.h"
#include "rank_job.h"
#include "strict_number.h"

using namespace ncclscope::sim;

namespace {

constexpr const char* kRootEnv = "NCCLSCOPE_SIM_ROOT";

// SIGUSR1 to the launcher brings --timeout forward: the job is ended at once as at its timeout (same report, same
// exit status). A test of a hang then waits for what it checks (stall dumps, a stopped rank) with a generous
// --timeout and ends the job when it has seen it, instead of guessing a --timeout by which a loaded host has it.
volatile sig_atomic_t g_timeout_now = 0;
void TimeoutNow(int) { g_timeout_now = 1; }

std::string Describe(int status) {
  if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "ended";
}

int Launch(const Options& o) {
  RendezvousServer server;
  std::string addr = server.Start("127.0.0.1", 0);
  if (addr.empty()) {
    fprintf(stderr, "ncclscope-sim: cannot start the rendezvous server\n");
    return 2;
  }
  std::vector<pid_t> pids(o.ranks, -1);
  std::vector<int> status(o.ranks, 0);
  std::vector<bool> ended(o.ranks, false);
  std::vector<int> stopped(o.ranks, 0);  // the signal that stopped a rank (--freeze: SIGSTOP) until continued
  std::string port = addr.substr(addr.rfind(':') + 1);
  const pid_t launcher = getpid();
  signal(SIGUSR1, TimeoutNow);  // before the ranks exist; their exec restores the default
  for (int r = 0; r < o.ranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      // A rank never outlives its launcher (killed by a test harness or a user's Ctrl-C).
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != launcher) _exit(1);
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(o.ranks).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(o.ranks).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", port.c_str(), 1);
      setenv(kRootEnv, addr.c_str(), 1);
      std::vector<char*> argv;
      for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv("/proc/self/exe", argv.data());
      perror("ncclscope-sim: execv");
      _exit(127);
    }
    pids[r] = pid;
  }
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration<double>(o.timeout_s);
  bool timed_out = false;
  int first_failed = -1;
  Clock::time_point failed_at;
  int left = o.ranks;
  // After a failure the survivors should see it through the net plugin within a few seconds (or hold it for
  // --hold-on-error S); a stuck one is ended like a hang.
  const auto stuck_cutoff = std::chrono::duration<double>(std::max(15.0, o.hold_on_error_s + 5));
  while (left > 0) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG | WUNTRACED | WCONTINUED);
    if (p > 0) {
      for (int r = 0; r < o.ranks; ++r) {
        if (pids[r] == p && (WIFSTOPPED(st) || WIFCONTINUED(st))) {
          // Not an end: a stopped process (--freeze) stays until continued or killed.
          stopped[r] = WIFSTOPPED(st) ? WSTOPSIG(st) : 0;
          if (stopped[r] != 0) {
            fprintf(stderr, "ncclscope-sim: rank %d stopped by signal %d (%s)\n", r, WSTOPSIG(st),
                    strsignal(WSTOPSIG(st)));
          }
        } else if (pids[r] == p) {
          stopped[r] = 0;
          ended[r] = true;
          status[r] = st;
          --left;
          bool bad = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
          if (bad && first_failed < 0) {
            first_failed = r;
            failed_at = Clock::now();
            fprintf(stderr, "ncclscope-sim: rank %d %s\n", r, Describe(st).c_str());
          }
        }
      }
      continue;
    }
    auto now = Clock::now();
    bool stuck_after_failure = first_failed >= 0 && now - failed_at > stuck_cutoff;
    if (now > deadline || g_timeout_now || stuck_after_failure) {
      timed_out = now > deadline || g_timeout_now;
      double waited = std::chrono::duration<double>(now - start).count();
      fprintf(stderr, "ncclscope-sim: %s after %.1f s%s: ending ranks",
              timed_out ? "TIMEOUT (job hung)" : "ranks stuck after a failure", waited,
              g_timeout_now && now <= deadline ? " (SIGUSR1: --timeout brought forward)" : "");
      for (int r = 0; r < o.ranks; ++r) if (!ended[r]) fprintf(stderr, " %d", r);
      fprintf(stderr, "\n");
      // A stopped rank (--freeze) leaves SIGTERM pending until continued; SIGKILL ends it all the same.
      for (int r = 0; r < o.ranks; ++r) if (!ended[r]) kill(pids[r], SIGTERM);
      usleep(500000);
      for (int r = 0; r < o.ranks; ++r) if (!ended[r]) kill(pids[r], SIGKILL);
      for (int r = 0; r < o.ranks; ++r) {
        if (!ended[r]) {
          waitpid(pids[r], &status[r], 0);
          ended[r] = true;
        }
      }
      break;
    }
    usleep(20000);
  }
  server.Stop();
  // The job's verdict.
  bool all_ok = true;
  for (int r = 0; r < o.ranks; ++r) all_ok &= WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0;
  if (all_ok && !timed_out) {
    if (o.expect_hang) {
      fprintf(stderr, "ncclscope-sim: --expect-hang given but the job completed\n");
      return 1;
    }
    return 0;
  }
  fprintf(stderr, "ncclscope-sim: job summary:\n");
  for (int r = 0; r < o.ranks; ++r) {
    std::string why = Describe(status[r]);
    if (o.kill.rank == r) why += "  <- --kill " + std::to_string(r) + "@" + std::to_string(o.kill.value);
    if (o.hang.rank == r) why += "  <- --hang " + std::to_string(r) + "@" + std::to_string(o.hang.value);
    if (o.mismatch.rank == r) why += "  <- --mismatch " + std::to_string(r) + "@" + std::to_string(o.mismatch.value);
    if (o.freeze.rank == r) why += "  <- --freeze " + std::to_string(r) + "@" + std::to_string(o.freeze.value);
    if (o.stuck_kernel.rank == r) {
      why += "  <- --stuck-kernel " + std::to_string(r) + "@" + std::to_string(o.stuck_kernel.value);
    }
    if (stopped[r] != 0) why += " (stopped by signal " + std::to_string(stopped[r]) + " until the launcher's SIGKILL)";
    if (WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 3) why += " (communicator error, see its log)";
    fprintf(stderr, "ncclscope-sim:   rank %d: %s\n", r, why.c_str());
  }
  if (timed_out) {
    if (o.expect_hang) {
      fprintf(stderr, "ncclscope-sim: hang observed as expected (--expect-hang)\n");
      return 0;
    }
    return 4;
  }
  if (o.kill.rank >= 0) return 3;
  // Set-up failures (plugin not found, init failed) everywhere: exit 2 like a usage error.
  bool all_setup = true;
  for (int r = 0; r < o.ranks; ++r) all_setup &= WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 2;
  return all_setup ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool help = false;
  std::string error;
  if (!ParseOptions(argc, argv, &o, &help, &error)) {
    fprintf(stderr, "ncclscope-sim: %s (try --help)\n", error.c_str());
    return 2;
  }
  if (help) {
    printf("%s", Usage());
    return 0;
  }
  if (o.version) {
    printf("ncclscope-sim %s\n", NCCLSCOPE_VERSION);
    return 0;
  }
  signal(SIGPIPE, SIG_IGN);
  if (const char* root = getenv(kRootEnv)) {
    // Set by the launcher for each rank it starts.
    const char* r = getenv("RANK");
    int rank = 0;
    std::string why;
    if (r != nullptr && !ParseInteger(r, 0, o.ranks - 1, &rank, &why)) {
      fprintf(stderr, "ncclscope-sim: bad RANK '%s' in the environment: %s\n", r, why.c_str());
      return 2;
    }
    return RunRank(o, rank, root);
  }
  if (o.rank >= 0) {
    // One rank per invocation: rank 0 hosts the rendezvous at --root.
    RendezvousServer server;
    if (o.rank == 0) {
      std::string host, why;
      int port = 0;
      if (!SplitRoot(o.root, &host, &port, &why) || server.Start(host, port).empty()) {
        fprintf(stderr, "ncclscope-sim: cannot listen on %s\n", o.root.c_str());
        return 2;
      }
    }
    int rc = RunRank(o, o.rank, o.root);
    fflush(stdout);
    _exit(rc);  // skip destructors of a server other ranks may still talk to
  }
  return Launch(o);
}

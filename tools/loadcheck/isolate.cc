#include "isolate.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ncclscope::loadcheck {
namespace {

using Clock = std::chrono::steady_clock;

// Lines on the pipe: "@<stage>" as the child goes, "=<json>" once at the end.
void WriteLine(int fd, char kind, const std::string& text) {
  std::string line = kind + text + "\n";
  for (size_t off = 0; off < line.size();) {
    const ssize_t n = ::write(fd, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone: nothing to tell
    off += static_cast<size_t>(n);
  }
}

void Parse(const std::string& buf, Isolated* out) {
  for (size_t start = 0; start < buf.size();) {
    size_t end = buf.find('\n', start);
    if (end == std::string::npos) break;  // a line cut by the child's death
    if (buf[start] == '@') out->stage = buf.substr(start + 1, end - start - 1);
    if (buf[start] == '=') {
      out->has_result = true;
      out->result = buf.substr(start + 1, end - start - 1);
    }
    start = end + 1;
  }
}

int MsLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

}  // namespace

void Reporter::Stage(const std::string& what) const { WriteLine(fd_, '@', what); }
void Reporter::Result(const std::string& json_line) const { WriteLine(fd_, '=', json_line); }

std::string SignalName(int sig) {
  static const struct { int sig; const char* name; } kNames[] = {
      {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGABRT, "SIGABRT"}, {SIGFPE, "SIGFPE"}, {SIGILL, "SIGILL"},
      {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"}, {SIGPIPE, "SIGPIPE"},
      {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGHUP, "SIGHUP"}};
  std::string name = "signal " + std::to_string(sig);
  for (const auto& n : kNames) {
    if (n.sig == sig) name = n.name;
  }
  const char* text = strsignal(sig);
  return text != nullptr ? name + " (" + text + ")" : name;
}

Isolated RunIsolated(double timeout_s, const std::function<int(const Reporter&)>& check) {
  Isolated out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out.error = std::string("pipe: ") + std::strerror(errno);
    return out;
  }
  // Never blocks on the pipe: something the plugin forked may hold its write end after the child is gone.
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  std::fflush(nullptr);  // nothing buffered twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    out.error = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return out;
  }
  if (pid == 0) {
    ::close(fds[0]);
    setvbuf(stdout, nullptr, _IOLBF, 0);  // what it printed before a crash still comes out
    const int rc = check(Reporter(fds[1]));
    std::exit(rc);  // as a job's process ends: the plugin's exit handlers run, and are watched too
  }
  ::close(fds[1]);
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000.0));
  std::string buf;
  int status = 0;
  bool reaped = false;
  for (bool open = true; !reaped;) {
    if (open) {
      pollfd p{fds[0], POLLIN, 0};
      const int ready = ::poll(&p, 1, std::min(MsLeft(deadline), 100));
      if (ready > 0) {
        char chunk[4096];
        const ssize_t n = ::read(fds[0], chunk, sizeof(chunk));
        if (n > 0) buf.append(chunk, static_cast<size_t>(n));
        else if (n == 0 || (errno != EINTR && errno != EAGAIN)) open = false;  // EOF: all writers are gone
      }
    } else {
      ::usleep(10 * 1000);
    }
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) reaped = true;
    if (!reaped && MsLeft(deadline) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      out.kind = Isolated::Kind::kTimeout;
      break;
    }
  }
  // What the pipe still holds after the child's end.
  for (char chunk[4096];;) {
    const ssize_t n = ::read(fds[0], chunk, sizeof(chunk));
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  Parse(buf, &out);
  if (out.kind == Isolated::Kind::kTimeout) return out;
  if (WIFSIGNALED(status)) {
    out.kind = Isolated::Kind::kSignal;
    out.signal = WTERMSIG(status);
  } else {
    out.exit_code = WEXITSTATUS(status);
    out.kind = out.has_result ? Isolated::Kind::kFinished : Isolated::Kind::kExit;
  }
  return out;
}

}  // namespace ncclscope::loadcheck

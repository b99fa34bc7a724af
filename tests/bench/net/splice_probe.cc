// splice_probe: would sending without the sender's copy make loopback TCP faster on this host? Per run, in
// fresh processes and interleaved: one blocking socket pair moving N-byte messages with send(), and one
// moving them with vmsplice() + splice() (the sender's pages go to the socket by reference, so on loopback
// the receiver's copy is the only one). Both keep 4 messages in flight and the receiver acknowledges each
// message with one byte: a spliced buffer may be rewritten only once the receiver has read it, so a
// transport using splice would need that acknowledgement too. Prints min / median / max GB/s per size.
// Usage: splice_probe [RUNS] [BYTES_PER_RUN]   (defaults 10 and 2 GiB; sizes 1, 16 and 64 MiB)
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "loopback_listener.h"

namespace {

constexpr int kInFlight = 4;

[[noreturn]] void Die(const char* what) {
  perror(what);
  exit(2);
}

void SendAll(int fd, const char* p, size_t n, bool use_splice, int pipe_r, int pipe_w, size_t pipe_bytes) {
  size_t off = 0;
  while (off < n) {
    if (!use_splice) {
      ssize_t m = send(fd, p + off, std::min<size_t>(n - off, 1 << 20), 0);
      if (m <= 0) Die("send");
      off += static_cast<size_t>(m);
      continue;
    }
    iovec v{const_cast<char*>(p + off), std::min(n - off, pipe_bytes)};
    ssize_t in = vmsplice(pipe_w, &v, 1, 0);
    if (in <= 0) Die("vmsplice");
    for (ssize_t left = in; left > 0;) {
      ssize_t m = splice(pipe_r, nullptr, fd, nullptr, static_cast<size_t>(left), SPLICE_F_MORE);
      if (m <= 0) Die("splice");
      left -= m;
    }
    off += static_cast<size_t>(in);
  }
}

void Sender(sockaddr_in addr, size_t msg, int iters, bool use_splice) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Die("connect");
  std::vector<char> buf(msg * kInFlight, 1);
  int p[2];
  if (pipe(p) != 0) Die("pipe");
  int pipe_bytes = fcntl(p[1], F_SETPIPE_SZ, 1 << 20);  // fs.pipe-max-size: 1 MiB unless raised
  if (pipe_bytes < 0) pipe_bytes = fcntl(p[1], F_GETPIPE_SZ);
  char ack;
  for (int i = 0; i < iters; ++i) {
    if (i >= kInFlight && recv(fd, &ack, 1, MSG_WAITALL) != 1) Die("recv ack");  // buffer i % kInFlight free
    SendAll(fd, buf.data() + (i % kInFlight) * msg, msg, use_splice, p[0], p[1], static_cast<size_t>(pipe_bytes));
  }
  for (int i = 0; i < std::min(iters, kInFlight); ++i) {
    if (recv(fd, &ack, 1, MSG_WAITALL) != 1) Die("recv ack");
  }
  _exit(0);
}

double OneRun(size_t msg, size_t bytes, bool use_splice) {
  sockaddr_in addr;
  const int ls = ncclscope::bench::LoopbackListener(&addr);
  if (ls < 0) Die("listen");
  const int iters = static_cast<int>(std::max<size_t>(bytes / msg, kInFlight));
  pid_t child = fork();
  if (child == 0) Sender(addr, msg, iters, use_splice);
  int fd = accept(ls, nullptr, nullptr);
  if (fd < 0) Die("accept");
  std::vector<char> buf(msg);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    for (size_t got = 0; got < msg;) {
      ssize_t n = recv(fd, buf.data() + got, msg - got, 0);
      if (n <= 0) Die("recv");
      got += static_cast<size_t>(n);
    }
    const char ack = 0;
    if (send(fd, &ack, 1, 0) != 1) Die("send ack");
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int status = 0;
  waitpid(child, &status, 0);
  close(fd);
  close(ls);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "splice_probe: the sending process failed\n");
    exit(2);
  }
  return static_cast<double>(msg) * iters / secs / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? atoi(argv[1]) : 10;
  const size_t bytes = argc > 2 ? strtoull(argv[2], nullptr, 0) : size_t{2} << 30;
  if (runs < 1 || bytes == 0) {
    fprintf(stderr, "usage: splice_probe [RUNS >= 1] [BYTES_PER_RUN > 0]\n");
    return 2;
  }
  printf("splice_probe: loopback, %d runs per size, send() and vmsplice()+splice() interleaved, GB/s\n", runs);
  printf("%8s %26s %26s %14s\n", "size", "send min/med/max", "splice min/med/max", "med ratio");
  for (size_t msg : {size_t{1} << 20, size_t{16} << 20, size_t{64} << 20}) {
    std::vector<double> copy, spliced;
    for (int r = 0; r < runs; ++r) {
      copy.push_back(OneRun(msg, bytes, false));
      spliced.push_back(OneRun(msg, bytes, true));
    }
    std::sort(copy.begin(), copy.end());
    std::sort(spliced.begin(), spliced.end());
    auto med = [](const std::vector<double>& v) { return (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2; };
    printf("%5zu MiB %8.2f /%6.2f /%6.2f %8.2f /%6.2f /%6.2f %13.2fx\n", msg >> 20, copy.front(), med(copy),
           copy.back(), spliced.front(), med(spliced), spliced.back(), med(spliced) / med(copy));
  }
  return 0;
}

// Bootstrap between rank processes over loopback (or any) TCP of the sim's own, independent of the net
// plugin: a RendezvousServer collects keyed all-gather rounds (connect handles, barriers, timing results),
// and each communicator owns one BootstrapClient connection. Thread-safety: the server serves any number of
// connections from its own threads; a BootstrapClient is used by one thread at a time (its communicator's
// init/destroy/app thread) and serialises calls with a mutex.
#ifndef NCCLSCOPE_TOOLS_SIM_BOOTSTRAP_H_
#define NCCLSCOPE_TOOLS_SIM_BOOTSTRAP_H_

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ncclscope::sim {

class RendezvousServer {
 public:
  ~RendezvousServer();
  // Listens on host:port (port 0 = any); returns "host:port" actually bound, or "" on failure.
  std::string Start(const std::string& host, int port);
  void Stop();

 private:
  struct Round {
    int expected = 0;
    int have = 0;
    std::vector<std::string> data;
    std::vector<int> fds;
  };
  void AcceptLoop();
  void Serve(int fd);
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<int> conn_fds_;
  std::map<std::string, Round> rounds_;
};

class BootstrapClient {
 public:
  ~BootstrapClient();
  // Connects, retrying for up to timeout_s (the server may start later).
  bool Connect(const std::string& addr, double timeout_s, std::string* error);
  // Every one of `nranks` callers with the same key contributes `mine`; returns all contributions by rank.
  bool AllGather(const std::string& key, int nranks, int rank, const std::string& mine,
                 std::vector<std::string>* out);
  bool Barrier(const std::string& key, int nranks, int rank);

 private:
  int fd_ = -1;
  std::mutex mu_;
};

// A random 64-bit value for unique ids.
uint64_t RandomU64();

}  // namespace ncclscope::sim

#endif  // NCCLSCOPE_TOOLS_SIM_BOOTSTRAP_H_

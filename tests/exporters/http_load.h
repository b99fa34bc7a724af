// Misbehaving HTTP clients over real loopback sockets, for the metrics server's tests and benchmark:
// raw requests (any bytes, answered or not), and a background load of slow clients (one byte of a
// never-ending request header per interval) and idle ones (connected, silent).
#ifndef NCCLSCOPE_TESTS_EXPORTERS_HTTP_LOAD_H_
#define NCCLSCOPE_TESTS_EXPORTERS_HTTP_LOAD_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ncclscope::testing {

// A blocking TCP connection to 127.0.0.1:port, or -1.
// rcvbuf > 0: the client's receive buffer, set before connecting (it bounds what a peer can push unread).
int ConnectLoopback(int port, int rcvbuf = 0);

// Sends `request` as is and reads until the server closes (or `timeout`). Returns the raw response.
std::string RawRequest(int port, const std::string& request,
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

// Reads from `fd` until the server closes it (or `timeout`). Returns what came.
std::string ReadUntilClosed(int fd, std::chrono::milliseconds timeout);

// The status code of a raw response ("HTTP/1.0 200 OK…" -> 200), or -1.
int StatusOf(const std::string& response);

// Waits up to `timeout` for the server to close `fd` (EOF or reset, reading and discarding whatever
// comes first). True when it did.
bool WaitClosedByPeer(int fd, std::chrono::milliseconds timeout);

// Keeps `slow` + `idle` connections open from a background thread until destroyed.
class ClientLoad {
 public:
  // With `reconnect`, a connection the server drops is replaced at once (a constant load for the
  // benchmark); without, it stays closed and counts in dropped().
  ClientLoad(int port, int slow, int idle, std::chrono::milliseconds interval, bool reconnect);
  ~ClientLoad();
  ClientLoad(const ClientLoad&) = delete;
  ClientLoad& operator=(const ClientLoad&) = delete;

  int dropped() const { return dropped_.load(); }  // connections the server has closed so far
  int open() const { return open_.load(); }

 private:
  struct Client {
    int fd = -1;
    bool slow = false;
    size_t sent = 0;
  };
  void Drive();
  bool Connect(Client* c);

  const int port_;
  const std::chrono::milliseconds interval_;
  const bool reconnect_;
  std::vector<Client> clients_;
  std::atomic<int> dropped_{0};
  std::atomic<int> open_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ncclscope::testing

#endif  // NCCLSCOPE_TESTS_EXPORTERS_HTTP_LOAD_H_

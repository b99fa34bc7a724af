#include "exporters/http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "common/gzip_member.h"
#include "exporters/http/basic_auth.h"
#include "exporters/http/media_types.h"
#include "exporters/http/tls.h"
#include "socket/socket_util.h"

namespace ncclscope {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxHeaderBytes = 8192;
// After the response, how long we wait for the client to close first: closing a socket that still holds
// unread request bytes (a POST body, pipelined junk) sends a reset, which can discard the response
// before the client has read it.
constexpr auto kLingerAfterResponse = std::chrono::milliseconds(1000);
// accept() out of descriptors leaves the listener readable; look at it again only after this pause
// instead of spinning.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// A response is reused for requests of the same path within this time: a flood of connections costs one
// collection and one copy of the body, not one each (64 clients that never read held 64 copies).
constexpr auto kReuse = std::chrono::milliseconds(250);

// The longest a request waits for the password verifier (a flood fills its queue); then it gets a 429.
constexpr auto kAuthWaitMax = std::chrono::milliseconds(5000);
// How long a response written after a deadline (the 429 above) may take to go out.
constexpr auto kLateResponse = std::chrono::milliseconds(1000);

// Reads per readiness event, so one client streaming data cannot keep the loop from the others.
constexpr int kReadsPerEvent = 16;
// How long Stop() waits for a certificate reload in progress before leaving it to finish on its own.
constexpr auto kReloadStopBound = std::chrono::milliseconds(50);

// A kept-alive connection answers at most this many requests, then closes: a client cannot hold a slot forever.
constexpr int kMaxRequestsPerConnection = 1000;
// Bodies shorter than this are sent plain even to a client that accepts gzip: the gzip header costs more.
constexpr size_t kGzipMinBytes = 256;

// kHandshake: TLS only. kAuthWait: the request is complete and its credentials are with the verifier.
// kIdle: a kept-alive connection between requests.
enum class Phase { kHandshake, kReading, kAuthWait, kWriting, kLingering, kIdle };

// What a request asked for beyond its path: its HTTP version and headers.
struct Negotiation {
  bool http11 = false;
  bool keep_alive = false;  // the client may send another request on the connection
  bool gzip = false;        // Accept-Encoding allows gzip
  std::string accept;
};

// A response ready to send, shared by the clients served within kReuse.
struct Prepared {
  std::string text;         // status line, headers and body
  bool keep_alive = false;  // the connection waits for another request after it (else it closes)
};
using PreparedPtr = std::shared_ptr<const Prepared>;

struct Connection {
  int fd = -1;
  Clock::time_point accepted;  // of the connection, then of each kept-alive request's first byte
  Clock::time_point deadline;
  Phase phase = Phase::kReading;
  std::string in;   // the request received so far
  PreparedPtr out;  // the response
  size_t sent = 0;  // bytes of `out` already sent
  std::unique_ptr<TlsSession> tls;  // null: plain HTTP
  uint64_t ticket = 0;              // kAuthWait: the verifier's ticket
  std::string method, path;         // kAuthWait: the request to serve once allowed
  Negotiation asked;                // kAuthWait, kWriting: what the request negotiated
  int served = 0;                   // requests answered on this connection
};

void CloseConnection(int fd) {
  shutdown(fd, SHUT_RDWR);
  close(fd);
}

// Offset just past the blank line that ends the header ("\r\n\r\n", "\n\n" or a mix), searching from
// `from`, or npos.
size_t HeaderEnd(const std::string& s, size_t from) {
  for (size_t i = s.find('\n', from); i != std::string::npos; i = s.find('\n', i + 1)) {
    size_t j = i + 1;
    if (j < s.size() && s[j] == '\r') ++j;
    if (j < s.size() && s[j] == '\n') return j + 1;
  }
  return std::string::npos;
}

bool IsTokenChar(char c) {  // RFC 9110 tchar
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool IsVisible(char c) { return c > 0x20 && c < 0x7f; }

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A request line can only hold printable ASCII and spaces (and the CR before its LF). Lets binary junk
// (a TLS hello on the plain port) be refused at its first byte instead of at the deadline.
bool PlausibleLinePrefix(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\r' && i + 1 == s.size()) continue;
    if (c != ' ' && !IsVisible(c)) return false;
  }
  return true;
}

// Splits "METHOD SP target SP HTTP/d.d" (no CR, no LF). False when malformed.
bool ParseRequestLine(std::string_view line, std::string_view* method, std::string_view* path) {
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return false;
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) return false;
  *method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (method->empty() || !std::all_of(method->begin(), method->end(), IsTokenChar)) return false;
  if (target.empty() || !std::all_of(target.begin(), target.end(), IsVisible)) return false;
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !IsDigit(version[5]) || version[6] != '.' ||
      !IsDigit(version[7])) {
    return false;
  }
  // Absolute form (as sent to proxies): keep the path.
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.substr(0, scheme.size()) == scheme) {
      const size_t slash = target.find('/', scheme.size());
      target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
    }
  }
  if (target[0] != '/' && target != "*") return false;
  *path = target.substr(0, target.find('?'));
  return true;
}

// The status line, headers and (unless HEAD) body. `extra_headers` are whole "Name: value\r\n" lines.
std::string Response(const char* status, std::string_view content_type, const std::string& body, bool with_body,
                     const Negotiation& asked, std::string_view extra_headers) {
  std::string out;
  out.reserve(256 + (with_body ? body.size() : 0));
  out.append(asked.http11 ? "HTTP/1.1 " : "HTTP/1.0 ").append(status);
  out.append("\r\nContent-Type: ").append(content_type);
  out.append("\r\nContent-Length: ").append(std::to_string(body.size())).append("\r\n");
  out.append(extra_headers);
  if (!asked.keep_alive) out.append("Connection: close\r\n");
  out.append("\r\n");
  if (with_body) out += body;
  return out;
}

// The value of header `name` (lower case) in the header block `h` (after the request line), or "".
std::string_view HeaderValue(std::string_view h, std::string_view name) {
  size_t pos = 0;
  while (pos < h.size()) {
    size_t eol = h.find('\n', pos);
    if (eol == std::string_view::npos) eol = h.size();
    std::string_view line = h.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t colon = line.find(':');
    if (colon != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < colon && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(line[i])) == name[i];
    }
    if (!same) continue;
    std::string_view v = line.substr(colon + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    return v;
  }
  return {};
}

constexpr const char* kAuthenticate = "WWW-Authenticate: Basic realm=\"ncclscope\"\r\n";

// The poll() loop of one server: owns every client connection.
class EventLoop {
 public:
  EventLoop(int listen_fd, int stop_fd, const HttpServer::Handler& handler, const HttpServer::Options& options)
      : listen_fd_(listen_fd),
        stop_fd_(stop_fd),
        handler_(handler),
        options_(options),
        max_connections_(static_cast<size_t>(std::max(1, options.max_connections))),
        tls_(options.tls.get()),
        auth_(options.auth.get()) {}

  ~EventLoop() {
    for (Connection& c : conns_) CloseConnection(c.fd);
  }

  void Run() {
    std::vector<pollfd> fds;
    while (true) {
      Clock::time_point now = Clock::now();
      ExpireDeadlines(now);
      fds.clear();
      fds.push_back({stop_fd_, POLLIN, 0});
      fds.push_back({listen_fd_, static_cast<short>(now >= accept_paused_until_ ? POLLIN : 0), 0});
      const size_t base = auth_ != nullptr ? 3 : 2;
      if (auth_ != nullptr) fds.push_back({auth_->ready_fd(), POLLIN, 0});
      for (const Connection& c : conns_) fds.push_back({c.fd, Events(c), 0});
      const int n = poll(fds.data(), fds.size(), PollTimeoutMs(now));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || fds[0].revents != 0) return;  // Stop(), or poll itself failed

      now = Clock::now();
      // fds[base + i] belongs to conns_[i]; new connections are appended only after this pass.
      size_t kept = 0;
      for (size_t i = 0; i < conns_.size(); ++i) {
        const short revents = fds[base + i].revents;
        bool open = true;
        if (revents & (POLLERR | POLLNVAL)) {
          open = false;
        } else if (revents != 0) {
          switch (conns_[i].phase) {
            case Phase::kWriting: open = OnWritable(conns_[i], now); break;
            case Phase::kAuthWait: open = false; break;  // POLLHUP: the client is gone
            default: open = OnInput(conns_[i], now); break;
          }
        }
        if (open) {
          if (kept != i) conns_[kept] = std::move(conns_[i]);
          ++kept;
        } else {
          Drop(conns_[i]);
        }
      }
      conns_.resize(kept);
      if (auth_ != nullptr && (fds[2].revents & POLLIN)) OnAuthResults(now);
      if (fds[1].revents & POLLIN) Accept(Clock::now());  // a slow pass above must not shorten their deadline
    }
  }

 private:
  // The poll events a connection waits for: TLS may need to write while we read, or read while we write.
  static short Events(const Connection& c) {
    if (c.phase == Phase::kAuthWait) return 0;
    if (c.phase == Phase::kLingering) return POLLIN;
    if (c.tls != nullptr && c.tls->want() != 0) return c.tls->want();
    return c.phase == Phase::kWriting ? POLLOUT : POLLIN;
  }

  // recv()/send() for plain and TLS connections alike: > 0 bytes, 0 at the end of the stream, -1 with
  // errno EAGAIN to wait for Events(c), -1 with another errno when the connection failed.
  static ssize_t Receive(Connection& c, char* buf, size_t n) {
    if (c.tls == nullptr || c.phase == Phase::kLingering) return recv(c.fd, buf, n, 0);
    size_t got = 0;
    switch (c.tls->Read(buf, n, &got)) {
      case TlsSession::Io::kOk: return static_cast<ssize_t>(got);
      case TlsSession::Io::kWant: errno = EAGAIN; return -1;
      case TlsSession::Io::kClosed: return 0;
      default: errno = ECONNRESET; return -1;
    }
  }

  static ssize_t Send(Connection& c, const char* data, size_t n) {
    if (c.tls == nullptr) return send(c.fd, data, n, MSG_NOSIGNAL);
    size_t wrote = 0;
    switch (c.tls->Write(data, n, &wrote)) {
      case TlsSession::Io::kOk: return static_cast<ssize_t>(wrote);
      case TlsSession::Io::kWant: errno = EAGAIN; return -1;
      default: errno = ECONNRESET; return -1;
    }
  }

  // What arrived on a connection that is not writing: a TLS handshake step, a request, or a lingering client's
  // last bytes. False: close it.
  bool OnInput(Connection& c, Clock::time_point now) {
    return c.phase == Phase::kHandshake ? OnHandshake(c, now) : OnReadable(c, now);
  }

  // TLS handshake step. A client that speaks plain HTTP to the TLS port gets a plain 400 (a TLS client
  // starts with a handshake record, 0x16; a request line with a letter).
  bool OnHandshake(Connection& c, Clock::time_point now) {
    if (c.tls->want() == 0) {  // nothing received yet
      char first = 0;
      const ssize_t n = recv(c.fd, &first, 1, MSG_PEEK);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      if (first >= 'A' && first <= 'Z') {
        c.tls.reset();
        c.out = Prepare(Response("400 Bad Request", "text/plain", "Client sent an HTTP request to an HTTPS server.\n",
                                 true, Negotiation{}, options_.headers), false);
        c.phase = Phase::kWriting;
        c.deadline = c.accepted + options_.total_timeout;
        return OnWritable(c, now);
      }
    }
    switch (c.tls->Handshake()) {
      case TlsSession::Io::kOk:
        c.phase = Phase::kReading;
        return OnReadable(c, now);  // the request may have come with the handshake's last flight
      case TlsSession::Io::kWant:
        return true;
      default:
        return false;
    }
  }

  // The verifier's answers: each waiting connection is served, or gets its 401.
  void OnAuthResults(Clock::time_point now) {
    results_.clear();
    auth_->TakeResults(&results_, now);
    for (const auto& [ticket, allowed] : results_) {
      auto it = std::find_if(conns_.begin(), conns_.end(), [t = ticket](const Connection& c) {
        return c.phase == Phase::kAuthWait && c.ticket == t;
      });
      if (it == conns_.end()) continue;  // closed meanwhile (deadline, eviction, client gone)
      it->out = allowed ? Respond(it->method, it->path, it->asked, now)
                        : Error("401 Unauthorized", kAuthenticate);
      it->phase = Phase::kWriting;
      if (!OnWritable(*it, now)) {
        Drop(*it);
        conns_.erase(it);
      }
    }
  }

  // Closes a connection; one waiting for the verifier leaves its queue, unhashed.
  void Drop(Connection& c) {
    if (c.phase == Phase::kAuthWait) auth_->Cancel(c.ticket);
    CloseConnection(c.fd);
  }

  void ExpireDeadlines(Clock::time_point now) {
    std::erase_if(conns_, [this, now](Connection& c) {
      if (now < c.deadline) return false;
      // A request that arrived in time but was not yet read (this thread held off the CPU on a loaded
      // host, or busy with a slow collection) is served, not hung up on: that hang-up is a failed scrape,
      // a false "target down". Only a client still short of a full request is dropped.
      const bool unread = c.phase == Phase::kReading || c.phase == Phase::kHandshake || c.phase == Phase::kIdle;
      if (unread && OnInput(c, now) && now < c.deadline) return false;
      if (c.phase == Phase::kAuthWait) {  // the verifier is swamped: say so rather than hang up
        auth_->Cancel(c.ticket);
        c.out = Error("429 Too Many Requests", "Retry-After: 1\r\n");
        c.phase = Phase::kWriting;
        c.deadline = now + kLateResponse;
        if (OnWritable(c, now)) return false;
      }
      CloseConnection(c.fd);
      return true;
    });
  }

  int PollTimeoutMs(Clock::time_point now) const {
    Clock::time_point wake = Clock::time_point::max();
    for (const Connection& c : conns_) wake = std::min(wake, c.deadline);
    if (now < accept_paused_until_) wake = std::min(wake, accept_paused_until_);
    if (wake == Clock::time_point::max()) return -1;
    // Round up, so we never wake a hair before a deadline and spin.
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(wake - now).count();
    return static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
  }

  void Accept(Clock::time_point now) {
    for (size_t k = 0; k < max_connections_; ++k) {
      int fd = -1, err = 0;
      const sock::AcceptResult r = sock::Accept(listen_fd_, &fd, nullptr, &err);
      if (r != sock::AcceptResult::kAccepted) {
        if (r != sock::AcceptResult::kEmpty) accept_paused_until_ = now + kAcceptPause;  // EMFILE…
        return;
      }
      Connection c;
      if (tls_ != nullptr) {
        c.tls = tls_->NewSession(fd);
        if (c.tls == nullptr) {
          CloseConnection(fd);
          continue;
        }
        c.phase = Phase::kHandshake;
      }
      if (conns_.size() >= max_connections_) EvictOne();
      c.fd = fd;
      c.accepted = now;
      c.deadline = now + options_.header_timeout;
      conns_.push_back(std::move(c));
    }
  }

  // Makes room for a new connection: the oldest one not sending a response (idle, reading, lingering),
  // else the oldest of all. conns_ is in accept order.
  void EvictOne() {
    auto victim = std::find_if(conns_.begin(), conns_.end(),
                               [](const Connection& c) { return c.phase != Phase::kWriting; });
    if (victim == conns_.end()) victim = conns_.begin();
    Drop(*victim);
    conns_.erase(victim);
  }

  // Returns false when the connection is to be closed.
  bool OnReadable(Connection& c, Clock::time_point now) {
    char buf[4096];
    for (int reads = 0; reads < kReadsPerEvent; ++reads) {
      const ssize_t n = Receive(c, buf, sizeof(buf));
      if (n == 0) return false;  // the client closed: before finishing its request, or after our response
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;
      }
      if (c.phase == Phase::kLingering) continue;  // whatever follows the request is discarded
      if (c.phase == Phase::kIdle) BeginRequest(c, now);
      const size_t scan_from = c.in.size() >= 2 ? c.in.size() - 2 : 0;
      c.in.append(buf, static_cast<size_t>(n));
      if (!OnRequestBytes(c, scan_from)) {
        if (c.phase != Phase::kAuthWait) continue;
        Park(c, now);
        return true;
      }
      c.phase = Phase::kWriting;
      c.deadline = c.accepted + options_.total_timeout;
      return OnWritable(c, now);
    }
    return true;
  }

  // A kept-alive connection's next request starts: its deadlines count from now.
  void BeginRequest(Connection& c, Clock::time_point now) const {
    c.phase = Phase::kReading;
    c.accepted = now;
    c.deadline = now + options_.header_timeout;
  }

  // Parked until the verifier answers.
  void Park(Connection& c, Clock::time_point now) const {
    c.deadline = std::min(c.accepted + options_.total_timeout, now + kAuthWaitMax);
  }

  // The version and headers of a complete request (`headers`: the lines after the request line).
  Negotiation Negotiate(const Connection& c, std::string_view line, std::string_view method,
                        std::string_view headers) const {
    Negotiation asked;
    asked.http11 = line.size() >= 3 && line.substr(line.size() - 3) >= "1.1";
    const std::string_view length = HeaderValue(headers, "content-length");
    asked.keep_alive = asked.http11 && !ListsToken(HeaderValue(headers, "connection"), "close") &&
                       (method == "GET" || method == "HEAD") && (length.empty() || length == "0") &&
                       HeaderValue(headers, "transfer-encoding").empty() &&
                       c.served + 1 < kMaxRequestsPerConnection;
    asked.gzip = AcceptsGzip(HeaderValue(headers, "accept-encoding"));
    asked.accept = std::string(HeaderValue(headers, "accept"));
    return asked;
  }

  // Looks at the request received so far; true once c.out holds the response.
  // The bytes of a complete request leave c.in; those after it (a pipelined request) stay.
  bool OnRequestBytes(Connection& c, size_t scan_from) {
    c.asked = Negotiation{};
    // A server should ignore at least one empty line before the request line (RFC 9112 2.2); one is
    // skipped, so an empty request ("\r\n\r\n") still gets its 400.
    const size_t start = c.in.compare(0, 2, "\r\n") == 0 ? 2 : c.in.compare(0, 1, "\n") == 0 ? 1 : 0;
    const size_t eol = c.in.find('\n', start);
    std::string_view line(c.in);
    line = line.substr(start, eol == std::string::npos ? std::string_view::npos : eol - start);
    if (!PlausibleLinePrefix(line)) {
      c.out = Error("400 Bad Request");
      return true;
    }
    std::string_view method, path;
    if (eol != std::string::npos) {
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (!ParseRequestLine(line, &method, &path)) {  // refused now, without waiting for the header
        c.out = Error("400 Bad Request");
        return true;
      }
    }
    const size_t end = eol == std::string::npos ? eol : HeaderEnd(c.in, std::max(scan_from, eol));
    if (end == std::string::npos ? c.in.size() > kMaxHeaderBytes : end > kMaxHeaderBytes) {
      c.out = Error("431 Request Header Fields Too Large");
      return true;
    }
    if (end == std::string::npos) return false;
    const std::string_view headers = std::string_view(c.in).substr(eol + 1, end - eol - 1);
    c.asked = Negotiate(c, line, method, headers);
    if (auth_ != nullptr) {
      switch (auth_->Check(HeaderValue(headers, "authorization"), &c.ticket, Clock::now())) {
        case BasicAuth::Verdict::kAllowed:
          break;
        case BasicAuth::Verdict::kDenied:
          c.out = Error("401 Unauthorized", kAuthenticate);
          return true;
        case BasicAuth::Verdict::kLimited:
          c.out = Error("429 Too Many Requests", "Retry-After: 1\r\n");
          return true;
        case BasicAuth::Verdict::kPending:
          c.method = std::string(method);
          c.path = std::string(path);
          c.phase = Phase::kAuthWait;
          c.in.erase(0, end);
          return false;
      }
    }
    c.out = Respond(method, std::string(path), c.asked, Clock::now());
    c.in.erase(0, end);
    return true;
  }

  PreparedPtr Respond(std::string_view method, const std::string& path,
                                             const Negotiation& asked, Clock::time_point now) {
    if (method == "GET" || method == "HEAD") return Serve(path, method == "GET", asked, now);
    return Error("405 Method Not Allowed", "Allow: GET, HEAD\r\n");
  }

  static PreparedPtr Prepare(std::string text, bool keep_alive) {
    return std::make_shared<const Prepared>(Prepared{std::move(text), keep_alive});
  }

  // An error response; the connection closes after it.
  PreparedPtr Error(const char* status, std::string_view extra_headers = "") const {
    return Prepare(Response(status, "text/plain", std::string(status) + "\n", true, Negotiation{},
                            std::string(extra_headers) + options_.headers),
                   false);
  }

  PreparedPtr Serve(const std::string& path, bool with_body, const Negotiation& asked, Clock::time_point now) {
    std::string key = path;
    key.append(1, '\n').append(asked.accept).append(1, '\n');
    key.append(1, "01"[with_body]).append(1, "01"[asked.gzip]).append(1, "01"[asked.http11]);
    key.append(1, "01"[asked.keep_alive]);
    if (cached_ != nullptr && cached_key_ == key && now - cached_at_ < kReuse) return cached_;
    HttpServer::Reply reply;
    try {
      reply = handler_(HttpServer::Request{path, asked.accept});
    } catch (...) {  // an exception must not end the server thread (and the job)
      return Error("500 Internal Server Error");
    }
    std::string headers = "Vary: Accept-Encoding\r\n" + options_.headers;
    if (asked.gzip && reply.body.size() >= kGzipMinBytes) {
      std::string packed;
      if (AppendGzipMember(reply.body, &packed).ok()) {  // else sent plain: zlib out of memory
        reply.body = std::move(packed);
        headers.insert(0, "Content-Encoding: gzip\r\n");
      }
    }
    cached_ = Prepare(Response(reply.found ? "200 OK" : "404 Not Found", reply.content_type, reply.body, with_body,
                               asked, headers),
                      asked.keep_alive);
    cached_key_ = std::move(key);
    cached_at_ = now;
    return cached_;
  }

  enum class Flushed { kAll, kBlocked, kFailed };

  static Flushed Flush(Connection& c) {
    const std::string& text = c.out->text;
    while (c.sent < text.size()) {
      const ssize_t n = Send(c, text.data() + c.sent, text.size() - c.sent);
      if (n > 0) {
        c.sent += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        const bool blocked = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        return blocked ? Flushed::kBlocked : Flushed::kFailed;  // else the client is gone
      }
    }
    return Flushed::kAll;
  }

  // Sends the response; then closes (lingering), waits idle for the next request, or answers the pipelined
  // ones already received, in order (a loop, not recursion: a client may pipeline thousands).
  bool OnWritable(Connection& c, Clock::time_point now) {
    while (true) {
      const Flushed flushed = Flush(c);
      if (flushed != Flushed::kAll) return flushed == Flushed::kBlocked;
      if (!c.out->keep_alive) return Linger(c, now);  // errors close whatever the request asked
      c.out.reset();
      c.sent = 0;
      ++c.served;
      if (c.in.empty()) {
        c.phase = Phase::kIdle;
        c.deadline = now + options_.idle_timeout;
        return true;
      }
      BeginRequest(c, now);
      if (!OnRequestBytes(c, 0)) {
        if (c.phase == Phase::kAuthWait) Park(c, now);
        return true;  // the rest of it is still to come
      }
      c.phase = Phase::kWriting;
      c.deadline = c.accepted + options_.total_timeout;
    }
  }

  bool Linger(Connection& c, Clock::time_point now) {
    if (c.tls != nullptr) c.tls->Shutdown();  // close_notify, best effort
    shutdown(c.fd, SHUT_WR);  // our FIN: the client reads to the end, then closes
    c.out.reset();
    c.in = std::string();
    c.phase = Phase::kLingering;
    c.deadline = std::min(c.accepted + options_.total_timeout, now + kLingerAfterResponse);
    return true;
  }

  const int listen_fd_;
  const int stop_fd_;
  const HttpServer::Handler& handler_;
  const HttpServer::Options options_;
  const size_t max_connections_;
  TlsContext* const tls_;   // owned by options_
  BasicAuth* const auth_;   // owned by options_
  std::vector<std::pair<uint64_t, bool>> results_;
  std::vector<Connection> conns_;  // in accept order, oldest first
  Clock::time_point accept_paused_until_{};
  PreparedPtr cached_;                         // the last response served, for kReuse
  std::string cached_key_;                     // its path and negotiation
  Clock::time_point cached_at_{};
};

}  // namespace

Status HttpServer::Start(const std::string& address, int port, Handler handler, const Options& options) {
  if (thread_.joinable()) return InternalError("metrics server already started");
  address_in_use_ = false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    return InvalidUsage("metrics bind address '" + address + "' is not an IPv4 address");
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return SystemError(std::string("socket: ") + strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, SOMAXCONN) != 0) {
    address_in_use_ = errno == EADDRINUSE;
    Status s = SystemError("bind " + address + ":" + std::to_string(port) + ": " + strerror(errno));
    close(fd);
    return s;
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop < 0) {
    close(fd);
    return SystemError(std::string("eventfd: ") + strerror(errno));
  }
  listen_fd_ = fd;
  stop_fd_ = stop;
  port_ = ntohs(addr.sin_port);
  handler_ = std::move(handler);
  options_ = options;
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "ncclscope-http");
    // OpenSSL writes to the socket with write(), not send(MSG_NOSIGNAL): a client gone mid-response would
    // raise SIGPIPE. Blocked in this thread only, it stays pending here and harms nobody.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    Serve();
  });
  // Certificate reloads read files: on a thread of their own, never on the serving loop.
  if (options_.tls != nullptr) options_.tls->StartReloads(std::chrono::seconds(1));
  return Status::Ok();
}

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  (void)!write(stop_fd_, &one, sizeof(one));
  thread_.join();  // the loop never blocks on a client: it leaves at its next poll()
  if (options_.tls != nullptr) options_.tls->StopReloads(kReloadStopBound);
  close(listen_fd_);
  close(stop_fd_);
  listen_fd_ = stop_fd_ = -1;
  port_ = 0;
  handler_ = nullptr;
  options_ = Options();  // the last reference to the TLS context and the verifier (bounded wait, basic_auth.h)
}

void HttpServer::Serve() { EventLoop(listen_fd_, stop_fd_, handler_, options_).Run(); }

}  // namespace ncclscope

// HTTP basic authentication for the metrics endpoint against bcrypt hashes (basic_auth_users of the web
// config), built so that a flood of wrong passwords neither stalls scrapes nor the job's teardown:
//  - bcrypt is slow on purpose (~100 ms at cost 10, ~400 ms at cost 12 here), so hashes run on one
//    verifier thread behind a bounded queue, never on the server loop: Check() answers at once, or
//    answers kPending and the result comes later through ready_fd();
//  - verified (user, password) pairs are cached as an HMAC-SHA-256 under a random per-process key (never
//    the password), so a scraper pays one hash, not one per scrape; an entry lives cache_ttl after its
//    last use;
//  - an unknown user is hashed against a fake hash of the highest cost in the file, so its answer takes
//    as long as a wrong password's;
//  - a token bucket limits hashes: each queued check takes a token (a right password gives it back), so
//    failures cost at most `failures_per_second` hashes a second after a burst; without a token, or with
//    the queue full (queue_max, or more than max_wait of hashing ahead: a loaded host hashes slower), the
//    answer is kLimited at once (the server answers 429), without hashing.
// libcrypt.so.1 (crypt_rn, with bcrypt: libxcrypt) and libcrypto.so.3 (the cache's HMAC) are opened with
// dlopen by Create(), only when the web config has users; no link-time dependency. Without libcrypto the
// cache is off (every request hashes) and Create() warns.
// Destruction (the server's Stop()) never waits for more than stop_wait for a hash in progress: the
// verifier thread is then left to finish that one hash alone (its state is shared, the plugin stays
// mapped) and exits.
// Thread-safety: Check() and TakeResults() are called by one thread (the server loop).
#ifndef NCCLSCOPE_EXPORTERS_HTTP_BASIC_AUTH_H_
#define NCCLSCOPE_EXPORTERS_HTTP_BASIC_AUTH_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "exporters/http/bcrypt_hash.h"

namespace ncclscope {

class BasicAuth {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    size_t cache_entries = 256;
    std::chrono::seconds cache_ttl{600};
    double burst = 16;               // tokens of the bucket when full
    double failures_per_second = 4;  // refill rate
    size_t queue_max = 8;            // checks waiting for the verifier
    // No check is queued behind more than this much hashing (queue length x the recent hash time).
    std::chrono::milliseconds max_wait{2000};
    std::chrono::milliseconds stop_wait{300};
  };

  enum class Verdict { kAllowed, kDenied, kLimited, kPending };

  struct Stats {
    uint64_t hashes = 0;  // bcrypt computations finished
    uint64_t cache_hits = 0;
    uint64_t limited = 0;  // answered kLimited
    uint64_t denied = 0;   // no or malformed credentials, or a wrong password / unknown user
  };

  struct Shared;  // the state the verifier thread shares (basic_auth.cc)

  // `users`: user -> bcrypt hash, as validated by web_config.
  static Result<std::unique_ptr<BasicAuth>> Create(const std::map<std::string, std::string>& users,
                                                   const Options& options);
  static Result<std::unique_ptr<BasicAuth>> Create(const std::map<std::string, std::string>& users) {
    return Create(users, Options());
  }
  ~BasicAuth();
  BasicAuth(const BasicAuth&) = delete;
  BasicAuth& operator=(const BasicAuth&) = delete;

  // `authorization`: the value of the request's Authorization header ("" when absent). On kPending,
  // *ticket identifies the check among TakeResults()'s answers.
  Verdict Check(std::string_view authorization, uint64_t* ticket, Clock::time_point now);
  // Forgets a pending check whose client is gone: it is not hashed if the verifier has not started it.
  void Cancel(uint64_t ticket);
  // Readable when results are waiting.
  int ready_fd() const;
  // Appends the finished checks: (ticket, allowed). Clears ready_fd.
  void TakeResults(std::vector<std::pair<uint64_t, bool>>* out, Clock::time_point now);

  Stats stats() const;

 private:
  using Digest = std::array<unsigned char, 32>;

  BasicAuth(std::shared_ptr<Shared> shared, const Options& options) : shared_(std::move(shared)), options_(options) {}
  void Refill(Clock::time_point now);

  std::shared_ptr<Shared> shared_;  // with the verifier thread
  const Options options_;
  std::thread verifier_;
  std::string hmac_key_;  // random, per process
  bool cache_on_ = false;
  struct Cached {
    Clock::time_point expires;
  };
  struct DigestHash {
    size_t operator()(const Digest& d) const {
      size_t h;
      static_assert(sizeof(h) <= sizeof(Digest));
      std::memcpy(&h, d.data(), sizeof(h));
      return h;
    }
  };
  std::unordered_map<Digest, Cached, DigestHash> cache_;
  std::unordered_map<uint64_t, Digest> pending_;  // ticket -> digest, to cache on success
  double tokens_ = 0;
  Clock::time_point refilled_{};
  uint64_t next_ticket_ = 1;
  uint64_t cache_hits_ = 0, limited_ = 0, denied_ = 0;
};


// A bcrypt hash of `password` at `cost` ($2b$), through libcrypt; for tests and tools.
Result<std::string> BcryptHash(const std::string& password, int cost);

// The decoded "user:password" of a "Basic <base64>" header value; false when it is not one.
bool ParseBasicCredentials(std::string_view authorization, std::string* user, std::string* password);

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_HTTP_BASIC_AUTH_H_

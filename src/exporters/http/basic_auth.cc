#include "exporters/http/basic_auth.h"

#include <dlfcn.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <mutex>  // std::call_once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/tsan_lock.h"
#include "exporters/http/tls.h"

namespace ncclscope {
namespace {

// libxcrypt's struct crypt_data is 32 KiB; crypt_rn checks the size we pass.
constexpr int kCryptDataSize = 64 * 1024;

struct CryptApi {
  char* (*crypt_rn)(const char* phrase, const char* setting, void* data, int size) = nullptr;
  char* (*crypt_gensalt_rn)(const char* prefix, unsigned long count, const char* rbytes, int nrbytes, char* out,
                            int size) = nullptr;
};

// libcrypt.so.1, opened once per process and never closed.
const CryptApi* LoadCrypt(std::string* error) {
  static CryptApi api;
  static std::string load_error;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = dlopen("libcrypt.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      load_error = std::string("basic auth needs libcrypt.so.1 (libxcrypt): ") + (e ? e : "not found");
      return;
    }
    api.crypt_rn = reinterpret_cast<decltype(api.crypt_rn)>(dlsym(lib, "crypt_rn"));
    api.crypt_gensalt_rn = reinterpret_cast<decltype(api.crypt_gensalt_rn)>(dlsym(lib, "crypt_gensalt_rn"));
    if (api.crypt_rn == nullptr) load_error = "libcrypt.so.1 has no crypt_rn (libxcrypt is needed for bcrypt)";
  });
  if (!load_error.empty()) {
    *error = load_error;
    return nullptr;
  }
  return &api;
}

// Zeroes the whole buffer, not just size(): a moved-from short string keeps its bytes in place.
void Wipe(std::string* s) {
  explicit_bzero(s->data(), s->capacity());
  s->clear();
}

bool SameText(const char* a, const std::string& b) {  // constant time in the length of b
  const size_t n = std::strlen(a);
  unsigned char diff = n == b.size() ? 0 : 1;
  for (size_t i = 0; i < b.size(); ++i)
    diff |= static_cast<unsigned char>(i < n ? a[i] : 0) ^ static_cast<unsigned char>(b[i]);
  return diff == 0;
}

// Whether `password` hashes to `hash`, with `buf` as libcrypt's scratch space.
bool Matches(const CryptApi& api, const std::string& password, const std::string& hash, std::vector<char>* buf) {
  if (!BcryptCanCheck(password)) return false;  // libcrypt would hash a prefix of it
  const char* out = api.crypt_rn(password.c_str(), hash.c_str(), buf->data(), static_cast<int>(buf->size()));
  return out != nullptr && out[0] == '$' && SameText(out, hash);
}


int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool Base64Decode(std::string_view in, std::string* out) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  out->clear();
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const int v = Base64Value(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return bits < 6;  // a lone trailing character cannot be
}

std::string RandomBytes(size_t n) {
  std::string s(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(s.data() + got, n - got, 0);
    if (r > 0)
      got += static_cast<size_t>(r);
    else if (errno != EINTR)
      break;
  }
  return s;
}

// A bcrypt hash no password matches in practice: `prefix_and_cost` ("$2b$12$") and a random salt and hash.
std::string FakeHash(const std::string& prefix_and_cost) {
  static const char kAlphabet[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const std::string random = RandomBytes(53);
  std::string h = prefix_and_cost;
  for (size_t i = 0; i < 53; ++i) {
    const unsigned char r = static_cast<unsigned char>(random[i]);
    // The 22nd salt character and the 31st hash character carry only their top bits: keep them canonical.
    h.push_back(i == 21 || i == 52 ? ".Oeu"[r % 4] : kAlphabet[r % 64]);
  }
  return h;
}

}  // namespace

struct BasicAuth::Shared {
  struct Task {
    uint64_t ticket;
    std::string user;
    std::string password;
  };

  ~Shared() {
    for (Task& t : queue) Wipe(&t.password);
    if (efd >= 0) close(efd);
  }

  // Read-only once the verifier runs.
  const CryptApi* crypt = nullptr;
  std::map<std::string, std::string> users;
  std::string fake_hash;
  int efd = -1;

  absl::Mutex mu;
  absl::CondVar cv;
  std::deque<Task> queue ABSL_GUARDED_BY(mu);
  std::vector<std::pair<uint64_t, bool>> done ABSL_GUARDED_BY(mu);
  bool stop ABSL_GUARDED_BY(mu) = false;
  bool exited ABSL_GUARDED_BY(mu) = false;
  uint64_t hashes ABSL_GUARDED_BY(mu) = 0;
  double hash_ms ABSL_GUARDED_BY(mu) = 0;  // recent time of one hash (moving average), 0 before the first
};

namespace {

void RunVerifier(std::shared_ptr<BasicAuth::Shared> s);

}  // namespace

bool ParseBasicCredentials(std::string_view authorization, std::string* user, std::string* password) {
  std::string_view v = authorization;
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (v.size() < 6) return false;
  for (size_t i = 0; i < 5; ++i) {
    if (std::tolower(static_cast<unsigned char>(v[i])) != "basic"[i]) return false;
  }
  if (v[5] != ' ') return false;
  v.remove_prefix(6);
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  std::string decoded;
  if (!Base64Decode(v, &decoded)) return false;
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) {
    Wipe(&decoded);
    return false;
  }
  *user = decoded.substr(0, colon);
  *password = decoded.substr(colon + 1);
  Wipe(&decoded);
  return true;
}

Result<std::unique_ptr<BasicAuth>> BasicAuth::Create(const std::map<std::string, std::string>& users,
                                                     const Options& options) {
  std::string error;
  const CryptApi* api = LoadCrypt(&error);
  if (api == nullptr) return SystemError(error);
  auto shared = std::make_shared<Shared>();
  shared->crypt = api;
  shared->users = users;
  // The unknown users' hash costs what the dearest real one does. A malformed hash is kept (its user is
  // then refused, as any wrong password) but said once here: it would fail every login without a word.
  std::string cost = "04";
  for (const auto& [user, hash] : users) {
    const Status valid = ValidateBcryptHash(hash);
    if (valid.ok()) {
      cost = std::max(cost, hash.substr(4, 2));  // two digits each
    } else {
      NCCLSCOPE_WARN(subsys::kInit, "metrics endpoint: basic auth user \"%s\": %s; every login as this user will fail",
                     user.c_str(), valid.message().c_str());
    }
  }
  shared->fake_hash = FakeHash("$2b$" + cost + "$");
  // Does this libcrypt do bcrypt? One cheap hash (cost 4) tells.
  std::vector<char> buf(kCryptDataSize);
  const std::string probe = FakeHash("$2b$04$");
  const char* out = api->crypt_rn("probe", probe.c_str(), buf.data(), static_cast<int>(buf.size()));
  if (out == nullptr || out[0] != '$') return SystemError("libcrypt.so.1 does not support bcrypt ($2b$)");
  shared->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (shared->efd < 0) return SystemError(std::string("eventfd: ") + std::strerror(errno));

  std::unique_ptr<BasicAuth> auth(new BasicAuth(shared, options));
  auth->hmac_key_ = RandomBytes(32);
  BasicAuth::Digest probe_digest{};
  auth->cache_on_ = Sha256Hmac(auth->hmac_key_, "probe", &probe_digest);
  if (!auth->cache_on_) {
    NCCLSCOPE_WARN(subsys::kInit,
                   "metrics endpoint: libcrypto.so.3 not found: verified passwords are not cached "
                   "(every request pays one bcrypt hash)");
  }
  auth->tokens_ = options.burst;
  auth->refilled_ = Clock::now();
  auth->verifier_ = std::thread(RunVerifier, shared);
  return auth;
}

BasicAuth::~BasicAuth() {
  bool exited;
  {
    AnnotatedLock lock(&shared_->mu);
    shared_->stop = true;
    shared_->cv.SignalAll();
    // A hash in progress may finish (at most one); past stop_wait the thread is left to finish it alone.
    exited = AnnotatedWaitFor(&shared_->cv, &shared_->mu, &shared_->exited, absl::FromChrono(options_.stop_wait));
  }
  if (exited) {
    verifier_.join();
  } else {
    verifier_.detach();
  }
}

int BasicAuth::ready_fd() const { return shared_->efd; }

void BasicAuth::Cancel(uint64_t ticket) {
  AnnotatedLock lock(&shared_->mu);
  for (auto it = shared_->queue.begin(); it != shared_->queue.end(); ++it) {
    if (it->ticket == ticket) {
      Wipe(&it->password);
      shared_->queue.erase(it);
      pending_.erase(ticket);
      return;
    }
  }
  // Being hashed: its result still comes, and a right password is still cached for the next request (a
  // hash slower than the server's wait would otherwise never let anyone in).
}

void BasicAuth::Refill(Clock::time_point now) {
  const double dt = std::chrono::duration<double>(now - refilled_).count();
  if (dt > 0) {
    tokens_ = std::min(options_.burst, tokens_ + dt * options_.failures_per_second);
    refilled_ = now;
  }
}

BasicAuth::Verdict BasicAuth::Check(std::string_view authorization, uint64_t* ticket, Clock::time_point now) {
  std::string user, password;
  if (!ParseBasicCredentials(authorization, &user, &password)) {
    ++denied_;
    return Verdict::kDenied;
  }
  if (!BcryptCanCheck(password)) {  // no hash could tell it from a prefix of itself: refused, unhashed
    Wipe(&password);
    ++denied_;
    return Verdict::kDenied;
  }
  Digest digest{};
  bool have_digest = false;
  if (cache_on_) {
    std::string keyed = user;
    keyed.push_back('\0');
    keyed += password;
    have_digest = Sha256Hmac(hmac_key_, keyed, &digest);
    Wipe(&keyed);
  }
  if (have_digest) {
    auto it = cache_.find(digest);
    if (it != cache_.end() && now < it->second.expires) {
      it->second.expires = now + options_.cache_ttl;
      ++cache_hits_;
      Wipe(&password);
      return Verdict::kAllowed;
    }
  }
  Refill(now);
  bool queued = false;
  if (tokens_ >= 1) {
    AnnotatedLock lock(&shared_->mu);
    // Room in the queue, and not more than max_wait of hashing ahead of this one (a loaded host makes each
    // hash slower: the queue then holds fewer).
    const double wait_ms = static_cast<double>(shared_->queue.size() + 1) * shared_->hash_ms;
    const bool room = shared_->queue.empty() || (shared_->queue.size() < options_.queue_max &&
                                                 wait_ms <= static_cast<double>(options_.max_wait.count()));
    if (room && !shared_->stop) {
      *ticket = next_ticket_++;
      shared_->queue.push_back({*ticket, std::move(user), std::move(password)});
      queued = true;
    }
  }
  Wipe(&password);
  if (!queued) {
    ++limited_;
    return Verdict::kLimited;
  }
  tokens_ -= 1;
  shared_->cv.SignalAll();
  pending_[*ticket] = have_digest ? digest : Digest{};
  return Verdict::kPending;
}

void BasicAuth::TakeResults(std::vector<std::pair<uint64_t, bool>>* out, Clock::time_point now) {
  uint64_t count = 0;
  (void)!read(shared_->efd, &count, sizeof(count));
  std::vector<std::pair<uint64_t, bool>> done;
  {
    AnnotatedLock lock(&shared_->mu);
    done.swap(shared_->done);
  }
  for (const auto& [ticket, ok] : done) {
    auto it = pending_.find(ticket);
    if (ok) {
      tokens_ = std::min(options_.burst, tokens_ + 1);  // a right password costs no token
      if (cache_on_ && it != pending_.end()) {
        if (cache_.size() >= options_.cache_entries) {
          std::erase_if(cache_, [now](const auto& e) { return e.second.expires <= now; });
          if (cache_.size() >= options_.cache_entries) cache_.erase(cache_.begin());
        }
        cache_[it->second] = Cached{now + options_.cache_ttl};
      }
    } else {
      ++denied_;
    }
    if (it != pending_.end()) pending_.erase(it);
    out->emplace_back(ticket, ok);
  }
}

BasicAuth::Stats BasicAuth::stats() const {
  Stats s;
  {
    AnnotatedLock lock(&shared_->mu);
    s.hashes = shared_->hashes;
  }
  s.cache_hits = cache_hits_;
  s.limited = limited_;
  s.denied = denied_;
  return s;
}

namespace {

void RunVerifier(std::shared_ptr<BasicAuth::Shared> s) {
  pthread_setname_np(pthread_self(), "ncclscope-auth");
  std::vector<char> buf(kCryptDataSize);
  while (true) {
    BasicAuth::Shared::Task task;
    {
      AnnotatedLock lock(&s->mu);
      while (!s->stop && s->queue.empty()) AnnotatedWait(&s->cv, &s->mu);
      if (s->stop) {
        for (auto& t : s->queue) Wipe(&t.password);
        s->queue.clear();
        s->exited = true;
        s->cv.SignalAll();
        return;
      }
      task = std::move(s->queue.front());
      s->queue.pop_front();
    }
    auto it = s->users.find(task.user);
    const bool known = it != s->users.end();
    // An unknown user is hashed too, against the fake hash, so that it answers as late as a wrong password.
    const auto t0 = std::chrono::steady_clock::now();
    const bool match = Matches(*s->crypt, task.password, known ? it->second : s->fake_hash, &buf);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    Wipe(&task.password);
    AnnotatedLock lock(&s->mu);
    s->hash_ms = s->hashes == 0 ? ms : 0.7 * s->hash_ms + 0.3 * ms;
    ++s->hashes;
    s->done.emplace_back(task.ticket, known && match);
    const uint64_t one = 1;
    (void)!write(s->efd, &one, sizeof(one));
  }
}

}  // namespace

Result<std::string> BcryptHash(const std::string& password, int cost) {
  std::string error;
  const CryptApi* api = LoadCrypt(&error);
  if (api == nullptr) return SystemError(error);
  if (api->crypt_gensalt_rn == nullptr) return SystemError("libcrypt.so.1 has no crypt_gensalt_rn");
  char setting[128];
  if (api->crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, setting, sizeof(setting)) ==
      nullptr) {
    return SystemError("crypt_gensalt_rn($2b$) failed: " + std::string(std::strerror(errno)));
  }
  std::vector<char> buf(kCryptDataSize);
  const char* out = api->crypt_rn(password.c_str(), setting, buf.data(), static_cast<int>(buf.size()));
  if (out == nullptr || out[0] != '$') return SystemError("crypt_rn failed for bcrypt");
  return std::string(out);
}

}  // namespace ncclscope

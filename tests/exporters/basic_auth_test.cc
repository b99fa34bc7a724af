// Basic auth of the metrics endpoint (basic_auth.h) on its own: right, wrong and unknown users, the cache of
// verified credentials, the rate limit and the bounded queue, and a destruction that does not wait for a
// slow hash; passwords compared whole (a NUL or a 73rd byte is not cut off) and bcrypt hashes validated at
// load. Hashes are real bcrypt through libcrypt (cost 4-12).
#include "exporters/http/basic_auth.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <string>
#include <thread>

#include "common/log.h"
#include "log_capture.h"

namespace ncclscope {
namespace {

using Clock = std::chrono::steady_clock;
using Verdict = BasicAuth::Verdict;

std::string Base64(const std::string& in) {
  static const char kA[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out.push_back(kA[(v >> k) & 63]);
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint8_t(in[i]) << 16;
    out += std::string{kA[(v >> 18) & 63], kA[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += std::string{kA[(v >> 18) & 63], kA[(v >> 12) & 63], kA[(v >> 6) & 63], '='};
  }
  return out;
}

std::string Header(const std::string& user, const std::string& password) {
  return "Basic " + Base64(user + ":" + password);
}

// Waits for the verifier's answer to `ticket`: 1 allowed, 0 denied, -1 none within 20 s (a shared host).
int Await(BasicAuth& auth, uint64_t ticket) {
  const Clock::time_point end = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < end) {
    pollfd p{auth.ready_fd(), POLLIN, 0};
    poll(&p, 1, 100);
    std::vector<std::pair<uint64_t, bool>> results;
    auth.TakeResults(&results, Clock::now());
    for (const auto& [t, ok] : results) {
      if (t == ticket) return ok ? 1 : 0;
    }
  }
  return -1;
}

// One check to its end: kAllowed/kDenied/kLimited, waited for when pending. *ms: how long it took.
Verdict CheckAndWait(BasicAuth& auth, const std::string& header, double* ms = nullptr) {
  const Clock::time_point t0 = Clock::now();
  uint64_t ticket = 0;
  Verdict v = auth.Check(header, &ticket, Clock::now());
  if (v == Verdict::kPending) {
    const int r = Await(auth, ticket);
    EXPECT_GE(r, 0) << "no answer from the verifier";
    v = r == 1 ? Verdict::kAllowed : Verdict::kDenied;
  }
  if (ms != nullptr) *ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return v;
}

TEST(BasicAuthCredentials, ParsesTheHeader) {
  std::string user, password;
  ASSERT_TRUE(ParseBasicCredentials("Basic " + Base64("alice:pa:ss word"), &user, &password));
  EXPECT_EQ(user, "alice");
  EXPECT_EQ(password, "pa:ss word");
  ASSERT_TRUE(ParseBasicCredentials("  basic   " + Base64("bob:") + " ", &user, &password));
  EXPECT_EQ(user, "bob");
  EXPECT_EQ(password, "");
  for (const std::string& bad : {std::string(), std::string("Basic"), std::string("Bearer abc"),
                                 "Basic " + Base64("no colon"), std::string("Basic !!!!"), std::string("Basic QQ=Q")}) {
    EXPECT_FALSE(ParseBasicCredentials(bad, &user, &password)) << bad;
  }
}

class BasicAuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Result<std::string> h = BcryptHash("right", 8);
    ASSERT_TRUE(h.ok()) << h.status().message();
    hash_ = new std::string(*h);
  }
  static void TearDownTestSuite() { delete hash_; }

  std::unique_ptr<BasicAuth> Make(const BasicAuth::Options& options = BasicAuth::Options()) {
    Result<std::unique_ptr<BasicAuth>> a = BasicAuth::Create({{"alice", *hash_}}, options);
    EXPECT_TRUE(a.ok()) << a.status().message();
    return a.ok() ? std::move(*a) : nullptr;
  }

  static std::string* hash_;
};
std::string* BasicAuthTest::hash_ = nullptr;

TEST_F(BasicAuthTest, RightWrongAndUnknownUsers) {
  BasicAuth::Options o;
  o.burst = 100;
  auto auth = Make(o);
  ASSERT_NE(auth, nullptr);
  EXPECT_EQ(CheckAndWait(*auth, Header("alice", "right")), Verdict::kAllowed);
  EXPECT_EQ(CheckAndWait(*auth, Header("Alice", "right")), Verdict::kDenied);  // user names are exact
  uint64_t ticket = 0;
  EXPECT_EQ(auth->Check("", &ticket, Clock::now()), Verdict::kDenied);  // no header: no hash
  EXPECT_EQ(auth->Check("Basic %%%", &ticket, Clock::now()), Verdict::kDenied);
  EXPECT_EQ(auth->stats().hashes, 2u);
  // An unknown user costs a hash of the same cost: it cannot be told from a wrong password by its time.
  // The fastest of 5 of each, as this host is shared.
  double wrong_ms = 1e9, unknown_ms = 1e9;
  for (int i = 0; i < 5; ++i) {
    double ms = 0;
    EXPECT_EQ(CheckAndWait(*auth, Header("alice", "wrong"), &ms), Verdict::kDenied);
    wrong_ms = std::min(wrong_ms, ms);
    EXPECT_EQ(CheckAndWait(*auth, Header("mallory", "right"), &ms), Verdict::kDenied);
    unknown_ms = std::min(unknown_ms, ms);
  }
  EXPECT_EQ(auth->stats().hashes, 12u);
  printf("bcrypt cost 8, fastest of 5: wrong password %.1f ms, unknown user %.1f ms\n", wrong_ms, unknown_ms);
  // Every unknown user cost a hash (counted above); the times agree within what a shared host's noise
  // allows (load averages of 15-27 seen): a check without a hash would take microseconds.
  EXPECT_GT(unknown_ms, 0.2 * wrong_ms);
}

TEST_F(BasicAuthTest, VerifiedCredentialsAreCachedWithoutTheirPassword) {
  auto auth = Make();
  ASSERT_NE(auth, nullptr);
  ASSERT_EQ(CheckAndWait(*auth, Header("alice", "right")), Verdict::kAllowed);
  uint64_t ticket = 0;
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(auth->Check(Header("alice", "right"), &ticket, Clock::now()), Verdict::kAllowed);
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 100;
  printf("cache hit: %.1f us per check\n", us);
  EXPECT_EQ(auth->stats().cache_hits, 100u);
  EXPECT_EQ(auth->stats().hashes, 1u);
  // A wrong password is never cached, nor is a cached one valid for another password.
  EXPECT_EQ(CheckAndWait(*auth, Header("alice", "wrong")), Verdict::kDenied);
  EXPECT_EQ(CheckAndWait(*auth, Header("alice", "wrong")), Verdict::kDenied);
  EXPECT_EQ(auth->stats().hashes, 3u);
}

TEST_F(BasicAuthTest, CacheEntriesExpire) {
  BasicAuth::Options o;
  o.cache_ttl = std::chrono::seconds(1);
  auto auth = Make(o);
  ASSERT_NE(auth, nullptr);
  ASSERT_EQ(CheckAndWait(*auth, Header("alice", "right")), Verdict::kAllowed);
  uint64_t ticket = 0;
  EXPECT_EQ(auth->Check(Header("alice", "right"), &ticket, Clock::now()), Verdict::kAllowed);
  EXPECT_EQ(auth->Check(Header("alice", "right"), &ticket, Clock::now() + std::chrono::seconds(2)), Verdict::kPending);
}

TEST_F(BasicAuthTest, FailuresAreRateLimitedWithoutHashing) {
  BasicAuth::Options o;
  o.burst = 3;
  o.failures_per_second = 0.001;
  o.queue_max = 100;
  auto auth = Make(o);
  ASSERT_NE(auth, nullptr);
  ASSERT_EQ(CheckAndWait(*auth, Header("alice", "right")), Verdict::kAllowed);  // gives its token back
  for (int i = 0; i < 3; ++i) EXPECT_EQ(CheckAndWait(*auth, Header("alice", "wrong")), Verdict::kDenied);
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(CheckAndWait(*auth, Header("alice", "wrong")), Verdict::kLimited);
  EXPECT_EQ(CheckAndWait(*auth, Header("eve", "x")), Verdict::kLimited);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_LT(ms, 500) << "limited answers must not hash";
  EXPECT_EQ(auth->stats().hashes, 4u);
  EXPECT_EQ(auth->stats().limited, 101u);
  // The cached right password is still let in.
  uint64_t ticket = 0;
  EXPECT_EQ(auth->Check(Header("alice", "right"), &ticket, Clock::now()), Verdict::kAllowed);
}

TEST_F(BasicAuthTest, TheQueueIsBounded) {
  BasicAuth::Options o;
  o.burst = 1000;
  o.queue_max = 2;
  auto auth = Make(o);
  ASSERT_NE(auth, nullptr);
  int pending = 0, limited = 0;
  for (int i = 0; i < 10; ++i) {
    uint64_t ticket = 0;
    const Verdict v = auth->Check(Header("alice", "wrong" + std::to_string(i)), &ticket, Clock::now());
    pending += v == Verdict::kPending;
    limited += v == Verdict::kLimited;
  }
  // Two queued, plus those the verifier took meanwhile: it takes one at a time, the next only once the one before
  // is hashed, so at most one more than it had finished. A cost-8 hash is a few ms: a loop held off the CPU that
  // long sees it take more than one.
  const uint64_t hashed_during_loop = auth->stats().hashes;
  EXPECT_LE(pending, 3 + static_cast<int>(hashed_during_loop)) << hashed_during_loop << " hashed during the loop";
  EXPECT_EQ(pending + limited, 10);
}

// A check whose client is gone is dropped from the queue unhashed.
TEST_F(BasicAuthTest, CancelledChecksAreNotHashed) {
  Result<std::string> slow = BcryptHash("x", 10);  // ~0.1 s per hash on an idle core
  ASSERT_TRUE(slow.ok());
  Result<std::unique_ptr<BasicAuth>> a = BasicAuth::Create({{"alice", *slow}});
  ASSERT_TRUE(a.ok());
  BasicAuth& auth = **a;
  uint64_t tickets[4] = {};
  for (uint64_t& t : tickets) ASSERT_EQ(auth.Check(Header("alice", "guess"), &t, Clock::now()), Verdict::kPending);
  for (int i = 1; i < 4; ++i) auth.Cancel(tickets[i]);
  // The verifier takes one check at a time, the next only once the one before is hashed: before the cancels it
  // can have taken at most one more than it had finished by then (none, unless this thread was held off the CPU
  // for a hash's time).
  const uint64_t hashed_before_cancels = auth.stats().hashes;
  EXPECT_EQ(Await(auth, tickets[0]), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_LE(auth.stats().hashes, hashed_before_cancels + 1)
      << "cancelled checks were hashed; " << hashed_before_cancels << " hashed before the cancels";
}

// A right password whose client left during its hash is still cached: a hash slower than the server's wait must
// not lock the user out.
TEST_F(BasicAuthTest, ARightPasswordCancelledDuringItsHashIsStillCached) {
  BasicAuth::Options o;
  o.queue_max = 1;  // a second check is refused while the first waits in the queue: that tells when it was taken
  auto a = Make(o);  // cost 8: a few ms, still far longer than from the take to the cancel below
  ASSERT_NE(a, nullptr);
  BasicAuth& auth = *a;
  uint64_t ticket = 0;
  ASSERT_EQ(auth.Check(Header("alice", "right"), &ticket, Clock::now()), Verdict::kPending);
  // Cancelled only once the verifier has taken it (a fixed sleep was not enough when the verifier thread was
  // held off the CPU): until then a probe is refused; the probe queued once it is taken is cancelled at once.
  bool taken = false;
  for (const auto end = Clock::now() + std::chrono::seconds(20); !taken && Clock::now() < end;) {
    uint64_t probe = 0;
    const Verdict v = auth.Check(Header("alice", "probe"), &probe, Clock::now());
    taken = v == Verdict::kPending;
    if (taken) auth.Cancel(probe);
    else std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(taken) << "the verifier did not take the check within 20 s";
  auth.Cancel(ticket);
  EXPECT_EQ(Await(auth, ticket), 1);
  EXPECT_EQ(auth.Check(Header("alice", "right"), &ticket, Clock::now()), Verdict::kAllowed);
}

// Destruction (the server's Stop) with the verifier inside a slow hash returns after at most stop_wait.
TEST_F(BasicAuthTest, DestructionDoesNotWaitForASlowHash) {
  Result<std::string> slow = BcryptHash("x", 13);  // ~0.8 s per hash here
  ASSERT_TRUE(slow.ok());
  Result<std::unique_ptr<BasicAuth>> a = BasicAuth::Create({{"alice", *slow}});
  ASSERT_TRUE(a.ok());
  std::unique_ptr<BasicAuth> auth = std::move(*a);
  uint64_t ticket = 0;
  for (int i = 0; i < 4; ++i) auth->Check(Header("alice", "guess" + std::to_string(i)), &ticket, Clock::now());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the first hash is under way
  const Clock::time_point t0 = Clock::now();
  auth.reset();
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  printf("destroyed with a cost-13 hash in progress in %.1f ms\n", ms);
  EXPECT_LT(ms, 1000);
}

}  // namespace
}  // namespace ncclscope

namespace ncclscope {
namespace {

// bcrypt reads the password as a C string and only its first 72 bytes: what follows a NUL, or the 73rd
// byte on, must not be ignored; such passwords are refused without a hash.
TEST_F(BasicAuthTest, PasswordsAreComparedWhole) {
  const std::string p72(72, 'p');
  Result<std::string> h72 = BcryptHash(p72, 4);
  ASSERT_TRUE(h72.ok()) << h72.status().message();
  BasicAuth::Options o;
  o.burst = 100;
  Result<std::unique_ptr<BasicAuth>> made = BasicAuth::Create({{"alice", *hash_}, {"long", *h72}}, o);
  ASSERT_TRUE(made.ok()) << made.status().message();
  BasicAuth& auth = **made;
  EXPECT_EQ(CheckAndWait(auth, Header("alice", std::string("right\0anything", 14))), Verdict::kDenied);
  EXPECT_EQ(CheckAndWait(auth, Header("alice", std::string("right\0", 6))), Verdict::kDenied);
  EXPECT_EQ(CheckAndWait(auth, Header("long", p72 + "x")), Verdict::kDenied);
  EXPECT_EQ(CheckAndWait(auth, Header("long", p72 + "anything at all")), Verdict::kDenied);
  EXPECT_EQ(auth.stats().hashes, 0u) << "refused before hashing";
  EXPECT_EQ(CheckAndWait(auth, Header("alice", "right")), Verdict::kAllowed);
  EXPECT_EQ(CheckAndWait(auth, Header("long", p72)), Verdict::kAllowed);  // 72 bytes: bcrypt's whole input
  EXPECT_FALSE(BcryptCanCheck(std::string(73, 'p')));
  EXPECT_TRUE(BcryptCanCheck(""));
}

TEST(BcryptHashes, WellFormedOnesPass) {
  Result<std::string> h = BcryptHash("secret", 4);
  ASSERT_TRUE(h.ok()) << h.status().message();
  for (const char* prefix : {"$2a$", "$2b$", "$2y$"}) {
    const std::string variant = prefix + h->substr(4);
    EXPECT_TRUE(ValidateBcryptHash(variant).ok()) << variant << ": " << ValidateBcryptHash(variant).message();
  }
  // A $2y$ of cost 10, and the extreme costs with the last salt and hash characters bcrypt allows.
  for (const char* ok : {"$2y$10$MxEjZ7E4pgVUKtEIe1g1SOYKzx8IWAq35ojf.f/9ZcDKS/D81ZHKu",
                         "$2b$31$......................0123456789ABCDEFGHIJKLMNOPQRSTS",
                         "$2b$04$999999999999999999999u6666666666666666666666666666666"}) {
    EXPECT_TRUE(ValidateBcryptHash(ok).ok()) << ok << ": " << ValidateBcryptHash(ok).message();
  }
}

TEST(BcryptHashes, MalformedOnesAreRefusedSayingWhy) {
  const std::string good = "$2y$10$MxEjZ7E4pgVUKtEIe1g1SOYKzx8IWAq35ojf.f/9ZcDKS/D81ZHKu";
  ASSERT_TRUE(ValidateBcryptHash(good).ok());
  auto with = [&](size_t pos, char c) {
    std::string h = good;
    h[pos] = c;
    return h;
  };
  const struct {
    std::string hash;
    const char* says;
  } cases[] = {
      {"", "0 characters, not 60"},
      {good.substr(0, 59), "59 characters, not 60"},
      {good + "u", "61 characters, not 60"},
      {with(2, 'x'), "$2a$, $2b$ or $2y$"},
      {"$1$" + good.substr(3), "$2a$, $2b$ or $2y$"},
      {with(6, 'x'), "$2a$, $2b$ or $2y$"},
      {with(5, '3').replace(4, 1, "0"), "cost \"03\" is not 04-31"},
      {with(4, '3').replace(5, 1, "2"), "cost \"32\" is not 04-31"},
      {with(4, 'a'), "cost \"a0\" is not 04-31"},
      {with(7, '!'), "character 1 of the salt"},
      {with(7 + 21, '+'), "character 22 of the salt"},
      // The salt's 22nd character carries 2 bits (4 of padding): 'P' is 17, 'S' is 20 in ./A-Za-z0-9.
      {with(7 + 21, 'P'), "last character of the salt"},
      {with(7 + 21, 'S'), "last character of the salt"},
      {with(7 + 22, '$'), "character 1 of the hash"},
      // The hash's 31st character carries 4 bits (2 of padding): 'D' is 5.
      {with(59, 'D'), "last character of the hash"},
  };
  for (const auto& c : cases) {
    const Status s = ValidateBcryptHash(c.hash);
    EXPECT_FALSE(s.ok()) << c.hash;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << c.hash << ": " << s.message();
    EXPECT_EQ(s.message().find(good.substr(7)), std::string::npos) << "the hash is not repeated: " << s.message();
  }
}

// A hash that is not well formed still loads (web_config refuses it first) but is said at once, naming the user:
// before, a malformed salt loaded silently and every login to its user failed; an empty one threw.
TEST_F(BasicAuthTest, AMalformedHashIsSaidAtLoad) {
  const std::string bad_salt = hash_->substr(0, 28) + "P" + hash_->substr(29);
  SetNcclLogger(testing::LogCapture::Logger);
  testing::LogCapture::Clear();
  Result<std::unique_ptr<BasicAuth>> made =
      BasicAuth::Create({{"alice", *hash_}, {"bob", bad_salt}, {"carol", ""}}, BasicAuth::Options());
  SetNcclLogger(nullptr);
  ASSERT_TRUE(made.ok()) << made.status().message();
  const std::vector<std::string> warnings = testing::LogCapture::AllWarnings();
  ASSERT_EQ(warnings.size(), 2u) << testing::LogCapture::AllLines().size() << " lines";
  EXPECT_NE(warnings[0].find("user \"bob\": not a bcrypt hash: the last character of the salt"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("user \"carol\": not a bcrypt hash: 0 characters"), std::string::npos) << warnings[1];
  EXPECT_EQ(CheckAndWait(**made, Header("alice", "right")), Verdict::kAllowed);
  EXPECT_EQ(CheckAndWait(**made, Header("bob", "right")), Verdict::kDenied);
}

}  // namespace
}  // namespace ncclscope

#include "exporters/prometheus/tls.h"

#include <dlfcn.h>
#include <poll.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>

#include "common/log.h"

namespace ncclscope {
namespace {

// OpenSSL 3's ABI, as far as we use it: opaque pointers and the values of the few constants (ssl.h).
constexpr int kFiletypePem = 1;
constexpr int kCtrlMode = 33;
constexpr int kCtrlSetMinProtoVersion = 123;
constexpr int kCtrlSetMaxProtoVersion = 124;
constexpr long kModeEnablePartialWrite = 0x1;
constexpr long kModeAcceptMovingWriteBuffer = 0x2;
constexpr uint64_t kOpNoCompression = uint64_t{1} << 17;
constexpr uint64_t kOpNoRenegotiation = uint64_t{1} << 30;
constexpr int kVerifyPeer = 0x1;
constexpr int kVerifyFailIfNoPeerCert = 0x2;
constexpr int kErrorWantRead = 2;
constexpr int kErrorWantWrite = 3;
constexpr int kErrorSyscall = 5;
constexpr int kErrorZeroReturn = 6;

using VerifyCallback = int (*)(int, void*);

struct SslApi {
  const void* (*TLS_server_method)();
  void* (*SSL_CTX_new)(const void*);
  void (*SSL_CTX_free)(void*);
  int (*SSL_CTX_use_certificate_chain_file)(void*, const char*);
  int (*SSL_CTX_use_PrivateKey_file)(void*, const char*, int);
  int (*SSL_CTX_check_private_key)(const void*);
  long (*SSL_CTX_ctrl)(void*, int, long, void*);
  uint64_t (*SSL_CTX_set_options)(void*, uint64_t);
  void (*SSL_CTX_set_verify)(void*, int, VerifyCallback);
  int (*SSL_CTX_load_verify_locations)(void*, const char*, const char*);
  void* (*SSL_load_client_CA_file)(const char*);
  void (*SSL_CTX_set_client_CA_list)(void*, void*);
  void* (*SSL_new)(void*);
  void (*SSL_free)(void*);
  int (*SSL_set_fd)(void*, int);
  int (*SSL_accept)(void*);
  int (*SSL_read)(void*, void*, int);
  int (*SSL_write)(void*, const void*, int);
  int (*SSL_get_error)(const void*, int);
  int (*SSL_shutdown)(void*);
  // libcrypto
  unsigned long (*ERR_get_error)();
  void (*ERR_error_string_n)(unsigned long, char*, size_t);
  void (*ERR_clear_error)();
};

struct CryptoApi {
  const void* (*EVP_sha256)();
  unsigned char* (*HMAC)(const void*, const void*, int, const unsigned char*, size_t, unsigned char*, unsigned int*);
};

template <class F>
bool Bind(void* lib, const char* name, F* fn, std::string* missing) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (*fn == nullptr && missing->empty()) *missing = name;
  return *fn != nullptr;
}

// Opened once per process, never closed.
const SslApi* LoadSsl(std::string* error) {
  static SslApi api;
  static std::string load_error;
  static std::once_flag once;
  std::call_once(once, [] {
    void* crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    void* ssl = crypto == nullptr ? nullptr : dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
    if (ssl == nullptr) {
      const char* e = dlerror();
      load_error = std::string("TLS needs OpenSSL 3 (libssl.so.3, libcrypto.so.3): ") + (e ? e : "not found");
      return;
    }
    std::string missing;
#define NCCLSCOPE_BIND(lib, fn) Bind(lib, #fn, &api.fn, &missing)
    NCCLSCOPE_BIND(ssl, TLS_server_method);
    NCCLSCOPE_BIND(ssl, SSL_CTX_new);
    NCCLSCOPE_BIND(ssl, SSL_CTX_free);
    NCCLSCOPE_BIND(ssl, SSL_CTX_use_certificate_chain_file);
    NCCLSCOPE_BIND(ssl, SSL_CTX_use_PrivateKey_file);
    NCCLSCOPE_BIND(ssl, SSL_CTX_check_private_key);
    NCCLSCOPE_BIND(ssl, SSL_CTX_ctrl);
    NCCLSCOPE_BIND(ssl, SSL_CTX_set_options);
    NCCLSCOPE_BIND(ssl, SSL_CTX_set_verify);
    NCCLSCOPE_BIND(ssl, SSL_CTX_load_verify_locations);
    NCCLSCOPE_BIND(ssl, SSL_load_client_CA_file);
    NCCLSCOPE_BIND(ssl, SSL_CTX_set_client_CA_list);
    NCCLSCOPE_BIND(ssl, SSL_new);
    NCCLSCOPE_BIND(ssl, SSL_free);
    NCCLSCOPE_BIND(ssl, SSL_set_fd);
    NCCLSCOPE_BIND(ssl, SSL_accept);
    NCCLSCOPE_BIND(ssl, SSL_read);
    NCCLSCOPE_BIND(ssl, SSL_write);
    NCCLSCOPE_BIND(ssl, SSL_get_error);
    NCCLSCOPE_BIND(ssl, SSL_shutdown);
    NCCLSCOPE_BIND(crypto, ERR_get_error);
    NCCLSCOPE_BIND(crypto, ERR_error_string_n);
    NCCLSCOPE_BIND(crypto, ERR_clear_error);
#undef NCCLSCOPE_BIND
    if (!missing.empty()) load_error = "OpenSSL lacks " + missing + " (OpenSSL 3 is needed)";
  });
  if (!load_error.empty()) {
    *error = load_error;
    return nullptr;
  }
  return &api;
}

const CryptoApi* LoadCrypto() {
  static CryptoApi api;
  static bool ok = false;
  static std::once_flag once;
  std::call_once(once, [] {
    void* crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (crypto == nullptr) return;
    std::string missing;
    ok = Bind(crypto, "EVP_sha256", &api.EVP_sha256, &missing) & Bind(crypto, "HMAC", &api.HMAC, &missing);
  });
  return ok ? &api : nullptr;
}

const SslApi& Api() {
  std::string unused;
  return *LoadSsl(&unused);  // only called once LoadSsl succeeded
}

// OpenSSL's queued errors as one line (and the queue emptied).
std::string SslErrors(const char* fallback) {
  const SslApi& api = Api();
  std::string out;
  for (unsigned long e = api.ERR_get_error(); e != 0; e = api.ERR_get_error()) {
    char buf[256];
    api.ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? fallback : out;
}

// Accepts whatever certificate the client sent (RequestClientCert, RequireAnyClientCert).
int AcceptAnyCertificate(int, void*) { return 1; }

}  // namespace

// ---- TlsSession ----

TlsSession::~TlsSession() {
  if (ssl_ != nullptr) Api().SSL_free(ssl_);
}

TlsSession::Io TlsSession::Map(int ret) {
  const SslApi& api = Api();
  const int e = api.SSL_get_error(ssl_, ret);
  want_ = 0;
  switch (e) {
    case kErrorWantRead:
      want_ = POLLIN;
      return Io::kWant;
    case kErrorWantWrite:
      want_ = POLLOUT;
      return Io::kWant;
    case kErrorZeroReturn:
      return Io::kClosed;
    case kErrorSyscall:
      if (ret == 0 || errno == 0) {
        api.ERR_clear_error();
        return Io::kClosed;  // EOF without close_notify
      }
      error_ = std::string("socket: ") + std::strerror(errno);
      api.ERR_clear_error();
      return Io::kError;
    default:
      error_ = SslErrors("TLS error");
      return Io::kError;
  }
}

TlsSession::Io TlsSession::Handshake() {
  Api().ERR_clear_error();
  errno = 0;
  const int r = Api().SSL_accept(ssl_);
  if (r == 1) {
    want_ = 0;
    return Io::kOk;
  }
  const Io io = Map(r);
  return io == Io::kClosed ? Io::kError : io;
}

TlsSession::Io TlsSession::Read(char* buf, size_t n, size_t* got) {
  Api().ERR_clear_error();
  errno = 0;
  const int r = Api().SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(n, INT_MAX)));
  if (r > 0) {
    want_ = 0;
    *got = static_cast<size_t>(r);
    return Io::kOk;
  }
  return Map(r);
}

TlsSession::Io TlsSession::Write(const char* data, size_t n, size_t* wrote) {
  Api().ERR_clear_error();
  errno = 0;
  const int r = Api().SSL_write(ssl_, data, static_cast<int>(std::min<size_t>(n, INT_MAX)));
  if (r > 0) {
    want_ = 0;
    *wrote = static_cast<size_t>(r);
    return Io::kOk;
  }
  const Io io = Map(r);
  return io == Io::kClosed ? Io::kError : io;
}

void TlsSession::Shutdown() {
  Api().ERR_clear_error();
  Api().SSL_shutdown(ssl_);
  Api().ERR_clear_error();
}

// ---- TlsContext ----

Result<std::shared_ptr<TlsContext>> TlsContext::Create(const TlsServerConfig& config) {
  std::string error;
  if (LoadSsl(&error) == nullptr) return SystemError(error);
  std::shared_ptr<TlsContext> tls(new TlsContext(config));
  tls->files_ = tls->Stat();
  Result<void*> ctx = tls->Build();
  if (!ctx.ok()) return ctx.status();
  tls->ctx_ = *ctx;
  tls->next_check_ = Clock::now() + std::chrono::seconds(1);
  return tls;
}

TlsContext::~TlsContext() {
  if (ctx_ != nullptr) Api().SSL_CTX_free(ctx_);
}

TlsContext::Files TlsContext::Stat() const {
  auto one = [](const std::string& path) {
    FileState f;
    struct stat st {};
    if (path.empty() || stat(path.c_str(), &st) != 0) return f;
    f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    f.size = static_cast<int64_t>(st.st_size);
    f.ino = static_cast<uint64_t>(st.st_ino);
    return f;
  };
  return Files{one(config_.cert_file), one(config_.key_file), one(config_.client_ca_file)};
}

Result<void*> TlsContext::Build() const {
  const SslApi& api = Api();
  api.ERR_clear_error();
  void* ctx = api.SSL_CTX_new(api.TLS_server_method());
  if (ctx == nullptr) return SystemError("SSL_CTX_new: " + SslErrors("failed"));
  auto fail = [&](const std::string& what) -> Result<void*> {
    const std::string why = SslErrors("failed");
    api.SSL_CTX_free(ctx);
    return InvalidUsage(what + ": " + why);
  };
  if (api.SSL_CTX_use_certificate_chain_file(ctx, config_.cert_file.c_str()) != 1) {
    return fail("cert_file " + config_.cert_file);
  }
  if (api.SSL_CTX_use_PrivateKey_file(ctx, config_.key_file.c_str(), kFiletypePem) != 1) {
    return fail("key_file " + config_.key_file);
  }
  if (api.SSL_CTX_check_private_key(ctx) != 1) {
    return fail("key_file " + config_.key_file + " does not match cert_file " + config_.cert_file);
  }
  if (api.SSL_CTX_ctrl(ctx, kCtrlSetMinProtoVersion, config_.min_version, nullptr) != 1 ||
      api.SSL_CTX_ctrl(ctx, kCtrlSetMaxProtoVersion, config_.max_version, nullptr) != 1) {
    return fail("min_version/max_version");
  }
  api.SSL_CTX_ctrl(ctx, kCtrlMode, kModeEnablePartialWrite | kModeAcceptMovingWriteBuffer, nullptr);
  api.SSL_CTX_set_options(ctx, kOpNoCompression | kOpNoRenegotiation);
  switch (config_.client_auth) {
    case ClientAuth::kNone:
      break;
    case ClientAuth::kRequest:
      api.SSL_CTX_set_verify(ctx, kVerifyPeer, &AcceptAnyCertificate);
      break;
    case ClientAuth::kRequireAny:
      api.SSL_CTX_set_verify(ctx, kVerifyPeer | kVerifyFailIfNoPeerCert, &AcceptAnyCertificate);
      break;
    case ClientAuth::kVerifyIfGiven:
    case ClientAuth::kRequireAndVerify: {
      if (api.SSL_CTX_load_verify_locations(ctx, config_.client_ca_file.c_str(), nullptr) != 1) {
        return fail("client_ca_file " + config_.client_ca_file);
      }
      void* names = api.SSL_load_client_CA_file(config_.client_ca_file.c_str());
      if (names == nullptr) return fail("client_ca_file " + config_.client_ca_file);
      api.SSL_CTX_set_client_CA_list(ctx, names);  // takes ownership
      api.SSL_CTX_set_verify(
          ctx, kVerifyPeer | (config_.client_auth == ClientAuth::kRequireAndVerify ? kVerifyFailIfNoPeerCert : 0),
          nullptr);
      break;
    }
  }
  return ctx;
}

void TlsContext::MaybeReload(Clock::time_point now) {
  if (now < next_check_) return;
  next_check_ = now + std::chrono::seconds(1);
  const Files files = Stat();
  if (files == files_ || (has_failed_ && files == failed_)) return;
  Result<void*> ctx = Build();
  if (!ctx.ok()) {
    NCCLSCOPE_WARN(subsys::kInit,
                   "metrics endpoint: the changed TLS files do not load (%s); keeping the previous "
                   "certificate",
                   ctx.status().message().c_str());
    failed_ = files;
    has_failed_ = true;
    return;
  }
  Api().SSL_CTX_free(ctx_);  // live sessions keep their own reference to the old one
  ctx_ = *ctx;
  files_ = files;
  has_failed_ = false;
  ++reloads_;
  NCCLSCOPE_INFO(subsys::kInit, "metrics endpoint: TLS certificate %s reloaded", config_.cert_file.c_str());
}

std::unique_ptr<TlsSession> TlsContext::NewSession(int fd) {
  const SslApi& api = Api();
  api.ERR_clear_error();
  void* ssl = api.SSL_new(ctx_);
  if (ssl == nullptr || api.SSL_set_fd(ssl, fd) != 1) {
    NCCLSCOPE_WARN(subsys::kInit, "metrics endpoint: no TLS session: %s", SslErrors("SSL_new failed").c_str());
    if (ssl != nullptr) api.SSL_free(ssl);
    return nullptr;
  }
  return std::make_unique<TlsSession>(ssl);
}

bool Sha256Hmac(std::string_view key, std::string_view data, std::array<unsigned char, 32>* out) {
  const CryptoApi* api = LoadCrypto();
  if (api == nullptr) return false;
  unsigned int len = 0;
  return api->HMAC(api->EVP_sha256(), key.data(), static_cast<int>(key.size()),
                   reinterpret_cast<const unsigned char*>(data.data()), data.size(), out->data(), &len) != nullptr &&
         len == out->size();
}

}  // namespace ncclscope

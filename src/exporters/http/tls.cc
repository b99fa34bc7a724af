#include "exporters/http/tls.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <mutex>  // std::call_once

#include "common/config_file.h"
#include "common/log.h"
#include "common/tsan_lock.h"
#include "absl/time/time.h"

namespace ncclscope {
namespace {

// OpenSSL 3's ABI, as far as we use it: opaque pointers and the values of the few constants (ssl.h).
constexpr int kFiletypePem = 1;
constexpr int kCtrlMode = 33;
constexpr int kCtrlChainCert = 89;  // SSL_CTX_add0_chain_cert
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
constexpr int kCtrlSetTlsextHostname = 55;  // SSL_set_tlsext_host_name
constexpr long kTlsextNametypeHostName = 0;
constexpr long kTls12Version = 0x0303;

using VerifyCallback = int (*)(int, void*);
using PasswordCallback = int (*)(char*, int, int, void*);

struct SslApi {
  const void* (*TLS_server_method)();
  const void* (*TLS_client_method)();
  void* (*SSL_CTX_new)(const void*);
  void (*SSL_CTX_free)(void*);
  int (*SSL_CTX_use_certificate)(void*, void*);
  int (*SSL_CTX_use_PrivateKey)(void*, void*);
  int (*SSL_CTX_check_private_key)(const void*);
  long (*SSL_CTX_ctrl)(void*, int, long, void*);
  uint64_t (*SSL_CTX_set_options)(void*, uint64_t);
  void (*SSL_CTX_set_verify)(void*, int, VerifyCallback);
  void* (*SSL_CTX_get_cert_store)(const void*);
  int (*SSL_CTX_add_client_CA)(void*, void*);
  void* (*SSL_new)(void*);
  void (*SSL_free)(void*);
  int (*SSL_set_fd)(void*, int);
  void (*SSL_set_accept_state)(void*);
  void (*SSL_set_connect_state)(void*);
  int (*SSL_do_handshake)(void*);
  int (*SSL_CTX_set_default_verify_paths)(void*);
  long (*SSL_ctrl)(void*, int, long, void*);
  int (*SSL_set1_host)(void*, const char*);
  void* (*SSL_get0_param)(void*);
  long (*SSL_get_verify_result)(const void*);
  int (*SSL_read)(void*, void*, int);
  int (*SSL_write)(void*, const void*, int);
  int (*SSL_get_error)(const void*, int);
  int (*SSL_shutdown)(void*);
  // libcrypto: errors, and PEM from memory (the files are read by ReadConfigFile, never by OpenSSL)
  unsigned long (*ERR_get_error)();
  void (*ERR_error_string_n)(unsigned long, char*, size_t);
  void (*ERR_clear_error)();
  void* (*BIO_new_mem_buf)(const void*, int);
  int (*BIO_free)(void*);
  void* (*PEM_read_bio_X509)(void*, void*, PasswordCallback, void*);
  void* (*PEM_read_bio_X509_AUX)(void*, void*, PasswordCallback, void*);
  void* (*PEM_read_bio_PrivateKey)(void*, void*, PasswordCallback, void*);
  void (*X509_free)(void*);
  void (*EVP_PKEY_free)(void*);
  int (*X509_STORE_add_cert)(void*, void*);
  int (*X509_VERIFY_PARAM_set1_ip_asc)(void*, const char*);
  const char* (*X509_verify_cert_error_string)(long);
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
    NCCLSCOPE_BIND(ssl, TLS_client_method);
    NCCLSCOPE_BIND(ssl, SSL_CTX_new);
    NCCLSCOPE_BIND(ssl, SSL_CTX_free);
    NCCLSCOPE_BIND(ssl, SSL_CTX_use_certificate);
    NCCLSCOPE_BIND(ssl, SSL_CTX_use_PrivateKey);
    NCCLSCOPE_BIND(ssl, SSL_CTX_check_private_key);
    NCCLSCOPE_BIND(ssl, SSL_CTX_ctrl);
    NCCLSCOPE_BIND(ssl, SSL_CTX_set_options);
    NCCLSCOPE_BIND(ssl, SSL_CTX_set_verify);
    NCCLSCOPE_BIND(ssl, SSL_CTX_get_cert_store);
    NCCLSCOPE_BIND(ssl, SSL_CTX_add_client_CA);
    NCCLSCOPE_BIND(ssl, SSL_new);
    NCCLSCOPE_BIND(ssl, SSL_free);
    NCCLSCOPE_BIND(ssl, SSL_set_fd);
    NCCLSCOPE_BIND(ssl, SSL_set_accept_state);
    NCCLSCOPE_BIND(ssl, SSL_set_connect_state);
    NCCLSCOPE_BIND(ssl, SSL_do_handshake);
    NCCLSCOPE_BIND(ssl, SSL_CTX_set_default_verify_paths);
    NCCLSCOPE_BIND(ssl, SSL_ctrl);
    NCCLSCOPE_BIND(ssl, SSL_set1_host);
    NCCLSCOPE_BIND(ssl, SSL_get0_param);
    NCCLSCOPE_BIND(ssl, SSL_get_verify_result);
    NCCLSCOPE_BIND(ssl, SSL_read);
    NCCLSCOPE_BIND(ssl, SSL_write);
    NCCLSCOPE_BIND(ssl, SSL_get_error);
    NCCLSCOPE_BIND(ssl, SSL_shutdown);
    NCCLSCOPE_BIND(crypto, ERR_get_error);
    NCCLSCOPE_BIND(crypto, ERR_error_string_n);
    NCCLSCOPE_BIND(crypto, ERR_clear_error);
    NCCLSCOPE_BIND(crypto, BIO_new_mem_buf);
    NCCLSCOPE_BIND(crypto, BIO_free);
    NCCLSCOPE_BIND(crypto, PEM_read_bio_X509);
    NCCLSCOPE_BIND(crypto, PEM_read_bio_X509_AUX);
    NCCLSCOPE_BIND(crypto, PEM_read_bio_PrivateKey);
    NCCLSCOPE_BIND(crypto, X509_free);
    NCCLSCOPE_BIND(crypto, EVP_PKEY_free);
    NCCLSCOPE_BIND(crypto, X509_STORE_add_cert);
    NCCLSCOPE_BIND(crypto, X509_VERIFY_PARAM_set1_ip_asc);
    NCCLSCOPE_BIND(crypto, X509_verify_cert_error_string);
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

// An encrypted key would make OpenSSL prompt on the terminal: refuse it instead.
int NoPassword(char*, int, int, void*) { return 0; }

// A read-only OpenSSL memory BIO over `text` (which must outlive it).
class MemoryBio {
 public:
  explicit MemoryBio(const std::string& text)
      : bio_(Api().BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))) {}
  ~MemoryBio() {
    if (bio_ != nullptr) Api().BIO_free(bio_);
  }
  MemoryBio(const MemoryBio&) = delete;
  MemoryBio& operator=(const MemoryBio&) = delete;
  void* get() const { return bio_; }

 private:
  void* const bio_;
};

// The certificate chain of a PEM text into `ctx`: the first certificate is the server's, the rest its chain.
bool UseCertificateChain(void* ctx, const std::string& pem) {
  const SslApi& api = Api();
  MemoryBio bio(pem);
  void* leaf = bio.get() == nullptr ? nullptr : api.PEM_read_bio_X509_AUX(bio.get(), nullptr, &NoPassword, nullptr);
  if (leaf == nullptr) return false;
  const bool ok = api.SSL_CTX_use_certificate(ctx, leaf) == 1;
  api.X509_free(leaf);  // the context holds its own reference
  if (!ok) return false;
  while (void* link = api.PEM_read_bio_X509(bio.get(), nullptr, &NoPassword, nullptr)) {
    if (api.SSL_CTX_ctrl(ctx, kCtrlChainCert, 0, link) != 1) {  // add0: owns `link` on success only
      api.X509_free(link);
      return false;
    }
  }
  api.ERR_clear_error();  // the end of the PEM text reads as "no start line"
  return true;
}

bool UsePrivateKey(void* ctx, const std::string& pem) {
  const SslApi& api = Api();
  MemoryBio bio(pem);
  void* key = bio.get() == nullptr ? nullptr : api.PEM_read_bio_PrivateKey(bio.get(), nullptr, &NoPassword, nullptr);
  if (key == nullptr) return false;
  const bool ok = api.SSL_CTX_use_PrivateKey(ctx, key) == 1;
  api.EVP_PKEY_free(key);
  return ok;
}

// Every certificate of a PEM text trusted for client certificates and named in the server's CA list.
bool UseClientCas(void* ctx, const std::string& pem) {
  const SslApi& api = Api();
  MemoryBio bio(pem);
  void* store = api.SSL_CTX_get_cert_store(ctx);
  int count = 0;
  while (void* ca = bio.get() == nullptr ? nullptr : api.PEM_read_bio_X509(bio.get(), nullptr, &NoPassword, nullptr)) {
    const bool ok = api.X509_STORE_add_cert(store, ca) == 1 && api.SSL_CTX_add_client_CA(ctx, ca) == 1;
    api.X509_free(ca);  // both took their own reference
    if (!ok) return false;
    ++count;
  }
  if (count == 0) return false;
  api.ERR_clear_error();
  return true;
}

// Keeps this library mapped for good: a reload thread left running must never return into unmapped code.
void PinThisLibrary() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PinThisLibrary), &info) != 0 && info.dli_fname != nullptr) {
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
}

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
  const int r = Api().SSL_do_handshake(ssl_);
  if (r == 1) {
    want_ = 0;
    return Io::kOk;
  }
  const Io io = Map(r);
  const long verify = Api().SSL_get_verify_result(ssl_);
  if (io == Io::kError && verify != 0) {  // X509_V_OK: say why the peer's certificate was refused
    error_ += std::string(" (certificate: ") + Api().X509_verify_cert_error_string(verify) + ")";
  }
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

Result<std::string> TlsContext::ReadFile(const char* key, const std::string& path) {
  return ReadConfigFile(key, path, {kMaxTlsFileBytes});
}

Result<std::shared_ptr<TlsContext>> TlsContext::Create(const TlsServerConfig& config, FileReader reader) {
  std::string error;
  if (LoadSsl(&error) == nullptr) return SystemError(error);
  std::shared_ptr<TlsContext> tls(new TlsContext(config, std::move(reader)));
  tls->files_ = tls->Stat();
  Result<void*> ctx = tls->Build();
  if (!ctx.ok()) return ctx.status();
  {
    AnnotatedLock lock(&tls->ctx_mu_);
    tls->ctx_ = *ctx;
  }
  return tls;
}

TlsContext::~TlsContext() {
  // The reloader holds a reference until it ends, so it was joined or detached before this runs.
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
  // All files first, through the bounded reader: OpenSSL only ever sees bytes in memory.
  Result<std::string> cert = reader_("cert_file", config_.cert_file);
  if (!cert.ok()) return cert.status();
  Result<std::string> key = reader_("key_file", config_.key_file);
  if (!key.ok()) return key.status();
  Result<std::string> cas = std::string();
  if (!config_.client_ca_file.empty()) cas = reader_("client_ca_file", config_.client_ca_file);
  if (!cas.ok()) return cas.status();

  const SslApi& api = Api();
  api.ERR_clear_error();
  void* ctx = api.SSL_CTX_new(api.TLS_server_method());
  if (ctx == nullptr) return SystemError("SSL_CTX_new: " + SslErrors("failed"));
  auto fail = [&](const std::string& what) -> Result<void*> {
    const std::string why = SslErrors("no PEM certificate or key in it");
    api.SSL_CTX_free(ctx);
    return InvalidUsage(what + ": " + why);
  };
  if (!UseCertificateChain(ctx, *cert)) return fail("cert_file " + config_.cert_file);
  if (!UsePrivateKey(ctx, *key)) return fail("key_file " + config_.key_file + " (an encrypted key is not supported)");
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
    case ClientAuth::kRequireAndVerify:
      if (!UseClientCas(ctx, *cas)) return fail("client_ca_file " + config_.client_ca_file);
      api.SSL_CTX_set_verify(
          ctx, kVerifyPeer | (config_.client_auth == ClientAuth::kRequireAndVerify ? kVerifyFailIfNoPeerCert : 0),
          nullptr);
      break;
  }
  return ctx;
}

void TlsContext::ReloadIfChanged() {
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
  void* old = nullptr;
  {
    AnnotatedLock lock(&ctx_mu_);
    old = ctx_;
    ctx_ = *ctx;
  }
  Api().SSL_CTX_free(old);  // live sessions keep their own reference to it
  files_ = files;
  has_failed_ = false;
  reloads_.fetch_add(1, std::memory_order_relaxed);
  NCCLSCOPE_INFO(subsys::kInit, "metrics endpoint: TLS certificate %s reloaded", config_.cert_file.c_str());
}

void TlsContext::StartReloads(std::chrono::milliseconds period) {
  AnnotatedLock lock(&reload_mu_);
  if (reloader_.joinable() || stop_reloads_) return;
  reloader_ = std::thread([self = shared_from_this(), period] {
    pthread_setname_np(pthread_self(), "ncclscope-tls");
    for (;;) {
      {
        AnnotatedLock lock(&self->reload_mu_);
        if (AnnotatedWaitFor(&self->reload_cv_, &self->reload_mu_, &self->stop_reloads_, absl::FromChrono(period))) {
          self->reloader_done_ = true;
          self->reload_cv_.SignalAll();
          return;
        }
      }
      self->ReloadIfChanged();
    }
  });
}

void TlsContext::StopReloads(std::chrono::milliseconds bound) {
  std::thread done;
  {
    AnnotatedLock lock(&reload_mu_);
    stop_reloads_ = true;
    if (!reloader_.joinable()) return;
    reload_cv_.SignalAll();
    if (!AnnotatedWaitFor(&reload_cv_, &reload_mu_, &reloader_done_, absl::FromChrono(bound))) {
      // A read stuck in the kernel (a hung network file system) cannot be interrupted: leave the thread to end
      // on its own. It holds the last reference to this context and frees it when it returns.
      NCCLSCOPE_WARN(subsys::kInit,
                     "metrics endpoint: a TLS certificate reload (%s) has not returned within %lld ms; "
                     "stopping without it",
                     config_.cert_file.c_str(), static_cast<long long>(bound.count()));
      PinThisLibrary();
      reloader_.detach();
      return;
    }
    done = std::move(reloader_);  // joined outside the lock, as before
  }
  done.join();
}

std::unique_ptr<TlsSession> TlsContext::NewSession(int fd) {
  const SslApi& api = Api();
  api.ERR_clear_error();
  void* ssl = nullptr;
  {
    AnnotatedLock lock(&ctx_mu_);
    ssl = api.SSL_new(ctx_);  // takes its own reference to the context
  }
  if (ssl == nullptr || api.SSL_set_fd(ssl, fd) != 1) {
    NCCLSCOPE_WARN(subsys::kInit, "metrics endpoint: no TLS session: %s", SslErrors("SSL_new failed").c_str());
    if (ssl != nullptr) api.SSL_free(ssl);
    return nullptr;
  }
  api.SSL_set_accept_state(ssl);
  return std::make_unique<TlsSession>(ssl);
}

// ---- TlsClientContext ----

Result<std::unique_ptr<TlsClientContext>> TlsClientContext::Create(const TlsClientFiles& files) {
  std::string error;
  if (LoadSsl(&error) == nullptr) return SystemError(error);
  Result<std::string> cas = std::string();
  if (!files.ca_file.empty()) cas = TlsContext::ReadFile("certificate", files.ca_file);
  if (!cas.ok()) return cas.status();
  Result<std::string> cert = std::string(), key = std::string();
  if (!files.cert_file.empty()) cert = TlsContext::ReadFile("client certificate", files.cert_file);
  if (!cert.ok()) return cert.status();
  if (!files.key_file.empty()) key = TlsContext::ReadFile("client key", files.key_file);
  if (!key.ok()) return key.status();

  const SslApi& api = Api();
  api.ERR_clear_error();
  void* ctx = api.SSL_CTX_new(api.TLS_client_method());
  if (ctx == nullptr) return SystemError("SSL_CTX_new: " + SslErrors("failed"));
  std::unique_ptr<TlsClientContext> client(new TlsClientContext(ctx));
  auto fail = [&](const std::string& what) -> Status {
    return InvalidUsage(what + ": " + SslErrors("no PEM certificate or key in it"));
  };
  if (files.ca_file.empty()) {
    if (api.SSL_CTX_set_default_verify_paths(ctx) != 1) return fail("the system's trust store");
  } else {
    void* store = api.SSL_CTX_get_cert_store(ctx);
    MemoryBio bio(*cas);
    int count = 0;
    auto next = [&]() -> void* {
      return bio.get() == nullptr ? nullptr : api.PEM_read_bio_X509(bio.get(), nullptr, &NoPassword, nullptr);
    };
    while (void* ca = next()) {
      const bool ok = api.X509_STORE_add_cert(store, ca) == 1;
      api.X509_free(ca);
      if (!ok) return fail("certificate " + files.ca_file);
      ++count;
    }
    if (count == 0) return fail("certificate " + files.ca_file);
    api.ERR_clear_error();
  }
  if (!files.cert_file.empty()) {
    if (!UseCertificateChain(ctx, *cert)) return fail("client certificate " + files.cert_file);
    if (!UsePrivateKey(ctx, *key)) return fail("client key " + files.key_file + " (an encrypted key is not supported)");
    if (api.SSL_CTX_check_private_key(ctx) != 1) {
      return fail("client key " + files.key_file + " does not match client certificate " + files.cert_file);
    }
  }
  api.SSL_CTX_ctrl(ctx, kCtrlSetMinProtoVersion, kTls12Version, nullptr);
  api.SSL_CTX_ctrl(ctx, kCtrlMode, kModeEnablePartialWrite | kModeAcceptMovingWriteBuffer, nullptr);
  api.SSL_CTX_set_options(ctx, kOpNoCompression | kOpNoRenegotiation);
  api.SSL_CTX_set_verify(ctx, kVerifyPeer, nullptr);
  return client;
}

TlsClientContext::~TlsClientContext() { Api().SSL_CTX_free(ctx_); }

Result<std::unique_ptr<TlsSession>> TlsClientContext::NewSession(int fd, const std::string& host) {
  const SslApi& api = Api();
  api.ERR_clear_error();
  void* ssl = api.SSL_new(ctx_);
  if (ssl == nullptr) return SystemError("SSL_new: " + SslErrors("failed"));
  auto session = std::make_unique<TlsSession>(ssl);
  // The peer's certificate must name `host`: as an IP address where it is one, else as a DNS name (SNI too).
  in6_addr ip{};
  const bool is_ip = inet_pton(AF_INET, host.c_str(), &ip) == 1 || inet_pton(AF_INET6, host.c_str(), &ip) == 1;
  const bool named = is_ip ? api.X509_VERIFY_PARAM_set1_ip_asc(api.SSL_get0_param(ssl), host.c_str()) == 1
                           : api.SSL_set1_host(ssl, host.c_str()) == 1 &&
                                 api.SSL_ctrl(ssl, kCtrlSetTlsextHostname, kTlsextNametypeHostName,
                                              const_cast<char*>(host.c_str())) == 1;
  if (!named || api.SSL_set_fd(ssl, fd) != 1) {
    return SystemError("TLS session for " + host + ": " + SslErrors("failed"));
  }
  api.SSL_set_connect_state(ssl);
  return session;
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

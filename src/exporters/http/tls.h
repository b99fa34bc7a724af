// TLS for the metrics endpoint, through OpenSSL 3 opened with dlopen (libssl.so.3, libcrypto.so.3) only when
// the web config asks for TLS: the plugin has no link-time dependency on OpenSSL (readelf -d shows no
// NEEDED entry for it), and no OpenSSL header is used: the few prototypes are declared in tls.cc with
// opaque pointers. The libraries, once opened, are never closed.
//  - TlsContext holds the server's SSL_CTX (certificate chain, key, client-certificate policy, protocol
//    versions), built from files read by ReadConfigFile (bounded, never a FIFO or a device) and handed to
//    OpenSSL from memory. Its reloader thread looks at the files' mtime, size and inode once a second and,
//    when they changed, builds a new SSL_CTX and swaps it in for new connections (a connection keeps the
//    context it started with). A new set that fails to load (a half-written key, a key that does not match
//    the certificate) keeps the old context and warns once per change.
//  - TlsSession is one connection's non-blocking server session over a non-blocking socket: every call
//    returns at once, with the poll() events it waits for when it cannot go on.
//  - TlsClientContext is the client side, for an https:// OTLP receiver: the peer's certificate verified against
//    the given CAs (or the system's trust store) and its name against the host; a client certificate if given.
// Sha256Hmac() is libcrypto's HMAC-SHA-256, for basic_auth's cache of verified credentials.
// Thread-safety: sessions belong to the server loop; NewSession and the reloader may run at once; Create,
// StartReloads and StopReloads come from the thread that starts and stops the server. Sha256Hmac is
// thread-safe.
#ifndef NCCLSCOPE_EXPORTERS_HTTP_TLS_H_
#define NCCLSCOPE_EXPORTERS_HTTP_TLS_H_

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "exporters/http/web_config.h"

namespace ncclscope {

class TlsSession {
 public:
  enum class Io { kOk, kWant, kClosed, kError };

  explicit TlsSession(void* ssl) : ssl_(ssl) {}
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // kOk when the handshake is done; kWant with want() = POLLIN or POLLOUT; kError with error().
  Io Handshake();
  // Reads up to n bytes: kOk with *got > 0, kWant, kClosed (close_notify or EOF), kError.
  Io Read(char* buf, size_t n, size_t* got);
  // Writes up to n bytes: kOk with *wrote > 0, kWant, kError.
  Io Write(const char* data, size_t n, size_t* wrote);
  // Sends our close_notify, best effort (never waits).
  void Shutdown();

  short want() const { return want_; }
  const std::string& error() const { return error_; }

 private:
  Io Map(int ret);

  void* ssl_;
  short want_ = 0;
  std::string error_;
};

class TlsContext : public std::enable_shared_from_this<TlsContext> {
 public:
  // Reads one file the config names ("cert_file", path); ReadFile by default. Tests inject a reader that
  // blocks, the one failure of a real file (a hung network file system) that cannot be made here.
  using FileReader = std::function<Result<std::string>(const char* key, const std::string& path)>;
  // ReadConfigFile with this cap: a PEM bundle of every public CA is about 220 KiB.
  static constexpr size_t kMaxTlsFileBytes = 1 << 20;
  static Result<std::string> ReadFile(const char* key, const std::string& path);

  // Loads OpenSSL and the files of `config`; an error names the library or the file and OpenSSL's reason.
  static Result<std::shared_ptr<TlsContext>> Create(const TlsServerConfig& config, FileReader reader = &ReadFile);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Re-reads the files when their mtime, size or inode changed, and swaps the new context in.
  void ReloadIfChanged();
  // Calls ReloadIfChanged every `period` on a thread of its own, so that a slow or stuck file never holds
  // the serving loop. StopReloads waits for that thread at most `bound`, then leaves it to finish alone
  // (with a warning): the server's Stop() is bounded whatever the files do. Once stopped, never restarted.
  void StartReloads(std::chrono::milliseconds period);
  void StopReloads(std::chrono::milliseconds bound);

  // A server session on `fd` with the newest context, or nullptr (with a warning) when OpenSSL refuses one.
  // Thread-safe against the reloads.
  std::unique_ptr<TlsSession> NewSession(int fd);

  int reloads() const { return reloads_.load(std::memory_order_relaxed); }  // contexts swapped in, for tests

 private:
  struct FileState {
    int64_t mtime_ns = 0;
    int64_t size = -1;
    uint64_t ino = 0;
    bool operator==(const FileState&) const = default;
  };
  struct Files {
    FileState cert, key, ca;
    bool operator==(const Files&) const = default;
  };

  TlsContext(const TlsServerConfig& config, FileReader reader) : config_(config), reader_(std::move(reader)) {}
  Files Stat() const;
  // A new SSL_CTX from the files, or an error.
  Result<void*> Build() const;

  const TlsServerConfig config_;
  const FileReader reader_;
  absl::Mutex ctx_mu_;
  void* ctx_ ABSL_GUARDED_BY(ctx_mu_) = nullptr;  // SSL_CTX*, ours; sessions hold their own reference
  // Used by Create, then by the reloader thread only:
  Files files_;   // the files ctx_ was built from
  Files failed_;  // the last set that failed to load (warned about once)
  bool has_failed_ = false;
  std::atomic<int> reloads_{0};

  absl::Mutex reload_mu_;
  absl::CondVar reload_cv_;
  std::thread reloader_ ABSL_GUARDED_BY(reload_mu_);
  bool stop_reloads_ ABSL_GUARDED_BY(reload_mu_) = false;
  bool reloader_done_ ABSL_GUARDED_BY(reload_mu_) = false;
};

// PEM files of a TLS client; empty where not given.
struct TlsClientFiles {
  std::string ca_file;    // the CAs the server's certificate must chain to; empty: the system's trust store
  std::string cert_file;  // a client certificate (mutual TLS), with key_file
  std::string key_file;
};

class TlsClientContext {
 public:
  // Loads OpenSSL and the files (through the same bounded reader); an error names the file and OpenSSL's reason.
  static Result<std::unique_ptr<TlsClientContext>> Create(const TlsClientFiles& files);
  ~TlsClientContext();
  TlsClientContext(const TlsClientContext&) = delete;
  TlsClientContext& operator=(const TlsClientContext&) = delete;

  // A client session on the connected socket `fd` to `host` (SNI, and the name its certificate must carry).
  Result<std::unique_ptr<TlsSession>> NewSession(int fd, const std::string& host);

 private:
  explicit TlsClientContext(void* ctx) : ctx_(ctx) {}
  void* const ctx_;  // SSL_CTX*
};

// HMAC-SHA-256 of `data` under `key` with libcrypto (opened on first use). False when libcrypto is missing.
bool Sha256Hmac(std::string_view key, std::string_view data, std::array<unsigned char, 32>* out);

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_HTTP_TLS_H_

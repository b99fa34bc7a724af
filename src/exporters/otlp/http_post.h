// One HTTP/1.1 POST with a deadline, for the OTLP push: a fresh connection per request (Connection: close),
// non-blocking connect, TLS handshake (https://), send and receive under poll(), so that no step outlives
// `deadline`. The host name is resolved at most once per HttpPoster (getaddrinfo has no timeout; a name that
// resolved once is reused, so that the last push at finalize never waits on DNS), and the TLS client context is
// built once. Not thread-safe: one owner thread.
#ifndef NCCLSCOPE_EXPORTERS_OTLP_HTTP_POST_H_
#define NCCLSCOPE_EXPORTERS_OTLP_HTTP_POST_H_

#include <netinet/in.h>

#include <chrono>
#include <memory>
#include <string>

#include "exporters/http/tls.h"
#include "exporters/otlp/otlp_config.h"

namespace ncclscope::otlp {

struct PostResult {
  int status = 0;        // the HTTP status, 0 when none came back
  std::string error;     // why it failed: the socket or TLS step, or the status line and the start of the body
  int retry_after_s = -1;  // the response's Retry-After in seconds, -1 when it had none
  bool config_error = false;  // DNS or the TLS files failed: another try would fail the same way
  bool ok() const { return status >= 200 && status < 300; }
  // Worth another try (the OTLP specification's transient failures): no answer at all (a connection refused or
  // cut, a timeout), 429 Too Many Requests, 502, 503, 504. Not a configuration error (DNS, TLS files).
  bool retryable() const;
};

class HttpPoster {
 public:
  HttpPoster(HttpUrl url, KeyValues headers, OtlpTls tls)
      : url_(std::move(url)), headers_(std::move(headers)), tls_files_(std::move(tls)) {}

  // `content_encoding` empty: none.
  PostResult Post(const std::string& content_type, const std::string& content_encoding, const std::string& body,
                  std::chrono::steady_clock::time_point deadline);

 private:
  bool Resolve(std::string* why);
  bool PrepareTls(std::string* why);

  HttpUrl url_;
  KeyValues headers_;
  OtlpTls tls_files_;
  std::unique_ptr<TlsClientContext> tls_;
  bool resolved_ = false;
  sockaddr_in addr_{};
};

}  // namespace ncclscope::otlp

#endif  // NCCLSCOPE_EXPORTERS_OTLP_HTTP_POST_H_

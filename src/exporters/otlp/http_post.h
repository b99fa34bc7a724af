// One HTTP/1.1 POST with a deadline, for the OTLP push: a fresh connection per request (Connection: close),
// non-blocking connect, send and receive under poll(), so that no step outlives `deadline`. Plain http only.
// The host name is resolved at most once per HttpPoster (getaddrinfo has no timeout; a name that resolved once
// is reused, so that the last push at finalize never waits on DNS). Not thread-safe: one owner thread.
#ifndef NCCLSCOPE_EXPORTERS_OTLP_HTTP_POST_H_
#define NCCLSCOPE_EXPORTERS_OTLP_HTTP_POST_H_

#include <netinet/in.h>

#include <chrono>
#include <string>

#include "exporters/otlp/otlp_config.h"

namespace ncclscope::otlp {

struct PostResult {
  int status = 0;     // the HTTP status, 0 when none came back
  std::string error;  // why it failed: the socket step, or the status line and the start of the body
  bool ok() const { return status >= 200 && status < 300; }
};

class HttpPoster {
 public:
  HttpPoster(HttpUrl url, KeyValues headers) : url_(std::move(url)), headers_(std::move(headers)) {}

  PostResult Post(const std::string& content_type, const std::string& body,
                  std::chrono::steady_clock::time_point deadline);

 private:
  bool Resolve(std::string* why);

  HttpUrl url_;
  KeyValues headers_;
  bool resolved_ = false;
  sockaddr_in addr_{};
};

}  // namespace ncclscope::otlp

#endif  // NCCLSCOPE_EXPORTERS_OTLP_HTTP_POST_H_

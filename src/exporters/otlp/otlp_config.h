// What the OTLP push is configured with (docs/otlp.md): the standard OpenTelemetry variables, each with an
// NCCLSCOPE_OTLP_* override (common/param_list.inc holds both names), read from Params(); a per-signal variable
// (OTEL_EXPORTER_OTLP_METRICS_*) wins over its general one. Off unless an endpoint is set. http:// and https://
// URLs, protocol http/protobuf only; anything unusable is a warning naming the variable and the push stays off,
// or the entry is skipped.
#ifndef NCCLSCOPE_EXPORTERS_OTLP_OTLP_CONFIG_H_
#define NCCLSCOPE_EXPORTERS_OTLP_OTLP_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/process_identity.h"

namespace ncclscope::otlp {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// An http:// or https:// URL taken apart.
struct HttpUrl {
  bool https = false;
  std::string host;  // name or IPv4 address
  int port = 80;     // 443 for https unless given
  std::string path;  // starts with '/'
  std::string text;  // as given, for messages
};

// "http[s]://host[:port][/path]"; nullopt, with `*why`, for anything else (another scheme, no host, a bad port).
std::optional<HttpUrl> ParseHttpUrl(const std::string& text, std::string* why);

// The W3C-baggage-like "k=v,k=v" of OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES: whitespace
// around keys and values trimmed, values percent-decoded. An entry without '=' or with an empty key is
// skipped and named in `*skipped` (comma-separated).
KeyValues ParseKeyValueList(const std::string& text, std::string* skipped);

// The TLS side of an https:// receiver: PEM files, empty where not given (the system's trust store; no client
// certificate).
struct OtlpTls {
  std::string ca_file;
  std::string client_cert_file;
  std::string client_key_file;
};

struct OtlpConfig {
  HttpUrl url;             // where to POST
  KeyValues headers;       // extra request headers (e.g. authorization)
  bool gzip = false;       // Content-Encoding: gzip
  OtlpTls tls;             // for an https:// url
  int64_t interval_ms = 0;
  int64_t timeout_ms = 0;
  KeyValues resource;      // service.name first, then the user's attributes, then the identity
};

// The configuration from Params() and `identity`; nullopt when no endpoint is set or the URL is unusable
// (warned). The identity labels (common/process_identity.h) join the resource under their Prometheus names,
// unless OTEL_RESOURCE_ATTRIBUTES sets that key; service.name is OTEL_SERVICE_NAME, else the one of
// OTEL_RESOURCE_ATTRIBUTES, else "ncclscope".
std::optional<OtlpConfig> OtlpConfigFromParams(const ProcessIdentity& identity);

}  // namespace ncclscope::otlp

#endif  // NCCLSCOPE_EXPORTERS_OTLP_OTLP_CONFIG_H_

#include "exporters/otlp/otlp_config.h"

#include <algorithm>
#include <cctype>

#include "common/log.h"
#include "common/params.h"

namespace ncclscope::otlp {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoded; a '%' not followed by two hex digits is kept as it is.
std::string PercentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 && HexDigit(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool HasKey(const KeyValues& kvs, const std::string& key) {
  return std::any_of(kvs.begin(), kvs.end(), [&](const auto& kv) { return kv.first == key; });
}

// The metrics URL: NCCLSCOPE_OTLP_METRICS_ENDPOINT / OTEL_EXPORTER_OTLP_METRICS_ENDPOINT as given, else
// NCCLSCOPE_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/metrics" (the spec's rule for the base URL).
std::string MetricsUrl(const ParamValues& params, std::string* var) {
  const std::string& full = params.Str(ParamId::kOtlpMetricsEndpoint);
  if (!full.empty()) {
    *var = params.SourceVar(ParamId::kOtlpMetricsEndpoint);
    return full;
  }
  std::string base = params.Str(ParamId::kOtlpEndpoint);
  *var = params.SourceVar(ParamId::kOtlpEndpoint);
  if (base.empty()) return "";
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/v1/metrics";
}

// The metrics-specific string parameter where set, else the general one; *var names the one used.
std::string PerSignal(const ParamValues& params, ParamId metrics, ParamId general, std::string* var) {
  const ParamId id = params.IsSet(metrics) ? metrics : general;
  *var = params.SourceVar(id);
  return params.Str(id);
}

// Lowercased, whitespace trimmed: the protocol and compression values are case-insensitive.
std::string Folded(std::string s) {
  s = Trim(s);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::optional<HttpUrl> ParseHttpUrl(const std::string& text, std::string* why) {
  HttpUrl url;
  url.https = text.rfind("https://", 0) == 0;
  if (!url.https && text.rfind("http://", 0) != 0) {
    *why = "not an http:// or https:// URL";
    return std::nullopt;
  }
  url.port = url.https ? 443 : 80;
  url.text = text;
  const std::string rest = text.substr(url.https ? 8 : 7);
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  url.path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (authority.find('@') != std::string::npos || authority.find('[') != std::string::npos) {
    *why = "user info and IPv6 literals are not supported";
    return std::nullopt;
  }
  const size_t colon = authority.find(':');
  url.host = authority.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string port = authority.substr(colon + 1);
    int64_t p = 0;
    if (port.empty() || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        !ParseInt(port.c_str(), &p) || p < 1 || p > 65535) {
      *why = "bad port '" + port + "'";
      return std::nullopt;
    }
    url.port = static_cast<int>(p);
  }
  if (url.host.empty()) {
    *why = "no host";
    return std::nullopt;
  }
  return url;
}

KeyValues ParseKeyValueList(const std::string& text, std::string* skipped) {
  KeyValues out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string entry = text.substr(start, comma - start);
    start = comma + 1;
    if (Trim(entry).empty()) continue;
    const size_t eq = entry.find('=');
    const std::string key = eq == std::string::npos ? "" : Trim(PercentDecode(entry.substr(0, eq)));
    if (key.empty()) {
      if (!skipped->empty()) *skipped += ", ";
      *skipped += "'" + Trim(entry) + "'";
      continue;
    }
    out.emplace_back(key, Trim(PercentDecode(entry.substr(eq + 1))));
  }
  return out;
}

std::optional<OtlpConfig> OtlpConfigFromParams(const ProcessIdentity& identity) {
  const ParamValues& params = Params();
  std::string var;
  const std::string url_text = MetricsUrl(params, &var);
  if (url_text.empty()) return std::nullopt;
  OtlpConfig config;
  std::string why;
  std::optional<HttpUrl> url = ParseHttpUrl(url_text, &why);
  if (!url) {
    NCCLSCOPE_WARN(subsys::kInit, "%s: metrics URL '%s': %s; OTLP metrics push off", var.c_str(), url_text.c_str(),
                   why.c_str());
    return std::nullopt;
  }
  config.url = *url;
  const std::string protocol =
      Folded(PerSignal(params, ParamId::kOtlpMetricsProtocol, ParamId::kOtlpProtocol, &var));
  if (protocol != "http/protobuf") {
    NCCLSCOPE_WARN(subsys::kInit, "%s='%s': ncclscope pushes OTLP over http/protobuf only (not grpc or http/json); "
                   "OTLP metrics push off", var.c_str(), protocol.c_str());
    return std::nullopt;
  }
  const std::string compression =
      Folded(PerSignal(params, ParamId::kOtlpMetricsCompression, ParamId::kOtlpCompression, &var));
  config.gzip = compression == "gzip";
  if (!config.gzip && compression != "none" && !compression.empty()) {
    NCCLSCOPE_WARN(subsys::kInit, "%s='%s' is neither gzip nor none: pushing uncompressed", var.c_str(),
                   compression.c_str());
  }
  config.tls.ca_file = PerSignal(params, ParamId::kOtlpMetricsCertificate, ParamId::kOtlpCertificate, &var);
  config.tls.client_cert_file =
      PerSignal(params, ParamId::kOtlpMetricsClientCertificate, ParamId::kOtlpClientCertificate, &var);
  config.tls.client_key_file = PerSignal(params, ParamId::kOtlpMetricsClientKey, ParamId::kOtlpClientKey, &var);
  if (config.tls.client_cert_file.empty() != config.tls.client_key_file.empty()) {
    NCCLSCOPE_WARN(subsys::kInit, "OTLP: a client certificate needs its key and a key its certificate "
                   "(OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_KEY); OTLP metrics push off");
    return std::nullopt;
  }
  config.interval_ms = params.Int(ParamId::kOtlpIntervalMs);
  config.timeout_ms = params.Int(params.IsSet(ParamId::kOtlpMetricsTimeoutMs) ? ParamId::kOtlpMetricsTimeoutMs
                                                                               : ParamId::kOtlpTimeoutMs);

  // The general headers, then the metrics ones, which replace a general one of the same key.
  std::string skipped;
  for (ParamId id : {ParamId::kOtlpHeaders, ParamId::kOtlpMetricsHeaders}) {
    for (auto& kv : ParseKeyValueList(params.Str(id), &skipped)) {
      std::erase_if(config.headers, [&](const auto& h) { return Folded(h.first) == Folded(kv.first); });
      config.headers.push_back(std::move(kv));
    }
    if (!skipped.empty()) {
      NCCLSCOPE_WARN(subsys::kInit, "%s: skipping %s (not key=value)", params.SourceVar(id).c_str(),
                     skipped.c_str());
    }
    skipped.clear();
  }
  KeyValues user = ParseKeyValueList(params.Str(ParamId::kOtlpResourceAttributes), &skipped);
  if (!skipped.empty()) {
    NCCLSCOPE_WARN(subsys::kInit, "%s: skipping %s (not key=value)",
                   params.SourceVar(ParamId::kOtlpResourceAttributes).c_str(), skipped.c_str());
  }
  // service.name: OTEL_SERVICE_NAME wins over OTEL_RESOURCE_ATTRIBUTES (the spec's precedence).
  std::string service = params.Str(ParamId::kOtlpServiceName);
  if (!params.IsSet(ParamId::kOtlpServiceName)) {
    for (const auto& [k, v] : user) {
      if (k == "service.name" && !v.empty()) service = v;
    }
  }
  config.resource.emplace_back("service.name", service);
  for (auto& kv : user) {
    if (kv.first != "service.name" && !HasKey(config.resource, kv.first)) config.resource.push_back(std::move(kv));
  }
  for (auto& kv : identity.Labels()) {
    if (!HasKey(config.resource, kv.first)) config.resource.push_back(std::move(kv));
  }
  return config;
}

}  // namespace ncclscope::otlp

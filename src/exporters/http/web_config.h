// The metrics endpoint's web config file (NCCLSCOPE_PROM_WEB_CONFIG), in the schema Prometheus exporters
// use (exporter-toolkit's web config):
//   tls_server_config: {cert_file, key_file, client_auth_type, client_ca_file, min_version, max_version}
//   basic_auth_users:  {<user>: <bcrypt hash>}
//   http_server_config: {http2 (accepted and ignored: the endpoint speaks HTTP/1.1), headers (sent with every
//                        response; the names and values exporter-toolkit allows, others refused)}
// The file is YAML in exporter-toolkit. We read the subset those files use with a parser of our own:
// block mappings nested by indentation (spaces), plain, 'single'- and "double"-quoted scalars, comments,
// `{}` for an empty map, `---`/`...` document markers. A file whose first character (after comments) is
// `{` is read as JSON instead. Anything else (lists, anchors, block scalars, flow collections) is an
// error, as is an unknown key, a key exporter-toolkit knows that we do not implement (cipher_suites, …),
// or a tls_server_config without a cert_file and key_file: the endpoint never serves plain HTTP when the
// file asked for TLS. Every error names the file, the line and the key. Relative paths in the file are
// relative to the file's directory, as in exporter-toolkit.
#ifndef NCCLSCOPE_EXPORTERS_HTTP_WEB_CONFIG_H_
#define NCCLSCOPE_EXPORTERS_HTTP_WEB_CONFIG_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ncclscope {

enum class ClientAuth {
  kNone,              // NoClientCert
  kRequest,           // RequestClientCert: asked for, not verified
  kRequireAny,        // RequireAnyClientCert: required, not verified
  kVerifyIfGiven,     // VerifyClientCertIfGiven
  kRequireAndVerify,  // RequireAndVerifyClientCert
};

struct TlsServerConfig {
  std::string cert_file;  // PEM, the leaf first, then its chain
  std::string key_file;   // PEM
  ClientAuth client_auth = ClientAuth::kNone;
  std::string client_ca_file;  // needed by the two Verify… policies
  int min_version = 0x0303;    // TLS 1.2, exporter-toolkit's default
  int max_version = 0;         // 0 = the newest the library has
};

struct WebConfig {
  bool tls = false;  // tls_server_config present
  TlsServerConfig tls_config;
  std::map<std::string, std::string> users;  // user -> bcrypt hash; empty = no basic auth
  std::vector<std::pair<std::string, std::string>> headers;  // http_server_config.headers, in file order
};

// Parses `text` as the content of the file `file` (used in messages and to resolve relative paths).
Result<WebConfig> ParseWebConfig(const std::string& text, const std::string& file);
// Reads and parses `file`.
Result<WebConfig> LoadWebConfig(const std::string& file);

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_HTTP_WEB_CONFIG_H_

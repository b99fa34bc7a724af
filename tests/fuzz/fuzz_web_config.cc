// ParseWebConfig on arbitrary text: the YAML subset reader and the JSON reader (a text starting with `{`).
// Besides ASan/UBSan, checks the promise of web_config.h that a parsed config never asks for TLS without
// the files to serve it (fail closed).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "exporters/http/web_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // A directory that does not exist: relative paths resolve against it and nothing is ever read.
  ncclscope::Result<ncclscope::WebConfig> config = ncclscope::ParseWebConfig(text, "/nonexistent/fuzz.yml");
  if (config.ok() && config->tls && (config->tls_config.cert_file.empty() || config->tls_config.key_file.empty())) {
    abort();  // TLS asked for, and nothing to serve it with: the endpoint would have to serve plain HTTP
  }
  return 0;
}

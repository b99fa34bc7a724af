// What a scraper's request headers hold, fed to the endpoint's negotiation (src/exporters/http/media_types.cc):
// the bytes up to the first NUL are an Accept value, the rest an Accept-Encoding value. Besides ASan/UBSan,
// checks that every quality is within [0, 1], that a value that names nothing about gzip never allows it, and the
// Connection token reader on the first part.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "exporters/http/media_types.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view accept = input.substr(0, nul);
  const std::string_view encoding = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  for (std::string_view type : {"application/openmetrics-text", "text/plain", "text/html"}) {
    const double q = ncclscope::MediaTypeQuality(accept, type);
    if (!(q >= 0 && q <= 1)) abort();
  }
  const bool gzip = ncclscope::AcceptsGzip(encoding);
  if (gzip && encoding.find_first_of("gGxX*") == std::string_view::npos) abort();
  // The Connection value: "close" is listed only where its letters are.
  if (ncclscope::ListsToken(accept, "close") && accept.find_first_of("eE") == std::string_view::npos) abort();
  return 0;
}

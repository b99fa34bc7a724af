// Content negotiation from the request headers (RFC 9110 12.5): the quality a client gives a media type in
// Accept, whether it takes gzip in Accept-Encoding, and whether a token list (Connection) names a token.
// Lenient: a malformed entry counts as absent.
#ifndef NCCLSCOPE_EXPORTERS_HTTP_MEDIA_TYPES_H_
#define NCCLSCOPE_EXPORTERS_HTTP_MEDIA_TYPES_H_

#include <string_view>

namespace ncclscope {

// The q value (0..1) `accept` gives `type` ("text/plain"): from its most specific matching range (the type
// itself, then "text/*", then "*/*"; parameters such as version= are not compared), 1 when `accept` is empty
// (no Accept header accepts anything), 0 when nothing matches.
double MediaTypeQuality(std::string_view accept, std::string_view type);

// Whether `accept_encoding` allows gzip ("gzip", "x-gzip" or "*" with q > 0, gzip not refused with q=0).
bool AcceptsGzip(std::string_view accept_encoding);

// Whether the comma-separated header value `list` names `token` (case-insensitive; parameters ignored), as
// "Connection: keep-alive, close" names close.
bool ListsToken(std::string_view list, std::string_view token);

}  // namespace ncclscope

#endif  // NCCLSCOPE_EXPORTERS_HTTP_MEDIA_TYPES_H_

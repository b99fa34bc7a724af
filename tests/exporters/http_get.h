// A minimal blocking HTTP/1.0 GET over loopback for tests: real sockets, no client library.
#ifndef NCCLSCOPE_TESTS_EXPORTERS_HTTP_GET_H_
#define NCCLSCOPE_TESTS_EXPORTERS_HTTP_GET_H_

#include <string>

namespace ncclscope::testing {

// Returns the response body, or an empty string with `*status` < 0 when the connection fails.
std::string HttpGet(int port, const std::string& path, int* status);

}  // namespace ncclscope::testing

#endif  // NCCLSCOPE_TESTS_EXPORTERS_HTTP_GET_H_

// Reads a communicator dump (ncclscope.comm.v2, docs/dump-format.md) in tests: the gzip members inflated one
// by one, the summary alone (inflation stops at the first member's end, as an analyzer does for every rank),
// and the whole dump as one document shaped like v1 so that assertions on v1 dumps carry over.
#ifndef NCCLSCOPE_TESTS_SUPPORT_DUMP_READER_H_
#define NCCLSCOPE_TESTS_SUPPORT_DUMP_READER_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace ncclscope::testing {

// Every gzip member of `bytes`, inflated; empty on a damaged stream (and *error says why, when given).
std::vector<std::string> InflateMembers(const std::string& bytes, std::string* error = nullptr);
// The first member only: inflation stops at its end; the bytes after it are never looked at.
std::string InflateFirstMember(const std::string& bytes);
std::string ReadBinaryFile(const std::string& path);

// Member 1 of the dump at `path`, with member 2's records at ["flight_recorder"]["completed"] and member 1's
// "in_flight" copied to ["flight_recorder"]["in_flight"]. A discarded json value when the file is missing or
// not two members of JSON.
nlohmann::json ReadDump(const std::string& path);

}  // namespace ncclscope::testing

#endif  // NCCLSCOPE_TESTS_SUPPORT_DUMP_READER_H_

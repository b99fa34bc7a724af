#include "dump_reader.h"

#include <zlib.h>

#include <fstream>
#include <sstream>

namespace ncclscope::testing {
namespace {

// Inflates one gzip member starting at bytes[*pos]; advances *pos past it. False on a damaged member.
bool InflateOne(const std::string& bytes, size_t* pos, std::string* out, std::string* error) {
  z_stream zs = {};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return false;  // gzip wrapper only
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + *pos));
  zs.avail_in = static_cast<uInt>(bytes.size() - *pos);
  char buf[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof(buf);
    rc = inflate(&zs, Z_NO_FLUSH);  // stops at the member's end: Z_STREAM_END
    out->append(buf, sizeof(buf) - zs.avail_out);
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;  // truncated
  }
  *pos += zs.total_in;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END && error != nullptr) *error = "inflate: " + std::to_string(rc);
  return rc == Z_STREAM_END;
}

}  // namespace

std::vector<std::string> InflateMembers(const std::string& bytes, std::string* error) {
  std::vector<std::string> members;
  size_t pos = 0;
  while (pos < bytes.size()) {
    std::string m;
    if (!InflateOne(bytes, &pos, &m, error)) return {};
    members.push_back(std::move(m));
  }
  return members;
}

std::string InflateFirstMember(const std::string& bytes) {
  size_t pos = 0;
  std::string m;
  return InflateOne(bytes, &pos, &m, nullptr) ? m : std::string();
}

std::string ReadBinaryFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json ReadDump(const std::string& path) {
  std::vector<std::string> members = InflateMembers(ReadBinaryFile(path));
  if (members.size() != 2) return nlohmann::json(nlohmann::json::value_t::discarded);
  nlohmann::json summary = nlohmann::json::parse(members[0], nullptr, false);
  nlohmann::json recorder = nlohmann::json::parse(members[1], nullptr, false);
  if (!summary.is_object() || !recorder.is_object()) return nlohmann::json(nlohmann::json::value_t::discarded);
  summary["flight_recorder"]["completed"] = recorder.value("completed", nlohmann::json::array());
  summary["flight_recorder"]["in_flight"] = summary.value("in_flight", nlohmann::json::array());
  return summary;
}

}  // namespace ncclscope::testing

// A tiny protobuf wire-format reader for the OTLP tests: enough to take an ExportMetricsServiceRequest apart
// by field number and check what the encoder wrote, with no protobuf library (none is a dependency).
#ifndef NCCLSCOPE_TESTS_EXPORTERS_OTLP_WIRE_H_
#define NCCLSCOPE_TESTS_EXPORTERS_OTLP_WIRE_H_

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace ncclscope::otlp::testing {

struct WireField {
  uint32_t number = 0;
  uint32_t type = 0;     // 0 varint, 1 fixed64, 2 length-delimited
  uint64_t value = 0;    // varint or fixed64
  std::string bytes;     // length-delimited
  double AsDouble() const {
    double d;
    std::memcpy(&d, &value, sizeof d);
    return d;
  }
};

inline uint64_t ReadVarint(const std::string& s, size_t* at) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*at >= s.size()) throw std::runtime_error("truncated varint");
    const auto byte = static_cast<uint8_t>(s[(*at)++]);
    v |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return v;
  }
  throw std::runtime_error("varint too long");
}

inline uint64_t ReadFixed64(const std::string& s, size_t* at) {
  if (*at + 8 > s.size()) throw std::runtime_error("truncated fixed64");
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(s[*at + i])} << (8 * i);
  *at += 8;
  return v;
}

// Every field of one message, in order; throws on anything malformed or a wire type the encoder never writes.
inline std::vector<WireField> Decode(const std::string& s) {
  std::vector<WireField> out;
  size_t at = 0;
  while (at < s.size()) {
    const uint64_t key = ReadVarint(s, &at);
    WireField f;
    f.number = static_cast<uint32_t>(key >> 3);
    f.type = static_cast<uint32_t>(key & 7);
    if (f.number == 0) throw std::runtime_error("field number 0");
    if (f.type == 0) {
      f.value = ReadVarint(s, &at);
    } else if (f.type == 1) {
      f.value = ReadFixed64(s, &at);
    } else if (f.type == 2) {
      const uint64_t n = ReadVarint(s, &at);
      if (n > s.size() - at) throw std::runtime_error("length past the end");
      f.bytes = s.substr(at, n);
      at += n;
    } else {
      throw std::runtime_error("unexpected wire type " + std::to_string(f.type));
    }
    out.push_back(std::move(f));
  }
  return out;
}

inline std::vector<WireField> All(const std::vector<WireField>& fields, uint32_t number) {
  std::vector<WireField> out;
  for (const WireField& f : fields) {
    if (f.number == number) out.push_back(f);
  }
  return out;
}

// The one field `number`; throws when it is absent or repeated.
inline WireField One(const std::vector<WireField>& fields, uint32_t number) {
  std::vector<WireField> all = All(fields, number);
  if (all.size() != 1) {
    throw std::runtime_error("field " + std::to_string(number) + " present " + std::to_string(all.size()) + "x");
  }
  return all[0];
}

inline bool Has(const std::vector<WireField>& fields, uint32_t number) { return !All(fields, number).empty(); }

// KeyValue{1: key, 2: AnyValue{1: string_value}} fields as (key, value) pairs.
inline std::vector<std::pair<std::string, std::string>> StringAttributes(const std::vector<WireField>& fields,
                                                                         uint32_t number) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const WireField& kv : All(fields, number)) {
    const std::vector<WireField> parts = Decode(kv.bytes);
    out.emplace_back(One(parts, 1).bytes, One(Decode(One(parts, 2).bytes), 1).bytes);
  }
  return out;
}

// A packed repeated fixed64 or double.
inline std::vector<uint64_t> Packed64(const std::string& bytes) {
  if (bytes.size() % 8 != 0) throw std::runtime_error("packed run not a multiple of 8 bytes");
  std::vector<uint64_t> out;
  for (size_t at = 0; at < bytes.size();) out.push_back(ReadFixed64(bytes, &at));
  return out;
}

}  // namespace ncclscope::otlp::testing

#endif  // NCCLSCOPE_TESTS_EXPORTERS_OTLP_WIRE_H_

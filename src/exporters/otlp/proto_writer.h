// The few protobuf wire-format primitives the OTLP encoder needs (varints, fixed64, doubles, length-delimited
// fields), written by hand so that the plugin links no protobuf library. A nested message is built in a
// writer of its own and appended with its length.
#ifndef NCCLSCOPE_EXPORTERS_OTLP_PROTO_WRITER_H_
#define NCCLSCOPE_EXPORTERS_OTLP_PROTO_WRITER_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ncclscope::otlp {

// The wire types of the protobuf encoding.
enum class WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

class ProtoWriter {
 public:
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void Tag(uint32_t field, WireType type) { Varint((uint64_t{field} << 3) | static_cast<uint32_t>(type)); }

  // Little-endian, as the wire format wants whatever the host's order.
  void RawFixed64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  void RawDouble(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    RawFixed64(bits);
  }

  void VarintField(uint32_t field, uint64_t v) {
    Tag(field, WireType::kVarint);
    Varint(v);
  }
  void Fixed64Field(uint32_t field, uint64_t v) {
    Tag(field, WireType::kFixed64);
    RawFixed64(v);
  }
  void DoubleField(uint32_t field, double d) {
    Tag(field, WireType::kFixed64);
    RawDouble(d);
  }
  void BytesField(uint32_t field, std::string_view bytes) {
    Tag(field, WireType::kLengthDelimited);
    Varint(bytes.size());
    out_.append(bytes);
  }
  // A nested message: `inner`'s bytes, length-prefixed.
  void MessageField(uint32_t field, const ProtoWriter& inner) { BytesField(field, inner.out_); }

  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }
  void Clear() { out_.clear(); }

 private:
  std::string out_;
};

}  // namespace ncclscope::otlp

#endif  // NCCLSCOPE_EXPORTERS_OTLP_PROTO_WRITER_H_

#include "common/gzip_member.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace ncclscope {

Status AppendGzipMember(std::string_view text, std::string* out) {
  z_stream zs = {};
  // windowBits 15 + 16: a gzip wrapper instead of zlib's; level 6, zlib's own default trade-off.
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return SystemError("deflateInit2 failed");
  }
  const size_t start = out->size();
  out->resize(start + deflateBound(&zs, text.size()) + 64);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.next_out = reinterpret_cast<Bytef*>(out->data() + start);
  zs.avail_out = static_cast<uInt>(std::min<size_t>(out->size() - start, UINT_MAX));
  size_t left = text.size();
  int rc = Z_OK;
  while (rc == Z_OK) {
    // avail_in is 32-bit: feed very large texts in pieces.
    if (zs.avail_in == 0 && left > 0) {
      zs.avail_in = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
      left -= zs.avail_in;
    }
    if (zs.avail_out == 0) {  // deflateBound is an upper bound, but stay safe if it is ever not
      const size_t used = out->size() - start;
      out->resize(out->size() + 65536);
      zs.next_out = reinterpret_cast<Bytef*>(out->data() + start + used);
      zs.avail_out = 65536;
    }
    rc = deflate(&zs, left == 0 ? Z_FINISH : Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR) rc = Z_OK;  // no progress possible this round: the loop grows the buffer
  }
  const size_t produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    out->resize(start);
    return SystemError("deflate failed (" + std::to_string(rc) + ")");
  }
  out->resize(start + produced);
  return Status::Ok();
}

}  // namespace ncclscope

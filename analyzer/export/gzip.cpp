// SPDX-License-Identifier: Apache-2.0
#include "analyzer/export/gzip.h"

#include <zlib.h>

#include <cstdint>
#include <stdexcept>

namespace gmt::analyzer {

std::string gzip(std::string_view data) {
  // One deflate call takes at most 4 GiB (uInt); a profile is far smaller.
  if (data.size() > UINT32_MAX) throw std::runtime_error("gzip: input over 4 GiB");
  z_stream z{};
  // 15 + 16: the largest window, with a gzip header and trailer rather than zlib's.
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip: deflateInit2 failed");
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&z, Z_FINISH);
  const std::string message = z.msg != nullptr ? z.msg : "";
  out.resize(z.total_out);
  deflateEnd(&z);
  if (status != Z_STREAM_END) throw std::runtime_error("gzip: deflate failed: " + message);
  return out;
}

}  // namespace gmt::analyzer

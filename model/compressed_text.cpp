#include "model/compressed_text.h"

#include <zlib.h>

namespace perfloom {

namespace {
constexpr int kGzipWindow = 15 + 16;  // zlib: windowBits 15, +16 for a gzip header and trailer
}

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip_if_compressed(std::string_view bytes, const std::string& label, std::size_t max_bytes) {
  if (!is_gzip(bytes)) {
    if (bytes.size() > max_bytes)
      throw CompressedTextTooLarge(label + ": more than " + std::to_string(max_bytes) + " bytes");
    return std::string(bytes);
  }
  std::string out;
  z_stream zs{};
  if (inflateInit2(&zs, kGzipWindow) != Z_OK) throw CompressedTextError(label + ": cannot start zlib");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  zs.avail_in = static_cast<uInt>(bytes.size());
  char buf[1 << 16];
  int rc = Z_OK;
  while (true) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    const std::size_t got = sizeof buf - zs.avail_out;
    if (got > max_bytes - out.size()) {
      inflateEnd(&zs);
      throw CompressedTextTooLarge(label + ": inflates to more than " + std::to_string(max_bytes) + " bytes");
    }
    out.append(buf, got);
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // another gzip member follows
      continue;
    }
    if (rc != Z_OK) break;
    if (zs.avail_in == 0 && zs.avail_out != 0) {  // input ended inside the stream
      rc = Z_BUF_ERROR;
      break;
    }
  }
  const std::string reason =
      zs.msg ? zs.msg : (rc == Z_BUF_ERROR ? "the stream is cut short" : "zlib error " + std::to_string(rc));
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) throw CompressedTextError(label + ": corrupt gzip data (" + reason + ")");
  return out;
}

std::string gzip_text(std::string_view text) {
  z_stream zs{};
  if (deflateInit2(&zs, 9, Z_DEFLATED, kGzipWindow, 9, Z_DEFAULT_STRATEGY) != Z_OK)
    throw CompressedTextError("cannot start zlib");
  std::string out(deflateBound(&zs, static_cast<uLong>(text.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(out.size() - zs.avail_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw CompressedTextError("gzip failed (zlib error " + std::to_string(rc) + ")");
  return out;
}

}  // namespace perfloom

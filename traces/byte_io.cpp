// @brief Bounds-checked varint decoding and a table-driven CRC-32.
#include "traces/byte_io.h"

#include <array>

#include "core/error.h"

namespace hisparse::traces {

void ByteReader::fail(const char* msg) const { throw_error("{}: {}", what_ ? *what_ : std::string("trace"), msg); }

uint8_t ByteReader::byte() {
  if (p_ == end_) fail("record ends early (corrupt or truncated data)");
  return *p_++;
}

uint64_t ByteReader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p_ == end_) fail("record ends inside a varint (corrupt or truncated data)");
    const uint8_t b = *p_++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      if (shift == 63 && b > 1) break;
      return v;
    }
  }
  fail("malformed varint (longer than 64 bits)");
}

uint64_t ByteReader::varint_max(uint64_t limit, const char* field) {
  const uint64_t v = varint();
  if (v > limit) throw_error("{}: {} = {} exceeds the limit {}", what_ ? *what_ : std::string("trace"), field, v, limit);
  return v;
}

namespace {
std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
}  // namespace

uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc) {
  static const std::array<uint32_t, 256> table = make_crc_table();
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

}  // namespace hisparse::traces

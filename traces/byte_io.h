// @brief Little-endian fixed-width and LEB128 varint encoding with bounds-checked decoding, and CRC-32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hisparse::traces {

inline void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline uint32_t get_u32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
inline uint64_t get_u64(const uint8_t* p) { return uint64_t{get_u32(p)} | (uint64_t{get_u32(p + 4)} << 32); }

inline void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}
inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

/// Reads from a bounded buffer; every read past the end or malformed varint throws hisparse::Error naming
/// `what` (set by the caller to the chunk being decoded).
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size, const std::string* what) : p_(data), end_(data + size), what_(what) {}
  uint64_t varint();
  /// A varint that must be <= limit (the caller's notion of a sane value); `field` names it in the error.
  uint64_t varint_max(uint64_t limit, const char* field);
  uint8_t byte();
  bool done() const { return p_ == end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  [[noreturn]] void fail(const char* msg) const;
  const uint8_t* p_;
  const uint8_t* end_;
  const std::string* what_;
};

/// CRC-32 (IEEE 802.3 polynomial, reflected, as zlib's crc32) of `size` bytes, continuing from `crc`.
uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc = 0);

}  // namespace hisparse::traces

// @brief Minimal `.npy` header reader/writer: C-order little-endian int32/int64 arrays, format v1/v2/v3 headers.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace hisparse::traces {

struct NpyHeader {
  int32_t itemsize = 4;          // 4 = '<i4', 8 = '<i8'
  std::vector<int64_t> shape;    // C order
  uint64_t data_offset = 0;      // bytes before the first element
  int64_t elements() const;      // product of shape (checked against the file size when parsed)
};

/// Reads and checks the header of the file `in` (of `file_size` bytes): magic, version, dict, dtype, order, and
/// that the data that the shape implies is exactly what the file holds. Errors name `path`.
NpyHeader read_npy_header(std::istream& in, const std::string& path, uint64_t file_size);

/// The header numpy 1.x `np.save` writes (v1, keys sorted, growth padding, 64-byte alignment), so files written
/// here are byte-identical to numpy's for the same array.
std::string format_npy_header(int32_t itemsize, const std::vector<int64_t>& shape);

}  // namespace hisparse::traces

// @brief Minimal `.npy` header reader/writer: C-order little-endian arrays (int32/int64 for traces; any dtype
// through read_npy_dict), format v1/v2/v3 headers.
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

/// The header of an `.npy` image of any dtype: the dict's descr as written ("<f2", "<i4") and shape, and where the
/// data starts.
struct NpyDict {
  std::string descr;
  std::vector<int64_t> shape;    // C order
  uint64_t data_offset = 0;
};

/// Reads the preamble and the header dict of `in` (of `file_size` bytes): magic, version, dict syntax, C order.
/// The dtype and the data size are the caller's to check. Errors name `path`.
NpyDict read_npy_dict(std::istream& in, const std::string& path, uint64_t file_size);

/// Reads and checks the header of the file `in` (of `file_size` bytes): magic, version, dict, dtype, order, and
/// that the data that the shape implies is exactly what the file holds. Errors name `path`.
NpyHeader read_npy_header(std::istream& in, const std::string& path, uint64_t file_size);

/// The header numpy 1.x `np.save` writes (v1, keys sorted, growth padding, 64-byte alignment), so files written
/// here are byte-identical to numpy's for the same array.
std::string format_npy_header(int32_t itemsize, const std::vector<int64_t>& shape);

}  // namespace hisparse::traces

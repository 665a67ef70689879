// @brief Reading numeric arrays (the selection study's keys and queries, the engine-kernel record that `hisparse
// validate --engine-record` checks): `.npy` files of the dtypes <f2, <f4, <i4, <i8, and <u2 / |u1 (bf16 and fp8
// bit patterns as numpy stores them), one at a time, from a directory, or from an `.npz` (numpy savez / savez_compressed:
// a zip of `.npy` members, stored or deflated; inflated with zlib, CRC-checked). Every error names the file, the
// member and what was expected.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hisparse::traces {

/// One array: dtype as numpy spells it ("<f2", "<f4", "<i4", "<i8", "<u2", "|u1"), C-order shape, raw little-endian bytes.
struct NumArray {
  std::string source;  // "file.npz:keys.npy" or "dir/keys.npy", for messages
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t elements() const;
  /// Every element converted to float (fp16 exactly, fp32 as is, unsigned 8/16-bit exactly, integers rounded to the nearest float).
  std::vector<float> to_float() const;
  /// Integer dtypes only; throws naming the array for float dtypes or values outside int32.
  std::vector<int32_t> to_int32() const;
  /// "[4, 6712, 3, 64]"
  std::string shape_text() const;
};

/// Parses one whole `.npy` file held in memory; `source` names it in errors.
NumArray parse_npy(const std::string& bytes, const std::string& source);

/// Arrays by name (the member or file name without ".npy"): `path` is an `.npz` file or a directory of `.npy` files.
std::map<std::string, NumArray> read_arrays(const std::string& path);
/// The members of an `.npz` held in memory (`source` names it in errors).
std::map<std::string, NumArray> read_npz_memory(const std::string& bytes, const std::string& source);

/// fp16 (IEEE binary16) bits to float, exact (subnormals, inf and NaN included).
float half_to_float(uint16_t h);

}  // namespace hisparse::traces

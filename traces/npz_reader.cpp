// @brief `.npy` / `.npz` reading (the selection study's keys and queries, the engine-kernel record of `hisparse
// validate --engine-record`). The zip walk reads only what numpy's savez writes: the end
// of central directory (zip64 too), central-directory entries, local headers, stored (0) or deflated (8) members.
#include "traces/npz_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "traces/npy_array.h"

namespace hisparse::traces {
namespace {

namespace fs = std::filesystem;

// Zip record signatures and fixed sizes: PKWARE APPNOTE.TXT 6.3.x, sections 4.3.7 (local header), 4.3.12 (central
// directory header), 4.3.14-16 (zip64 end of central directory record/locator, end of central directory record).
constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEocdSig = 0x06054b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr size_t kLocalFixed = 30, kCentralFixed = 46, kEocdFixed = 22, kZip64LocatorSize = 20, kZip64EocdFixed = 56;
constexpr size_t kMaxZipComment = 0xFFFF;  // the EOCD comment length is a u16
// Largest array read: the study's: keys of 4 layers x 8K tokens x 3 heads x 64 fp32 is 25 MB; 4 GiB bounds a hostile
// size field before it is allocated.
constexpr uint64_t kMaxMemberBytes = uint64_t{1} << 32;

uint64_t le(const std::string& b, size_t off, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[off + static_cast<size_t>(i)]);
  return v;
}

int dtype_size(const std::string& dtype) {
  if (dtype == "|u1") return 1;
  if (dtype == "<f2" || dtype == "<u2") return 2;
  if (dtype == "<f4" || dtype == "<i4") return 4;
  if (dtype == "<i8") return 8;
  return 0;
}

std::string inflate_raw(const std::string& in, uint64_t out_size, const std::string& source) {
  std::string out(out_size, '\0');
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw_error("{}: zlib inflateInit2 failed", source);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&zs, Z_FINISH);
  const uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || produced != out_size) {
    throw_error("{}: corrupt deflate data (zlib: {}, {} of {} bytes inflated)", source,
                rc == Z_DATA_ERROR ? "data error" : rc == Z_BUF_ERROR ? "truncated stream" : fmt::format("code {}", rc),
                produced, out_size);
  }
  return out;
}

}  // namespace

int64_t NumArray::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string NumArray::shape_text() const {
  std::string t = "[";
  for (size_t i = 0; i < shape.size(); ++i) t += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return t + "]";
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);  // subnormal: mant * 2^-24
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400u), static_cast<int>(exp) - 25);  // (1024 + mant) * 2^(e-15-10)
  }
  return sign ? -v : v;
}

std::vector<float> NumArray::to_float() const {
  const int64_t n = elements();
  std::vector<float> out(static_cast<size_t>(n));
  const uint8_t* p = bytes.data();
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == "<f2") {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = half_to_float(h);
    } else if (dtype == "<f4") {
      std::memcpy(&out[i], p + 4 * i, 4);
    } else if (dtype == "|u1") {
      out[i] = static_cast<float>(p[i]);
    } else if (dtype == "<u2") {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      out[i] = static_cast<float>(v);
    } else if (dtype == "<i4") {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      out[i] = static_cast<float>(v);
    } else {
      int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      out[i] = static_cast<float>(v);
    }
  }
  return out;
}

std::vector<int32_t> NumArray::to_int32() const {
  if (dtype != "<i4" && dtype != "<i8") throw_error("{}: expected an integer array (<i4 or <i8), got {}", source, dtype);
  const int64_t n = elements();
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == "<i4") {
      std::memcpy(&out[i], bytes.data() + 4 * i, 4);
    } else {
      int64_t v;
      std::memcpy(&v, bytes.data() + 8 * i, 8);
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        throw_error("{}: element {} = {} does not fit int32", source, i, v);
      out[i] = static_cast<int32_t>(v);
    }
  }
  return out;
}

NumArray parse_npy(const std::string& b, const std::string& source) {
  // The preamble and header dict, parsed as the trace reader parses them (traces/npy_array.h).
  std::istringstream in(b);
  const traces::NpyDict dict = traces::read_npy_dict(in, source, b.size());
  const uint64_t offset = dict.data_offset;
  NumArray a;
  a.source = source;
  a.dtype = dict.descr;
  a.shape = dict.shape;
  const int isz = dtype_size(a.dtype);
  if (isz == 0) throw_error("{}: dtype '{}' is not supported (expected <f2, <f4, <i4, <i8, <u2 or |u1)", source, a.dtype);
  uint64_t n = 1;
  for (int64_t d : a.shape) {
    if (d != 0 && n > kMaxMemberBytes / static_cast<uint64_t>(d)) throw_error("{}: shape {} too large", source, a.shape_text());
    n *= static_cast<uint64_t>(d);
  }
  const uint64_t data = b.size() - offset;
  if (data != n * static_cast<uint64_t>(isz))
    throw_error("{}: shape {} of {} needs {} data bytes, the array holds {}", source, a.shape_text(), a.dtype,
                n * static_cast<uint64_t>(isz), data);
  a.bytes.assign(b.begin() + static_cast<std::ptrdiff_t>(offset), b.end());
  return a;
}

std::map<std::string, NumArray> read_npz_memory(const std::string& z, const std::string& source) {
  if (z.size() < kEocdFixed) throw_error("{}: not a zip/.npz file ({} bytes, shorter than its end record)", source, z.size());
  // The end of central directory record: the last signature within the comment's reach of the end.
  size_t eocd = std::string::npos;
  const size_t lowest = z.size() > kEocdFixed + kMaxZipComment ? z.size() - kEocdFixed - kMaxZipComment : 0;
  for (size_t p = z.size() - kEocdFixed + 1; p-- > lowest;) {
    if (le(z, p, 4) == kEocdSig) {
      eocd = p;
      break;
    }
  }
  if (eocd == std::string::npos) throw_error("{}: not a zip/.npz file or truncated (no end of central directory)", source);
  uint64_t entries = le(z, eocd + 10, 2), cd_size = le(z, eocd + 12, 4), cd_off = le(z, eocd + 16, 4);
  if (entries == 0xFFFF || cd_size == 0xFFFFFFFF || cd_off == 0xFFFFFFFF) {
    if (eocd < kZip64LocatorSize || le(z, eocd - kZip64LocatorSize, 4) != kZip64LocatorSig)
      throw_error("{}: zip64 fields without a zip64 locator", source);
    const uint64_t z64 = le(z, eocd - kZip64LocatorSize + 8, 8);
    if (z64 > z.size() || z.size() - z64 < kZip64EocdFixed || le(z, z64, 4) != kZip64EocdSig)
      throw_error("{}: bad zip64 end of central directory at offset {}", source, z64);
    entries = le(z, z64 + 32, 8), cd_size = le(z, z64 + 40, 8), cd_off = le(z, z64 + 48, 8);
  }
  if (cd_off > z.size() || cd_size > z.size() - cd_off)
    throw_error("{}: central directory (offset {}, {} bytes) lies outside the {}-byte file (truncated?)", source, cd_off,
                cd_size, z.size());
  std::map<std::string, NumArray> out;
  size_t p = cd_off;
  for (uint64_t e = 0; e < entries; ++e) {
    if (p > z.size() || z.size() - p < kCentralFixed || le(z, p, 4) != kCentralSig)
      throw_error("{}: bad central directory entry {} at offset {}", source, e, p);
    const uint64_t flags = le(z, p + 8, 2), method = le(z, p + 10, 2), crc = le(z, p + 16, 4);
    uint64_t csize = le(z, p + 20, 4), usize = le(z, p + 24, 4), local = le(z, p + 42, 4);
    const size_t nlen = le(z, p + 28, 2), xlen = le(z, p + 30, 2), clen = le(z, p + 32, 2);
    if (z.size() - p - kCentralFixed < nlen + xlen + clen) throw_error("{}: central directory entry {} truncated", source, e);
    const std::string name = z.substr(p + kCentralFixed, nlen);
    const std::string member = fmt::format("{}:{}", source, name);
    // zip64 extended information (APPNOTE 4.5.3): the 8-byte values of the fields that hold 0xFFFFFFFF, in order.
    for (size_t x = p + kCentralFixed + nlen; x + 4 <= p + kCentralFixed + nlen + xlen;) {
      const uint64_t id = le(z, x, 2), len = le(z, x + 2, 2);
      size_t f = x + 4;
      if (f + len > p + kCentralFixed + nlen + xlen) throw_error("{}: bad extra field", member);
      if (id == 1) {
        for (uint64_t* v : {&usize, &csize, &local}) {
          if (*v == 0xFFFFFFFF) {
            if (f + 8 > x + 4 + len) throw_error("{}: short zip64 extra field", member);
            *v = le(z, f, 8), f += 8;
          }
        }
      }
      x += 4 + len;
    }
    p += kCentralFixed + nlen + xlen + clen;
    if (flags & 1u) throw_error("{}: encrypted members are not supported", member);
    if (method != 0 && method != 8)
      throw_error("{}: compression method {} is not supported (numpy writes 0 = stored or 8 = deflate)", member, method);
    if (usize > kMaxMemberBytes || csize > kMaxMemberBytes) throw_error("{}: member of {} bytes is too large", member, usize);
    if (local > z.size() || z.size() - local < kLocalFixed || le(z, local, 4) != kLocalSig)
      throw_error("{}: bad local header at offset {} (truncated file?)", member, local);
    const uint64_t data = local + kLocalFixed + le(z, local + 26, 2) + le(z, local + 28, 2);
    if (data > z.size() || z.size() - data < csize)
      throw_error("{}: member data ({} bytes at offset {}) runs past the end of the {}-byte file (truncated?)", member,
                  csize, data, z.size());
    const std::string raw = z.substr(data, csize);
    std::string bytes;
    if (method == 0) {
      if (csize != usize) throw_error("{}: stored member sizes differ ({} vs {})", member, csize, usize);
      bytes = raw;
    } else {
      bytes = inflate_raw(raw, usize, member);
    }
    const uLong got = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size()));
    if (got != crc) throw_error("{}: CRC mismatch (stored {:08x}, computed {:08x}): corrupt file", member, crc, got);
    std::string key = name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    out[key] = parse_npy(bytes, member);
  }
  return out;
}

std::map<std::string, NumArray> read_arrays(const std::string& path) {
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw_error("{}: cannot open", p.string());
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  if (!fs::exists(path)) throw_error("{}: no such file or directory", path);
  if (fs::is_directory(path)) {
    std::map<std::string, NumArray> out;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path))
      if (e.is_regular_file() && e.path().extension() == ".npy") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw_error("{}: directory holds no .npy files", path);
    for (const auto& f : files) out[f.stem().string()] = parse_npy(slurp(f), f.string());
    return out;
  }
  return read_npz_memory(slurp(path), path);
}

}  // namespace hisparse::traces

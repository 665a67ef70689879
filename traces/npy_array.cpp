// @brief `.npy` headers: a strict parser of the Python-literal dict numpy writes, and numpy's exact layout.
#include "traces/npy_array.h"

#include <cstring>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::traces {
namespace {

constexpr uint64_t kMaxHeaderLen = 1 << 20;  // numpy itself rejects headers above 10 kB; 1 MB is generous
constexpr int64_t kMaxDim = int64_t{1} << 40;

/// Cursor over the header dict text; every failure names the file.
class DictParser {
 public:
  DictParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    skip_ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(fmt::format("expected '{}'", c));
  }
  std::string string_literal() {
    skip_ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted string");
    const char q = s_[i_++];
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) fail("unterminated string");
    return s_.substr(start, i_++ - start);
  }
  bool boolean() {
    skip_ws();
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  int64_t integer() {
    skip_ws();
    int64_t v = 0;
    size_t digits = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      v = v * 10 + (s_[i_++] - '0');
      if (++digits > 13 || v > kMaxDim) fail("dimension too large");
    }
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 longs
    if (digits == 0) fail("expected a dimension");
    return v;
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (!eat(')')) {
      if (dims.size() >= 32) fail("more than 32 dimensions");
      dims.push_back(integer());
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw_error("{}: bad .npy header at character {}: {} (header: {:.80})", path_, i_, what, s_);
  }

 private:
  const std::string& s_;
  const std::string& path_;
  size_t i_ = 0;
};

}  // namespace

int64_t NpyHeader::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

NpyDict read_npy_dict(std::istream& in, const std::string& path, uint64_t file_size) {
  unsigned char pre[12];
  if (file_size < 10 || !in.read(reinterpret_cast<char*>(pre), 10)) {
    throw_error("{}: truncated .npy file ({} bytes, the preamble alone is 10)", path, file_size);
  }
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0) throw_error("{}: not an .npy file (bad magic)", path);
  const int major = pre[6];
  uint64_t hlen = 0;
  uint64_t prefix = 10;
  if (major == 1) {
    hlen = pre[8] | (uint64_t{pre[9]} << 8);
  } else if (major == 2 || major == 3) {
    if (!in.read(reinterpret_cast<char*>(pre + 10), 2)) throw_error("{}: truncated .npy header", path);
    hlen = pre[8] | (uint64_t{pre[9]} << 8) | (uint64_t{pre[10]} << 16) | (uint64_t{pre[11]} << 24);
    prefix = 12;
  } else {
    throw_error("{}: unsupported .npy format version {}.{} (expected 1, 2 or 3)", path, major, int{pre[7]});
  }
  if (hlen > kMaxHeaderLen || prefix + hlen > file_size) {
    throw_error("{}: .npy header length {} does not fit the file ({} bytes)", path, hlen, file_size);
  }
  std::string text(hlen, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(hlen))) throw_error("{}: truncated .npy header", path);

  NpyDict h;
  h.data_offset = prefix + hlen;
  DictParser p(text, path);
  p.expect('{');
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  while (!p.eat('}')) {
    const std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr") {
      h.descr = p.string_literal();
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran = p.boolean();
      have_order = true;
    } else if (key == "shape") {
      h.shape = p.tuple();
      have_shape = true;
    } else {
      p.fail(fmt::format("unknown key '{}'", key));
    }
    if (!p.eat(',')) {
      p.expect('}');
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape) p.fail("missing descr, fortran_order or shape");
  if (fortran) throw_error("{}: Fortran-order arrays are not supported (save with C order)", path);
  return h;
}

NpyHeader read_npy_header(std::istream& in, const std::string& path, uint64_t file_size) {
  const NpyDict dict = read_npy_dict(in, path, file_size);
  const std::string& descr = dict.descr;
  NpyHeader h;
  h.shape = dict.shape;
  h.data_offset = dict.data_offset;
  if (descr == "<i4") {
    h.itemsize = 4;
  } else if (descr == "<i8") {
    h.itemsize = 8;
  } else {
    throw_error("{}: dtype '{}' not supported (expected '<i4' int32 or '<i8' int64)", path, descr);
  }
  // The product is checked step by step so a hostile shape cannot overflow into a small, plausible size.
  uint64_t bytes = static_cast<uint64_t>(h.itemsize);
  for (int64_t d : h.shape) {
    if (d != 0 && bytes > file_size / static_cast<uint64_t>(d)) {
      throw_error("{}: shape {} implies more data than the file holds ({} bytes)", path,
                  fmt::join(h.shape, "x"), file_size);
    }
    bytes *= static_cast<uint64_t>(d);
  }
  if (bytes != file_size - h.data_offset) {
    throw_error("{}: shape ({}) of {}-byte items needs {} data bytes, the file has {}", path,
                fmt::join(h.shape, ", "), h.itemsize, bytes, file_size - h.data_offset);
  }
  return h;
}

std::string format_npy_header(int32_t itemsize, const std::vector<int64_t>& shape) {
  std::string shape_text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    shape_text += fmt::format("{}", shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) shape_text += shape.size() == 1 ? "," : ", ";
  }
  shape_text += ")";
  std::string dict = fmt::format("{{'descr': '<i{}', 'fortran_order': False, 'shape': {}, }}", itemsize, shape_text);
  // numpy leaves room for the first axis to grow to 21 digits, then aligns the data to 64 bytes.
  if (!shape.empty()) dict.append(21 - fmt::format("{}", shape[0]).size(), ' ');
  const size_t hlen = dict.size() + 1;
  const size_t pad = 64 - ((10 + hlen) % 64);
  dict.append(pad, ' ');
  dict.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(dict.size() & 0xff));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict;
}

}  // namespace hisparse::traces

// @brief Atomic file output and small deterministic text helpers shared by the report writers.
#include "core/io/output_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/io_error.h"
#include "core/io/atomic_output.h"

namespace hisparse {

void write_file_atomically(const std::string& path, const std::string& contents) {
  AtomicOutput out(path);
  out.write(contents);
  out.commit();
}

void create_output_directory(const std::string& dir, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw_io_error(ENOTDIR, "{} ({}): exists and is not a directory (expected the output directory)", dir, what);
  fs::create_directories(dir, ec);
  if (ec) throw_io_error(ec.value(), "{} ({}): cannot create the output directory: {}", dir, what, ec.message());
}

void refuse_output_over_input(const std::string& output, const std::string& output_flag, const std::string& input,
                              const std::string& input_flag) {
  namespace fs = std::filesystem;
  if (output.empty() || input.empty()) return;
  std::error_code ec1, ec2;
  // Both exist: one file whatever the spelling (hard links, symbolic links, "./x" against "x").
  if (fs::exists(output, ec1) && fs::exists(input, ec2) && fs::equivalent(output, input, ec1) && !ec1)
    throw_error("{} {} is the {} input {}: writing it would overwrite what is read (expected another path)",
                output_flag, output, input_flag, input);
  // The output not written yet: its would-be path against the input's, and the input's directory (a .npy trace).
  const fs::path out = fs::weakly_canonical(output, ec1), in = fs::weakly_canonical(input, ec2);
  if (ec1 || ec2) return;
  const auto [in_end, out_it] = std::mismatch(in.begin(), in.end(), out.begin(), out.end());
  if (in_end == in.end())
    throw_error("{} {} is {} input {}: writing it would overwrite what is read (expected a path outside it)",
                output_flag, output, out == in ? "the" : "inside the", input_flag, input);
}

std::string json_quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if (static_cast<unsigned char>(c) < 0x20) o += fmt::format("\\u{:04x}", static_cast<int>(c));
    else o += c;
  }
  return o + "\"";
}

std::string ns_as_us(int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  const uint64_t a = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  return fmt::format("{}{}.{:03}", sign, a / 1000, a % 1000);
}

}  // namespace hisparse

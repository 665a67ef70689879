// @brief Atomic file output and small deterministic text helpers shared by the report writers.
#include "core/io/output_file.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
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
    throw_error("{} ({}): exists and is not a directory (expected the output directory)", dir, what);
  fs::create_directories(dir, ec);
  if (ec) throw_error("{} ({}): cannot create the output directory: {}", dir, what, ec.message());
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

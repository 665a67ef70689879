// @brief write_file_atomically (a whole text through core/io/atomic_output.h, so readers never see half a file) and
// the small deterministic text helpers every report writer shares.
#pragma once

#include <string>

namespace hisparse {

void write_file_atomically(const std::string& path, const std::string& contents);
/// JSON string literal of `s` (quotes and control characters escaped).
std::string json_quote(const std::string& s);
/// Fixed-point text of ns as µs with 3 decimals ("1234.567"), from integers only.
std::string ns_as_us(int64_t ns);

}  // namespace hisparse

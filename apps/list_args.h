// @brief Comma-separated list flags shared by the subcommands: "2048,4096", "16K,32K,128K" (K = 1024, M = 1024²,
// as the reports print lengths), with the flag, the item and what was expected named on error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse::apps {

/// Items of "a, b,c" without surrounding blanks; empty items dropped.
std::vector<std::string> split_list(const std::string& text);

/// Integers in [lo, hi], each optionally suffixed K/k (× 1024) or M/m (× 1024²); duplicates dropped, order kept; an
/// empty item ("32,,64", a leading or trailing comma) is refused.
/// Throws hisparse::Error "<command>: <flag>: 'x' is not an integer in [lo, hi] (expected e.g. <example>)".
std::vector<int64_t> parse_count_list(const std::string& text, const std::string& command, const std::string& flag,
                                      int64_t lo, int64_t hi, const std::string& example);

}  // namespace hisparse::apps

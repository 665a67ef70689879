// @brief The one exception type of the project: every user-facing failure says what, where and what was expected.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace hisparse {

/// Thrown for bad input, bad configuration and broken invariants; the CLI prints what() and exits non-zero.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// fmt-style convenience: throw_error("file {}: key {} ...", a, b).
template <typename... Args>
[[noreturn]] void throw_error(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace hisparse

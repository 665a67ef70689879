// @brief NotFoundError: the Error thrown when a file, scenario or directory the input names does not exist.
//
// Its own header (not core/error.h, which every file includes): only the lookups that can miss include it. To the
// CLI it is an Error like any other; the Python module raises it as FileNotFoundError (python/bindings/module.cpp).
#pragma once

#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse {

class NotFoundError : public Error {
 public:
  using Error::Error;
};

/// throw_error for a named thing that does not exist.
template <typename... Args>
[[noreturn]] void throw_not_found(fmt::format_string<Args...> format, Args&&... args) {
  throw NotFoundError(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace hisparse

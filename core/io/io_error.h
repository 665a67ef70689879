// @brief IoError: the Error thrown when the system refuses a read or write (a full disk, no permission, a path that
// is a directory), with the errno it gave.
//
// To the CLI it is an Error like any other; the Python module raises it as OSError with that errno
// (python/bindings/module.cpp), as Python's own file functions do, so `except OSError` catches a failed write.
#pragma once

#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse {

class IoError : public Error {
 public:
  IoError(const std::string& message, int err) : Error(message), errno_(err) {}
  /// The errno of the failed call (0 when the refusal is the project's own, e.g. writing over a directory).
  int error_number() const { return errno_; }

 private:
  int errno_ = 0;
};

/// throw_error for a failed system call: `err` is its errno (0 if none).
template <typename... Args>
[[noreturn]] void throw_io_error(int err, fmt::format_string<Args...> format, Args&&... args) {
  throw IoError(fmt::format(format, std::forward<Args>(args)...), err);
}

}  // namespace hisparse

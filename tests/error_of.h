// @brief The message of the hisparse::Error a call throws ("" when it throws none), for tests that check what an error
// names.
#pragma once

#include <functional>
#include <string>

#include "core/error.h"

namespace hisparse::test {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace hisparse::test

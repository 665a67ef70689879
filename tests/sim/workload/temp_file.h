// @brief A text file written into the build tree for a workload test (the readers take paths, not strings).
#pragma once

#include <fstream>
#include <string>

namespace hisparse::sim::test {

inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = std::string(HISPARSE_BINARY_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace hisparse::sim::test

// @brief read_file and read_file_or_empty (see read_file.h).
#include "core/io/read_file.h"

#include <fstream>
#include <iterator>

#include "core/error.h"

namespace hisparse {

std::string read_file_or_empty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error("{}: cannot open for reading", path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace hisparse

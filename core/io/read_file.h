// @brief Reading a whole file into memory, the two ways the project needs: strictly (a missing or unreadable input is
// an error naming it) and optionally (a plot the script may not have written reads as empty).
#pragma once

#include <string>

namespace hisparse {

/// The file's bytes; throws hisparse::Error "<path>: cannot open for reading" when it cannot be opened.
std::string read_file(const std::string& path);
/// The file's bytes, or "" when it cannot be opened.
std::string read_file_or_empty(const std::string& path);

}  // namespace hisparse

// @brief quoted_command_line and check_surface_name (see command_line.h).
#include "apps/command_line.h"

#include "core/error.h"

namespace hisparse::apps {

std::string quoted_command_line(const char* command, int argc, char** argv, const std::string& skip_flag) {
  std::string out = "hisparse";
  for (int i = 0; i < argc; ++i) {
    const std::string a = i == 0 ? command : argv[i];
    if (!skip_flag.empty() && a == skip_flag) {
      ++i;
      continue;
    }
    if (!skip_flag.empty() && a.rfind(skip_flag + "=", 0) == 0) continue;
    // Characters no POSIX shell treats specially stay bare; anything else is single-quoted (' as '\'').
    const bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_./,:=+@%") == std::string::npos;
    if (plain) {
      out += " " + a;
      continue;
    }
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += " " + q + "'";
  }
  return out;
}

void check_surface_name(const char* command, const std::string& name) {
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
                          std::string::npos)
    throw_error("{}: --name '{}' (expected letters, digits, '-', '_' or '.')", command, name);
}

}  // namespace hisparse::apps

// @brief quoted_command_line, typed_command_line, check_surface_name, store_flags and parse_flags (see
// command_line.h).
#include "apps/command_line.h"

#include <cstdint>
#include <iostream>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::apps {

namespace {
namespace po = boost::program_options;

template <typename T>
bool describe_as(const po::value_semantic* s, const char* what, std::string* out) {
  if (!dynamic_cast<const po::typed_value<T>*>(s)) return false;
  *out = fmt::format("{} in [{}, {}]", what, std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max());
  return true;
}

/// What a flag's value must be, from the type it is stored in.
std::string expected_value(const po::value_semantic* s) {
  std::string out;
  if (describe_as<int32_t>(s, "an integer", &out) || describe_as<int64_t>(s, "an integer", &out) ||
      describe_as<uint32_t>(s, "an integer", &out) || describe_as<uint64_t>(s, "an integer", &out) ||
      describe_as<long long>(s, "an integer", &out) || describe_as<unsigned long long>(s, "an integer", &out))
    return out;
  if (dynamic_cast<const po::typed_value<double>*>(s) || dynamic_cast<const po::typed_value<float>*>(s))
    return "a number (e.g. 0.5, 1e3)";
  return "a value of the flag's type (see --help)";
}

}  // namespace

void store_flags(const po::parsed_options& parsed, po::variables_map& vm) {
  try {
    po::store(parsed, vm);
  } catch (const po::invalid_option_value& e) {
    const std::string flag = e.get_option_name();
    std::string value;
    const po::option_description* d = nullptr;
    for (const auto& o : parsed.options) {
      const std::string key = o.string_key;
      if (("--" + key != flag && "-" + key != flag && key != flag) || o.value.empty()) continue;
      value = o.value.back();
      if (parsed.description) d = parsed.description->find_nothrow(key, false);
    }
    throw_error("{} '{}' is not {}", flag, value, d ? expected_value(d->semantic().get()) : std::string("valid (see --help)"));
  }
}

bool parse_flags(const po::parsed_options& parsed, const po::options_description& desc, po::variables_map& vm) {
  try {
    store_flags(parsed, vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw_error("{}", e.what());  // the project's one exception type, boost's message
  }
  return true;
}

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

std::string typed_command_line(const char* command, int argc, char** argv) {
  std::string out = fmt::format("hisparse {}", command);
  for (int i = 1; i < argc; ++i) out += std::string(" ") + argv[i];
  return out;
}

void check_surface_name(const char* command, const std::string& name) {
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
                          std::string::npos)
    throw_error("{}: --name '{}' (expected letters, digits, '-', '_' or '.')", command, name);
}

}  // namespace hisparse::apps

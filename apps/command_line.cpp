// @brief quoted_command_line, typed_command_line, check_surface_name, store_flags and parse_flags (see
// command_line.h).
#include "apps/command_line.h"

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <limits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/api/settings_table.h"

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

/// SGLang's spelling of a flag whose meaning here is the same, or, with no `ours`, where its setting lives instead.
struct SglangFlag {
  const char* theirs;
  const char* ours;  // nullptr: no flag here means the same
  const char* note;
};

// The aliases of settings (--kv-cache-dtype) are the settings table's (sim/api/settings_table.cpp); these are the rest.
// SGLang derives its server flags from ServerArgs' fields (python/sglang/srt/server_args.py at 001067f: kv_cache_dtype
// → --kv-cache-dtype, tp_size → --tp-size); --max-concurrency and --request-rate are python/sglang/bench_serving.py's.
constexpr SglangFlag kSglangFlags[] = {
    {"max-concurrency", "concurrency",
     "bench_serving's --max-concurrency: requests in flight at once, here closed-loop clients"},
    {"tp-size", nullptr,
     "SGLang's --tp-size is the deployment YAML's decode.tp (and dp_attention): copy a file of scenarios/deployments "
     "and set it there"},
    {"tp", nullptr,
     "SGLang's --tp is the deployment YAML's decode.tp (and dp_attention): copy a file of scenarios/deployments and "
     "set it there"},
    {"request-rate", nullptr,
     "bench_serving's --request-rate is a workload's arrival rate here: a generator workload's rate: (e.g. "
     "scenarios/workloads/synthetic_poisson.yaml), or closed-loop clients with simulate --concurrency"},
};

/// The long name of "--name" or "--name=value" ("" for anything else).
std::string long_name_of(const std::string& arg) {
  if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) return "";
  return arg.substr(2, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 2);
}

/// "unknown flag --x" with what SGLang's flag of that name is here, or the nearest flags of `desc`.
[[noreturn]] void unknown_flag(const std::string& given, const po::options_description& desc) {
  const std::string name = given.compare(0, 2, "--") == 0 ? given.substr(2) : given;
  for (const SglangFlag& f : kSglangFlags)
    if (name == f.theirs) throw_error("unknown flag --{}: {}", name, f.note);
  // Near misses: within a third of the name's length (at least 2 edits), nearest first; a flag that contains the
  // typed name, or is contained in it, also counts ("--buffer" → --device-buffer-size).
  std::vector<std::pair<size_t, std::string>> near;
  for (const auto& o : desc.options()) {
    const std::string& cand = o->long_name();
    if (cand.empty()) continue;
    const size_t d = edit_distance(name, cand);
    const bool contains = name.size() >= 3 && (cand.find(name) != std::string::npos || name.find(cand) != std::string::npos);
    if (d <= std::max<size_t>(2, name.size() / 3) || contains) near.emplace_back(contains ? std::min<size_t>(d, 1) : d, cand);
  }
  std::sort(near.begin(), near.end());
  if (near.size() > 3) near.resize(3);
  std::string list;
  for (const auto& [d, cand] : near) list += (list.empty() ? "--" : " or --") + cand;
  if (list.empty()) throw_error("unknown flag --{} (see --help for the flags this command takes)", name);
  throw_error("unknown flag --{}: did you mean {}? (see --help)", name, list);
}

}  // namespace

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

po::parsed_options parse_args(int argc, char** argv, const po::options_description& desc,
                              const po::positional_options_description* pos) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::string& a : args) {
    const std::string name = long_name_of(a);
    if (name.empty() || desc.find_nothrow(name, false)) continue;
    for (const SglangFlag& f : kSglangFlags)
      if (f.ours && name == f.theirs && desc.find_nothrow(f.ours, false)) a = "--" + std::string(f.ours) + a.substr(2 + name.size());
    const sim::Setting* s = sim::find_setting(name);
    if (s && s->sglang_alias && name == s->sglang_alias && desc.find_nothrow(s->flag, false))
      a = "--" + std::string(s->flag) + a.substr(2 + name.size());
  }
  try {
    po::command_line_parser parser(args);
    parser.options(desc);
    if (pos) parser.positional(*pos);
    return parser.run();
  } catch (const po::unknown_option& e) {
    unknown_flag(e.get_option_name(), desc);
  }
}

void store_flags(const po::parsed_options& parsed, po::variables_map& vm) {
  for (const auto& o : parsed.options)
    if (!o.string_key.empty() && o.value.size() == 1 && o.value.front().empty() && !o.original_tokens.empty() &&
        o.original_tokens.size() + (o.original_tokens.front().find('=') != std::string::npos ? 1 : 0) >= 2)
      throw_error("--{} '' is empty (expected a value; leave the flag out for its default)", o.string_key);
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

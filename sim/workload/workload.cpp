// @brief Readers of the Mooncake (JSON lines) and Azure (CSV) request traces, the seeded generator, and
// the workload YAML loader.
#include "sim/workload/workload.h"

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "core/error.h"
#include "core/not_found_error.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"
#include "sim/workload/agentic_generator.h"
#include "sim/workload/distribution.h"
#include "sim/workload/session_generator.h"
#include "sim/workload/trace_sessions.h"

namespace hisparse::sim {
namespace {

namespace fs = std::filesystem;

std::ifstream open_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_error("workload {}: cannot open the file", path);
  return in;
}

// Integer value of `"key": 123` in a JSON line (Mooncake writes plain integers).
int64_t json_int_field(const std::string& line, const char* key, const std::string& path, int64_t line_no) {
  const std::string needle = std::string("\"") + key + "\"";
  const size_t k = line.find(needle);
  if (k == std::string::npos) throw_error("workload {}:{}: field '{}' is missing", path, line_no, key);
  size_t p = line.find(':', k + needle.size());
  if (p == std::string::npos) throw_error("workload {}:{}: field '{}' has no value", path, line_no, key);
  ++p;
  while (p < line.size() && line[p] == ' ') ++p;
  char* end = nullptr;
  const long long v = std::strtoll(line.c_str() + p, &end, 10);
  if (end == line.c_str() + p || (*end != ',' && *end != '}' && *end != ' '))
    throw_error("workload {}:{}: field '{}' must be an integer", path, line_no, key);
  return v;
}

// The integers of `"key": [1, 2, 3]` in a JSON line; absent key: empty (Mooncake's hash_ids are optional).
std::vector<uint64_t> json_uint_list_field(const std::string& line, const char* key, const std::string& path,
                                           int64_t line_no) {
  std::vector<uint64_t> out;
  const std::string needle = std::string("\"") + key + "\"";
  const size_t k = line.find(needle);
  if (k == std::string::npos) return out;
  size_t p = line.find(':', k + needle.size());
  if (p != std::string::npos) p = line.find_first_not_of(' ', p + 1);
  if (p == std::string::npos || line[p] != '[')
    throw_error("workload {}:{}: field '{}' must be a list of integers", path, line_no, key);
  ++p;
  for (;;) {
    p = line.find_first_not_of(' ', p);
    if (p == std::string::npos) throw_error("workload {}:{}: field '{}': the list is not closed", path, line_no, key);
    if (line[p] == ']') return out;
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(line.c_str() + p, &end, 10);
    if (end == line.c_str() + p || line[p] == '-' || errno == ERANGE)
      throw_error("workload {}:{}: field '{}': element {} is not an integer >= 0", path, line_no, key, out.size());
    out.push_back(v);
    p = static_cast<size_t>(end - line.c_str());
    p = line.find_first_not_of(' ', p);
    if (p != std::string::npos && line[p] == ',') ++p;
    else if (p == std::string::npos || line[p] != ']')
      throw_error("workload {}:{}: field '{}': expected ',' or ']' after element {}", path, line_no, key, out.size() - 1);
  }
}

void finish(Workload& w) {
  std::stable_sort(w.requests.begin(), w.requests.end(),
                   [](const RequestSpec& a, const RequestSpec& b) { return a.arrival < b.arrival; });
  for (size_t i = 0; i < w.requests.size(); ++i) w.requests[i].id = static_cast<int64_t>(i);
}

void check_lengths(const RequestSpec& r, const std::string& path, int64_t line_no) {
  if (r.input_tokens <= 0) throw_error("workload {}:{}: input length {} must be > 0", path, line_no, r.input_tokens);
  if (r.output_tokens <= 0) throw_error("workload {}:{}: output length {} must be > 0", path, line_no, r.output_tokens);
}

// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm), so timestamps need no time zone.
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// "2023-11-16 18:15:46.6805900" → ns since the epoch, exactly (fraction digits beyond 9 are rejected).
int64_t parse_azure_time(const std::string& s, const std::string& path, int64_t line_no) {
  int y, mo, d, h, mi, sec;
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &consumed) != 6)
    throw_error("workload {}:{}: TIMESTAMP '{}' is not yyyy-mm-dd hh:mm:ss[.fraction]", path, line_no, s);
  int64_t frac_ns = 0;
  size_t p = static_cast<size_t>(consumed);
  if (p < s.size() && s[p] == '.') {
    int digits = 0;
    for (++p; p < s.size() && std::isdigit(static_cast<unsigned char>(s[p])); ++p, ++digits) {
      if (digits >= 9) throw_error("workload {}:{}: TIMESTAMP '{}' has more than 9 fraction digits", path, line_no, s);
      frac_ns = frac_ns * 10 + (s[p] - '0');
    }
    for (int i = digits; i < 9; ++i) frac_ns *= 10;
  }
  if (p != s.size()) throw_error("workload {}:{}: TIMESTAMP '{}' has trailing text", path, line_no, s);
  const int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
  return secs * kNsPerSecond + frac_ns;
}

std::string data_dir_for(const std::string& yaml_path, const std::string& declared) {
  if (const char* env = std::getenv("HISPARSE_DATA_DIR"); env && *env) return env;
  if (declared.empty()) return fs::path(yaml_path).parent_path().string();
  fs::path p(declared);
  return p.is_absolute() ? p.string() : (fs::path(yaml_path).parent_path() / p).lexically_normal().string();
}

std::string resolve_workload_yaml(const std::string& name_or_path) {
  if (fs::exists(name_or_path)) return name_or_path;
  std::string tried;
  for (const auto& dir : scenario_dirs()) {
    const fs::path p = fs::path(dir) / "workloads" / (name_or_path + ".yaml");
    if (fs::exists(p)) return p.string();
    tried += " " + p.string();
  }
  throw_not_found("workload '{}': no such file, and no workload YAML of that name (tried:{})", name_or_path,
              tried.empty() ? " no scenario directory found" : tried);
}

/// A binary file (a trace, an archive) passed as a workload would otherwise be parsed as YAML and fail on whatever its
/// bytes happen to look like; a NUL byte in its first 64 KiB says it is no text at all.
void require_text_workload(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  const size_t nul = head.find('\0');
  if (nul != std::string::npos)
    throw_error("workload '{}' is a binary file (a NUL byte at offset {}), not a workload: expected a workload YAML "
                "(scenarios/workloads/<name>.yaml), a Mooncake .jsonl or an Azure .csv trace", path, nul);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Workload read_mooncake_trace(const std::string& path) {
  std::ifstream in = open_text(path);
  Workload w;
  w.source = path;
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    RequestSpec r;
    const int64_t ts = json_int_field(line, "timestamp", path, line_no);
    if (ts < 0) throw_error("workload {}:{}: timestamp {} must be >= 0 ms", path, line_no, ts);
    r.arrival = ts * 1'000'000;
    r.input_tokens = static_cast<int32_t>(json_int_field(line, "input_length", path, line_no));
    r.output_tokens = static_cast<int32_t>(json_int_field(line, "output_length", path, line_no));
    check_lengths(r, path, line_no);
    r.prefix_blocks = json_uint_list_field(line, "hash_ids", path, line_no);
    constexpr int64_t kMooncakeBlockTokens = 512;  // the FAST25 traces' block (scenarios/data/workloads/README.md)
    const int64_t blocks = (r.input_tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
    if (!r.prefix_blocks.empty() && static_cast<int64_t>(r.prefix_blocks.size()) != blocks)
      throw_error("workload {}:{}: hash_ids has {} ids for input_length {}: expected {} (one per 512-token block)", path,
                  line_no, r.prefix_blocks.size(), r.input_tokens, blocks);
    if (!r.prefix_blocks.empty()) w.block_tokens = kMooncakeBlockTokens;
    w.requests.push_back(std::move(r));
  }
  if (w.requests.empty()) throw_error("workload {}: no requests", path);
  finish(w);
  return w;
}

Workload read_azure_trace(const std::string& path) {
  std::ifstream in = open_text(path);
  Workload w;
  w.source = path;
  std::string line;
  if (!std::getline(in, line)) throw_error("workload {}: empty file", path);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line != "TIMESTAMP,ContextTokens,GeneratedTokens")
    throw_error("workload {}:1: header '{}' (expected TIMESTAMP,ContextTokens,GeneratedTokens)", path, line);
  int64_t line_no = 1, t0 = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t c1 = line.find(','), c2 = line.find(',', c1 == std::string::npos ? 0 : c1 + 1);
    if (c1 == std::string::npos || c2 == std::string::npos)
      throw_error("workload {}:{}: expected 3 comma-separated fields", path, line_no);
    const int64_t t = parse_azure_time(line.substr(0, c1), path, line_no);
    if (w.requests.empty()) t0 = t;
    RequestSpec r;
    r.arrival = t - t0;
    char* end = nullptr;
    r.input_tokens = static_cast<int32_t>(std::strtol(line.c_str() + c1 + 1, &end, 10));
    if (end != line.c_str() + c2) throw_error("workload {}:{}: ContextTokens must be an integer", path, line_no);
    r.output_tokens = static_cast<int32_t>(std::strtol(line.c_str() + c2 + 1, &end, 10));
    if (*end != '\0') throw_error("workload {}:{}: GeneratedTokens must be an integer", path, line_no);
    check_lengths(r, path, line_no);
    w.requests.push_back(r);
  }
  if (w.requests.empty()) throw_error("workload {}: no requests", path);
  // The first row is the origin; a trace that is not sorted may have rows before it.
  const SimTime min_arrival = std::min_element(w.requests.begin(), w.requests.end(), [](auto& a, auto& b) {
                                return a.arrival < b.arrival; })->arrival;
  for (auto& r : w.requests) r.arrival -= min_arrival;
  finish(w);
  return w;
}

Workload generate_workload(const GeneratorSpec& g) {
  if (!(g.rate_per_s > 0)) throw_error("workload generator: rate {} must be > 0 requests/s", g.rate_per_s);
  if (g.input_min <= 0 || g.input_max < g.input_min)
    throw_error("workload generator: input_tokens range [{}, {}] is empty or not positive", g.input_min, g.input_max);
  if (g.output_min <= 0 || g.output_max < g.output_min)
    throw_error("workload generator: output_tokens range [{}, {}] is empty or not positive", g.output_min, g.output_max);
  std::mt19937_64 rng(g.seed);
  Workload w;
  w.source = fmt::format("generator(seed={})", g.seed);
  double t = 0;
  for (;;) {
    t += -std::log(1.0 - uniform01(rng)) / g.rate_per_s;
    const SimTime at = static_cast<SimTime>(std::floor(t * 1e9));
    if (at >= g.duration) break;
    RequestSpec r;
    r.arrival = at;
    r.input_tokens = log_uniform_int(rng, g.input_min, g.input_max);
    r.output_tokens = log_uniform_int(rng, g.output_min, g.output_max);
    w.requests.push_back(r);
  }
  finish(w);
  return w;
}

void truncate_workload(Workload& w, SimTime until) {
  w.requests.erase(std::remove_if(w.requests.begin(), w.requests.end(), [&](const RequestSpec& r) { return r.arrival >= until; }),
                   w.requests.end());
}

Workload load_workload(const std::string& name_or_path) {
  if (ends_with(name_or_path, ".jsonl")) { Workload w = read_mooncake_trace(name_or_path); w.name = fs::path(name_or_path).stem().string(); return w; }
  if (ends_with(name_or_path, ".csv")) { Workload w = read_azure_trace(name_or_path); w.name = fs::path(name_or_path).stem().string(); return w; }
  const std::string path = resolve_workload_yaml(name_or_path);
  require_text_workload(path);
  StrictMap root(load_yaml_file(path), path, "");
  std::string type;
  root.require("type");
  root.get_choice("type", &type, {"mooncake", "azure", "generator", "sessions", "agentic"});
  std::string name = fs::path(path).stem().string();
  root.get("name", &name);
  double time_scale = 1.0;
  root.get("time_scale", &time_scale, 1e-6, 1e6);
  int64_t max_requests = 0;
  root.get("max_requests", &max_requests, 0, int64_t{1} << 40);
  Workload w;
  if (type == "generator") {
    GeneratorSpec g;
    read_poisson_arrivals(root, &g.seed, &g.rate_per_s, &g.duration);
    if (root.has("input_tokens")) {
      StrictMap m = root.child("input_tokens");
      m.get("min", &g.input_min, 1, 1 << 30);
      m.get("max", &g.input_max, 1, 1 << 30);
      m.finish();
    }
    if (root.has("output_tokens")) {
      StrictMap m = root.child("output_tokens");
      m.get("min", &g.output_min, 1, 1 << 30);
      m.get("max", &g.output_max, 1, 1 << 30);
      m.finish();
    }
    root.finish();
    w = generate_workload(g);
  } else if (type == "sessions") {
    w = generate_conversations(read_session_spec(root));
  } else if (type == "agentic") {
    w = generate_conversations(read_agentic_spec(root));
  } else {
    std::string file, data_dir;
    root.require("file");
    root.get("file", &file);
    root.get("data_dir", &data_dir);
    bool sessions = false;  // Mooncake only: recover the conversations from the hash_ids chains (trace_sessions.h)
    if (type == "mooncake") root.get("derive_sessions", &sessions);
    root.finish();
    const fs::path trace = fs::path(file).is_absolute() ? fs::path(file) : fs::path(data_dir_for(path, data_dir)) / file;
    if (!fs::exists(trace))
      throw_not_found("{}: file '{}' not found (looked at {}; set HISPARSE_DATA_DIR to the folder holding workloads/)",
                  path, file, trace.string());
    w = type == "mooncake" ? read_mooncake_trace(trace.string()) : read_azure_trace(trace.string());
    if (sessions) derive_sessions(w);
  }
  w.name = name;
  if (time_scale != 1.0)
    for (auto& r : w.requests) {  // think times shrink with the arrivals: the same sessions, faster
      r.arrival = static_cast<SimTime>(std::llround(static_cast<double>(r.arrival) * time_scale));
      r.think_time = static_cast<SimTime>(std::llround(static_cast<double>(r.think_time) * time_scale));
    }
  if (max_requests > 0 && static_cast<int64_t>(w.requests.size()) > max_requests) w.requests.resize(static_cast<size_t>(max_requests));
  return w;
}

}  // namespace hisparse::sim

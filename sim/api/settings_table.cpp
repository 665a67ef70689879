// @brief The settings table and the parse, range check and YAML reader every front shares (see settings_table.h).
#include "sim/api/settings_table.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "core/error.h"
#include "core/yaml_reader.h"
#include "sim/fidelity/field_set.h"

namespace hisparse::sim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

template <class T>
T as(const SettingValue& v) {
  if constexpr (std::is_same_v<T, bool>) return std::get<bool>(v);
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(std::get<int64_t>(v));
  else if constexpr (std::is_floating_point_v<T>) return std::get<double>(v);
  else return std::get<std::string>(v);
}

template <class T>
SettingValue to_value(const T& x) {
  if constexpr (std::is_same_v<T, bool>) return SettingValue(x);
  else if constexpr (std::is_integral_v<T>) return SettingValue(static_cast<int64_t>(x));
  else if constexpr (std::is_floating_point_v<T>) return SettingValue(static_cast<double>(x));
  else return SettingValue(std::string(x));
}

/// Setter and getter of a ScenarioOverrides field (std::optional<T>): unset is the deployment's value.
template <auto M>
void set_override(ScenarioChoice& c, const SettingValue& v) {
  using Opt = std::remove_reference_t<decltype(c.overrides.*M)>;
  c.overrides.*M = as<typename Opt::value_type>(v);
}
template <auto M>
std::optional<SettingValue> get_override(const ScenarioChoice& c) {
  const auto& o = c.overrides.*M;
  if (!o) return std::nullopt;
  return to_value(*o);
}
/// Setter and getter of a ScenarioChoice text field (its default "auto").
template <auto M>
void set_choice(ScenarioChoice& c, const SettingValue& v) {
  c.*M = std::get<std::string>(v);
}
template <auto M>
std::optional<SettingValue> get_choice(const ScenarioChoice& c) {
  return SettingValue(c.*M);
}
void set_overlap(ScenarioChoice& c, const SettingValue& v) {
  c.overlap = parse_overlap_mode(std::get<std::string>(v), "--overlap");
}
std::optional<SettingValue> get_overlap(const ScenarioChoice& c) {
  if (!c.overlap) return std::nullopt;
  return SettingValue(std::string(to_string(*c.overlap)));
}

#define HS_OVERRIDE(field) &set_override<&ScenarioOverrides::field>, &get_override<&ScenarioOverrides::field>
#define HS_CHOICE(field) &set_choice<&ScenarioChoice::field>, &get_choice<&ScenarioChoice::field>

constexpr const char* kDeploymentS = "the deployment's";
constexpr const char* kDerive = "0 (derive from memory)";
constexpr unsigned kChosen = kSettingGroupChosen, kDeploy = kSettingGroupDeployment, kCost = kSettingGroupCost;

/// A byte-size setting (every one >= 0, of the deployment's memory unless `key` says otherwise).
Setting bytes_setting(const char* name, const char* flag, const char* help, const char* key,
                      unsigned groups, void (*set)(ScenarioChoice&, const SettingValue&),
                      std::optional<SettingValue> (*get)(const ScenarioChoice&)) {
  return {name, flag, nullptr, SettingKind::kBytes, "bytes", 0, kInf, false, {}, {}, "a byte size", nullptr,
          kDeploymentS, help, key, groups, set, get};
}

/// A pool size from a server log, tokens per GPU (dp rank); 0 derives it from memory as the YAML's absence does.
Setting pool_setting(const char* name, const char* flag, const char* help, const char* key,
                     void (*set)(ScenarioChoice&, const SettingValue&),
                     std::optional<SettingValue> (*get)(const ScenarioChoice&)) {
  return {name, flag, nullptr, SettingKind::kInt64, "tokens per GPU", 0, kInf, false, {}, {}, nullptr,
          "tokens (0 = derive from memory)", kDerive, help, key, kDeploy, set, get};
}

std::vector<Setting> make_table() {
  // Ranges: as the deployment YAML's (core/scenario_loader.cpp) and the checks apply_overrides made before this table.
  std::vector<Setting> t = {
      {"device_buffer_size", "device-buffer-size", nullptr, SettingKind::kInt, "slots per request", 1, kInf, false, {},
       {}, nullptr, nullptr, kDeploymentS, "HiSparse device_buffer_size H: device slots per request (replaces the "
       "deployment's)", "hisparse.device_buffer_size", kChosen, HS_OVERRIDE(device_buffer_size)},
      {"host_to_device_ratio", "host-to-device-ratio", nullptr, SettingKind::kInt, "", 1, kInf, false, {}, {}, nullptr,
       nullptr, kDeploymentS, "HiSparse host_to_device_ratio: logical (host) pool = device pool × this (replaces the "
       "deployment's)", "hisparse.host_to_device_ratio", kChosen, HS_OVERRIDE(host_to_device_ratio)},
      {"max_running_requests", "max-running-requests", nullptr, SettingKind::kInt, "requests per instance", 0, kInf,
       false, {}, {}, nullptr, "(0 = no cap)", "the deployment's (0 = no cap)", "per instance, as SGLang's "
       "--max-running-requests: each of the instance's dp attention ranks runs at most ⌊N / ranks⌋ (SGLang's "
       "TpModelWorker divides it by dp_size under --enable-dp-attention); 0 = no cap", "max_running_requests", kChosen,
       HS_OVERRIDE(max_running_requests)},
      {"top_k", "top-k", nullptr, SettingKind::kInt, "tokens", 1, kInf, false, {}, {}, nullptr, nullptr, kDeploymentS,
       "HiSparse top_k (replaces the deployment's)", "hisparse.top_k", kDeploy, HS_OVERRIDE(top_k)},
      {"mem_fraction_static", "mem-fraction-static", nullptr, SettingKind::kReal, "fraction of HBM", 0, 1, true, {}, {},
       nullptr, nullptr, kDeploymentS, "SGLang --mem-fraction-static, per GPU", "mem_fraction_static", kDeploy,
       HS_OVERRIDE(mem_fraction_static)},
      {"page_size", "page-size", nullptr, SettingKind::kInt, "tokens", 1, kInf, false, {}, {}, nullptr, nullptr,
       kDeploymentS, "KV page size, tokens", "page_size", kDeploy, HS_OVERRIDE(page_size)},
      // SGLang's --kv-cache-dtype (python/sglang/srt/server_args.py at 001067f, ServerArgs.kv_cache_dtype) spells
      // the same dtypes fp8_e4m3 and bfloat16; fp8 here is E4M3.
      {"kv_dtype", "kv-dtype", "kv-cache-dtype", SettingKind::kChoice, "", 0, 0, false, {"bf16", "fp8", "nvfp4"},
       {{"fp8_e4m3", "fp8"}, {"bfloat16", "bf16"}}, nullptr, nullptr, kDeploymentS, "KV cache dtype (nvfp4: models "
       "with an NVFP4 row, DeepSeek-V4)", "kv_dtype", kDeploy, HS_OVERRIDE(kv_dtype)},
      // The step model counts time in int64 ns, so an SLO of inf or 1e15 ms would overflow it and read as none met;
      // 1e6 ms (1000 s per token) already constrains nothing.
      {"tpot_slo_ms", "tpot-slo-ms", nullptr, SettingKind::kReal, "ms per output token", 0.01, 1e6, false, {}, {},
       "a number of ms", "; for no SLO give 1e6 (1000 s per token, which no step reaches)", kDeploymentS,
       "TPOT SLO, ms per output token (replaces the deployment's)", "tpot_slo_ms", kDeploy, HS_OVERRIDE(tpot_slo_ms)},
      {"mtp_draft_tokens", "mtp-draft-tokens", nullptr, SettingKind::kInt, "tokens per step", 0, 16, false, {}, {},
       nullptr, "(0 = no MTP)", kDeploymentS, "speculative decoding with the model's MTP layer: d draft tokens per "
       "step (SGLang --speculative-num-steps d, eagle-topk 1; 0 = off; replaces the deployment's mtp_draft_tokens)",
       "mtp_draft_tokens", kDeploy, HS_OVERRIDE(mtp_draft_tokens)},
      {"mtp_acceptance", "mtp-acceptance", nullptr, SettingKind::kReal, "probability", 0, 1, false, {}, {},
       "a probability", nullptr, kDeploymentS, "MTP: probability a draft token is accepted given its predecessors "
       "were; accepted tokens per step = 1 + a + ... + a^d (replaces the deployment's mtp_acceptance)",
       "mtp_acceptance", kDeploy, HS_OVERRIDE(mtp_acceptance)},
      {"hisparse_prefetch", "hisparse-prefetch", nullptr, SettingKind::kBool, "", 0, 0, false, {}, {}, nullptr, nullptr,
       "the deployment's (SGLang's default on)", "IndexShare prefetch of the next layer's swap-in (off: SGLang's env "
       "flag that disables it)", "hisparse_prefetch", kDeploy, HS_OVERRIDE(hisparse_prefetch)},
      bytes_setting("host_dram_bytes", "host-dram-bytes", "host DRAM per decode node", "host_dram_bytes", kDeploy,
                    HS_OVERRIDE(host_dram_bytes)),
      bytes_setting("hbm_bytes", "hbm-bytes", "HBM per GPU (replaces the hardware's; more than 5 % below the hardware "
                    "file's is warned about: NVIDIA's \"141 GB\" H200 holds 143771MiB = 150.75GB)", "memory.hbm_bytes",
                    kDeploy, HS_OVERRIDE(hbm_bytes)),
      bytes_setting("weight_bytes", "weight-bytes", "all weights of the model (replaces the model's)",
                    "memory.weight_bytes", kDeploy, HS_OVERRIDE(weight_bytes)),
      bytes_setting("weights_per_gpu_bytes", "weights-per-gpu-bytes", "weights per GPU (replaces the sharding "
                    "arithmetic)", "memory.weights_per_gpu_bytes", kDeploy, HS_OVERRIDE(weights_per_gpu_bytes)),
      bytes_setting("activation_reserve_bytes", "activation-reserve-bytes", "activation / CUDA-graph reserve per GPU",
                    "activation_reserve_bytes", kDeploy, HS_OVERRIDE(activation_reserve_bytes)),
      bytes_setting("kv_budget_bytes", "kv-budget-bytes", "HBM for KV per GPU (replaces HBM × mem_fraction_static − "
                    "weights − reserve)", "memory.kv_budget_bytes", kDeploy, HS_OVERRIDE(kv_budget_bytes)),
      pool_setting("full_pool_tokens", "full-pool-tokens", "per GPU (dp rank): max_total_num_tokens without HiSparse, "
                   "from a server log", "memory.full_pool_tokens", HS_OVERRIDE(full_pool_tokens)),
      pool_setting("device_pool_tokens", "device-pool-tokens", "per GPU (dp rank): max_total_num_tokens with "
                   "HiSparse, from a server log", "memory.device_pool_tokens", HS_OVERRIDE(device_pool_tokens)),
      pool_setting("host_pool_tokens", "host-pool-tokens", "per GPU (dp rank): host pool tokens",
                   "memory.host_pool_tokens", HS_OVERRIDE(host_pool_tokens)),
      bytes_setting("host_reserve_bytes", "host-reserve-bytes", "host DRAM per decode node kept for the OS and the "
                    "server", nullptr, kSettingGroupHostReserve, HS_OVERRIDE(host_reserve_bytes)),
      {"cost_params", "cost-params", nullptr, SettingKind::kText, "", 0, 0, false, {}, {}, nullptr, nullptr, "auto",
       "cost-model terms YAML (efficiencies, latencies, overheads, each with its source): auto (the hardware file's "
       "cost_model) or a path", nullptr, kCost, HS_CHOICE(cost_params)},
      {"calibration", "calibration", nullptr, SettingKind::kText, "", 0, 0, false, {}, {}, nullptr, nullptr, "auto",
       "PCIe and swap-in copy calibration: auto (the hardware file's), none (roofline), or a YAML from `hisparse bench "
       "--calibrate`", nullptr, kCost, HS_CHOICE(calibration)},
      {"step_calibration", "step-calibration", nullptr, SettingKind::kText, "", 0, 0, false, {}, {}, nullptr, nullptr,
       "auto", "per-op decode-layer calibration: auto (the hardware file's), none (roofline), or a YAML from "
       "`hisparse bench step --fit`", nullptr, kCost, HS_CHOICE(step_calibration)},
      {"attention_table", "attention-table", nullptr, SettingKind::kText, "", 0, 0, false, {}, {}, nullptr, nullptr,
       "auto", "measured FlashMLA sparse-attention times: auto (the hardware file's attention_table, or the table it "
       "carries over with attention_table_from), none (the roofline at efficiency.attention), or a CSV path", nullptr,
       kCost, HS_CHOICE(attention_table)},
      {"op_tables", "op-tables", nullptr, SettingKind::kText, "", 0, 0, false, {}, {}, nullptr, nullptr, "auto",
       "the engine's kernels timed per GPU (DeepGEMM, FlashMLA, DeepEP, NCCL, SGLang's): auto (the tables of "
       "scenarios/measurements/engine_ops.yaml measured on the deployment's hardware, SGLang deployments), none "
       "(every term modelled as without tables), or an index YAML", nullptr, kCost, HS_CHOICE(op_tables)},
      {"swap_in_kernel", "swap-in-kernel", nullptr, SettingKind::kChoice, "", 0, 0, false, {"sglang", "project"}, {},
       nullptr, nullptr, "the deployment's swap_in_kernel, else its engine's (sglang)", "whose swap-in kernel prices "
       "the plan and miss copy: sglang (SGLang's, the hardware's sglang_swap_in_calibration) or project (this "
       "project's, the hardware's calibration)", "swap_in_kernel", kCost, HS_OVERRIDE(swap_in_kernel)},
      {"overlap", "overlap", nullptr, SettingKind::kChoice, "", 0, 0, false, {"none", "two-batch"}, {}, nullptr,
       nullptr, "the cost parameters'", "overlap of the decode step's two micro-batches", nullptr, kCost,
       &set_overlap, &get_overlap},
  };
  return t;
}

/// A bound as the messages always wrote it: integers plainly, powers of ten from 1e5 as "1e6".
std::string bound_text(double x) {
  if (x >= 1e5 && std::fabs(std::log10(x) - std::round(std::log10(x))) < 1e-12)
    return fmt::format("1e{}", static_cast<int>(std::round(std::log10(x))));
  return fmt::format("{}", x);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The choice `text` stands for (itself, or the choice one of its aliases names); "" when none.
std::string canonical_choice(const SettingSpec& s, const std::string& text) {
  for (const char* c : s.choices)
    if (text == c) return text;
  for (const auto& [alias, choice] : s.value_aliases)
    if (text == alias) return choice;
  return "";
}

bool is_integer_kind(const SettingSpec& s) { return s.kind == SettingKind::kInt || s.kind == SettingKind::kInt64; }

/// The type's own bounds of an integer setting.
std::pair<int64_t, int64_t> type_bounds(const SettingSpec& s) {
  if (s.kind == SettingKind::kInt) return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
}

}  // namespace

const std::vector<Setting>& settings_table() {
  static const std::vector<Setting> table = make_table();
  return table;
}

const Setting* find_setting(const std::string& name, bool aliases) {
  for (const Setting& s : settings_table()) {
    if (name == s.name || name == s.flag) return &s;
    if (!aliases || !s.sglang_alias) continue;
    std::string underscored = s.sglang_alias;
    std::replace(underscored.begin(), underscored.end(), '-', '_');
    if (name == s.sglang_alias || name == underscored) return &s;
  }
  return nullptr;
}

std::string range_text(const SettingSpec& s) {
  if (s.kind == SettingKind::kText || s.kind == SettingKind::kBool) return "";
  std::string body;
  if (s.kind == SettingKind::kChoice) {
    for (size_t i = 0; i < s.choices.size(); ++i)
      body += (i == 0 ? "" : i + 1 == s.choices.size() ? " or " : ", ") + std::string(s.choices[i]);
    return body;
  }
  if (std::isinf(s.hi)) body = fmt::format("{} {}", s.lo_open ? ">" : ">=", bound_text(s.lo));
  else if (is_integer_kind(s)) body = fmt::format("{}..{}", bound_text(s.lo), bound_text(s.hi));
  else body = fmt::format("in {}{}, {}]", s.lo_open ? "(" : "[", bound_text(s.lo), bound_text(s.hi));
  std::string out = s.range_noun ? fmt::format("{} {}", s.range_noun, body) : body;
  if (s.range_note) out += (s.range_note[0] == ';' ? "" : " ") + std::string(s.range_note);
  return out;
}

bool in_range(const SettingSpec& s, const SettingValue& v) {
  switch (s.kind) {
    case SettingKind::kText:
    case SettingKind::kBool: return true;
    case SettingKind::kChoice: return !canonical_choice(s, std::get<std::string>(v)).empty();
    case SettingKind::kInt:
    case SettingKind::kInt64: {
      const int64_t x = std::get<int64_t>(v);
      const auto [tlo, thi] = type_bounds(s);
      return x >= tlo && x <= thi && static_cast<double>(x) >= s.lo && static_cast<double>(x) <= s.hi &&
             !(s.lo_open && static_cast<double>(x) == s.lo);
    }
    case SettingKind::kReal:
    case SettingKind::kBytes: {
      const double x = std::get<double>(v);
      return (s.lo_open ? x > s.lo : x >= s.lo) && x <= s.hi;  // false for nan
    }
  }
  return false;
}

std::string value_text(const SettingValue& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const int64_t* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  return std::get<std::string>(v);
}

std::string range_error(const SettingSpec& s, const std::string& spelling, const SettingValue& v) {
  return fmt::format("{} {}: expected {}", spelling, value_text(v), range_text(s));
}

std::optional<std::string> out_of_range_example(const SettingSpec& s) {
  switch (s.kind) {
    case SettingKind::kText:
    case SettingKind::kBool: return std::nullopt;
    case SettingKind::kChoice: return std::string("no-such-") + s.choices.front();
    case SettingKind::kInt:
    case SettingKind::kInt64:
      return std::to_string(static_cast<int64_t>(std::isinf(s.hi) ? s.lo - 1 : s.hi + 1));
    case SettingKind::kReal:
    case SettingKind::kBytes: return std::isinf(s.hi) ? fmt::format("{}", s.lo - 1) : fmt::format("{}", s.hi * 2 + 1);
  }
  return std::nullopt;
}

std::string in_range_example(const SettingSpec& s) {
  switch (s.kind) {
    case SettingKind::kText: return std::string("no-such-dir/") + s.name + ".yaml";
    case SettingKind::kBool: return "false";
    case SettingKind::kChoice: return s.choices.back();
    case SettingKind::kBytes: return "1GiB";
    case SettingKind::kInt:
    case SettingKind::kInt64:
    case SettingKind::kReal: {
      const double x = std::isinf(s.hi) ? s.lo + 2 : s.hi;
      return s.kind == SettingKind::kReal ? fmt::format("{}", x) : std::to_string(static_cast<int64_t>(x));
    }
  }
  return "";
}

SettingValue parse_setting(const SettingSpec& s, const std::string& text, const std::string& where,
                           const std::string& spelling) {
  switch (s.kind) {
    case SettingKind::kInt:
    case SettingKind::kInt64: {
      const auto [tlo, thi] = type_bounds(s);
      int64_t v = 0;
      const char* end = text.data() + text.size();
      const auto r = std::from_chars(text.data(), end, v);
      if (text.empty() || r.ec != std::errc() || r.ptr != end || v < tlo || v > thi)
        throw_error("{}{} '{}' is not an integer in [{}, {}]", where, spelling, text, tlo, thi);
      return v;
    }
    case SettingKind::kReal: {
      char* end = nullptr;
      const double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size())
        throw_error("{}{} '{}' is not a number (e.g. 0.5, 1e3)", where, spelling, text);
      return v;
    }
    case SettingKind::kBytes: {
      double v = 0;
      // Negative sizes parse, to be refused by the range check with the other fronts' words.
      if (!parse_quantity(text, Unit::kBytes, &v))
        throw_error("{}{} '{}' is not a byte size (expected a number of bytes or one with a unit: {})", where, spelling,
                    text, kByteUnitsHelp);
      return v;
    }
    case SettingKind::kBool: {
      const std::string t = lower(text);
      if (t == "true" || t == "on" || t == "yes" || t == "1") return true;
      if (t == "false" || t == "off" || t == "no" || t == "0") return false;
      throw_error("{}{} '{}' is not a switch (expected true or false, on or off)", where, spelling, text);
    }
    case SettingKind::kChoice: {
      const std::string c = canonical_choice(s, text);
      return c.empty() ? text : c;  // an unknown choice stays as given, for the range check to name
    }
    case SettingKind::kText: return text;
  }
  return text;
}

void throw_range_error(const SettingSpec& s, const std::string& where, const std::string& spelling,
                       const SettingValue& v) {
  throw_error("{}{}", where, range_error(s, spelling, v));
}

std::string setting_help(const SettingSpec& s) {
  std::string out = s.help;
  if (s.kind == SettingKind::kBytes) out += fmt::format("; bytes: {}", kByteUnitsHelp);
  std::vector<std::string> parts;
  if (*s.unit && s.kind != SettingKind::kBytes) parts.push_back(fmt::format("unit: {}", s.unit));
  const std::string range = range_text(s);
  if (!range.empty()) parts.push_back(fmt::format("{}: {}", s.kind == SettingKind::kChoice ? "one of" : "range", range));
  if (s.kind == SettingKind::kBool) parts.push_back("on | off");
  // kText settings show their default as boost's "(=auto)" (apps/scenario_flags.cpp).
  if (s.kind != SettingKind::kText) parts.push_back(fmt::format("default: {}", s.default_text));
  std::string tail;
  for (const std::string& p : parts) tail += (tail.empty() ? "" : "; ") + p;
  return tail.empty() ? out : fmt::format("{} [{}]", out, tail);
}

void read_settings_yaml(const YAML::Node& map, const std::string& file, const std::string& path,
                        ScenarioChoice& choice) {
  if (!map || map.IsNull()) return;
  if (!map.IsMap())
    throw_error("{}: {} (line {}): got {}, expected a mapping of setting to value", file, path, map.Mark().line + 1,
                describe_node(map));
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    const int line = kv.first.Mark().line + 1;
    const Setting* s = find_setting(key, false);
    if (!s || key != s->name) {
      std::string names;
      for (const Setting& t : settings_table()) names += (names.empty() ? "" : ", ") + std::string(t.name);
      throw_error("{}: unknown key '{}.{}' (line {}); expected one of: {}", file, path, key, line, names);
    }
    if (!kv.second.IsScalar())
      throw_error("{} (line {}): {}.{}: got {}, expected a single value", file, line, path, key,
                  describe_node(kv.second));
    set_setting(choice, *s, kv.second.Scalar(), fmt::format("{} (line {}): ", file, line), path + "." + key);
  }
}

const std::vector<std::string>& field_override_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const Setting& s : settings_table()) out.push_back(s.name);
    return out;
  }();
  return keys;
}

void check_override_ranges(const ScenarioOverrides& o, const std::string& command, const std::string& deployment) {
  ScenarioChoice c;
  c.overrides = o;
  for (const Setting& s : settings_table()) {
    if (s.kind == SettingKind::kText || s.set == &set_overlap) continue;
    const std::optional<SettingValue> v = s.get(c);
    if (!v || in_range(s, *v)) continue;
    const std::string replaces =
        s.deployment_key ? fmt::format(" (the flag replaces {}'s {})", deployment, s.deployment_key) : "";
    throw_error("{}: {}{}", command, range_error(s, std::string("--") + s.flag, *v), replaces);
  }
}

}  // namespace hisparse::sim

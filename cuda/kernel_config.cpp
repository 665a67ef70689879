// @brief KernelConfig's text form: parsing with errors that name the key, the canonical spec, the help table.
#include "cuda/kernel_config.h"

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::cuda {
namespace {

/// One key: its range, how to read and write it in a config, and the text of its help line.
struct Key {
  const char* name;
  int64_t lo, hi;
  const char* meaning;
  std::function<int64_t(const KernelConfig&)> get;
  std::function<void(KernelConfig&, int64_t)> set;
  std::function<bool(int64_t)> allowed = nullptr;  // beyond [lo, hi]
  const char* allowed_text = nullptr;
};

const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
      {"swap_in.cluster", 0, 16, "blocks per row of the small-batch cluster kernel (0 = one-block kernel always)",
       [](const KernelConfig& c) { return int64_t(c.swap_in.cluster); },
       [](KernelConfig& c, int64_t v) { c.swap_in.cluster = int(v); },
       [](int64_t v) { return v == 0 || v == 1 || v == 2 || v == 4 || v == 8 || v == 16; }, "0, 1, 2, 4, 8 or 16"},
      {"swap_in.cluster_max_batch", -1, 1 << 20,
       "largest batch the cluster kernel takes (-1 = as many rows as the GPU runs at once)",
       [](const KernelConfig& c) { return int64_t(c.swap_in.cluster_max_batch); },
       [](KernelConfig& c, int64_t v) { c.swap_in.cluster_max_batch = int(v); }},
      {"swap_in.large_batch_cluster", 0, 1, "larger batches: 0 = one-block kernel, 1 = cluster kernel, 1 block/row",
       [](const KernelConfig& c) { return int64_t(c.swap_in.large_batch_cluster); },
       [](KernelConfig& c, int64_t v) { c.swap_in.large_batch_cluster = v != 0; }},
      {"swap_in.table_bits", 0, 2, "cluster kernel hash table: 2^bits times the one-block kernel's",
       [](const KernelConfig& c) { return int64_t(c.swap_in.table_bits); },
       [](KernelConfig& c, int64_t v) { c.swap_in.table_bits = int(v); }},
      {"swap_in.pdl", 0, 1, "programmatic dependent launch of the swap-in kernels",
       [](const KernelConfig& c) { return int64_t(c.swap_in.pdl); },
       [](KernelConfig& c, int64_t v) { c.swap_in.pdl = v != 0; }},
      {"swap_in.phase_timer", 0, 1, "cluster kernel: phase-timed instance (bench swap-in prints the phases)",
       [](const KernelConfig& c) { return int64_t(c.swap_in.phase_timer); },
       [](KernelConfig& c, int64_t v) { c.swap_in.phase_timer = v != 0; }},
      {"topk.blocks_per_sm", 0, 64, "resident blocks per SM the top-k split assumes (0 = occupancy calculator)",
       [](const KernelConfig& c) { return int64_t(c.topk.blocks_per_sm); },
       [](KernelConfig& c, int64_t v) { c.topk.blocks_per_sm = int(v); }},
      {"topk.min_chunk", 512, int64_t(1) << 30, "smallest slice of a top-k row one block takes",
       [](const KernelConfig& c) { return c.topk.min_chunk; },
       [](KernelConfig& c, int64_t v) { c.topk.min_chunk = v; }},
  };
  return k;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string key_names() {
  std::string out;
  for (const Key& k : keys()) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

}  // namespace

KernelConfig parse_kernel_config(std::string_view spec) {
  KernelConfig c;
  spec = trim(spec);
  if (spec.empty() || spec == "default") return c;
  std::vector<std::string> seen;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw_error("--kernel-config: '{}' is not key=value (keys: {}; see docs/kernels.md)", item, key_names());
    const std::string name(trim(item.substr(0, eq))), text(trim(item.substr(eq + 1)));
    const Key* key = nullptr;
    for (const Key& k : keys())
      if (name == k.name) key = &k;
    if (!key) throw_error("--kernel-config: unknown key '{}' (keys: {}; see docs/kernels.md)", name, key_names());
    for (const std::string& s : seen)
      if (s == name) throw_error("--kernel-config: key '{}' given twice", name);
    seen.push_back(name);
    char* end = nullptr;
    errno = 0;
    const long long v = text.empty() ? 0 : std::strtoll(text.c_str(), &end, 10);
    const bool number = !text.empty() && *end == 0 && errno == 0;
    const bool ok = number && v >= key->lo && v <= key->hi && (!key->allowed || key->allowed(v));
    if (!ok) {
      const std::string expected =
          key->allowed_text ? key->allowed_text : fmt::format("an integer in {} .. {}", key->lo, key->hi);
      throw_error("--kernel-config: {} = '{}', expected {}", name, text, expected);
    }
    key->set(c, v);
  }
  return c;
}

std::string to_spec(const KernelConfig& config) {
  const KernelConfig d;
  std::string out;
  for (const Key& k : keys())
    if (k.get(config) != k.get(d)) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k.name, k.get(config));
  return out.empty() ? "default" : out;
}

std::string kernel_config_help() {
  const KernelConfig d;
  std::string out;
  for (const Key& k : keys()) {
    const std::string range = k.allowed_text ? k.allowed_text : fmt::format("{} .. {}", k.lo, k.hi);
    out += fmt::format("  {:<28} {} [{}; default {}]\n", k.name, k.meaning, range, k.get(d));
  }
  return out;
}

void reject_retired_kernel_env() {
  static const char* const retired[] = {
      "HISPARSE_FAST_KERNEL",         "HISPARSE_FAST_SCORE_ACCUM",       "HISPARSE_WGMMA_V_LAYOUT",
      "HISPARSE_GATHER_KERNEL",       "HISPARSE_BACKUP_KERNEL",          "HISPARSE_COPY_UNROLL",
      "HISPARSE_COPY_TMA_ROWS",       "HISPARSE_COPY_BLOCKS_PER_SM",     "HISPARSE_SWAP_IN_CLUSTER",
      "HISPARSE_SWAP_IN_CLUSTER_MAX_BATCH", "HISPARSE_SWAP_IN_LARGE",    "HISPARSE_SWAP_IN_TABLE_BITS",
      "HISPARSE_SWAP_IN_PDL",         "HISPARSE_SWAP_IN_PHASES",         "HISPARSE_TOPK_BLOCKS_PER_SM",
      "HISPARSE_TOPK_MIN_CHUNK",      "HISPARSE_BENCH_NO_COPY_ENGINE"};
  for (const char* name : retired)
    if (const char* v = std::getenv(name); v != nullptr)
      throw_error("environment variable {}={} is no longer read: kernel variants are chosen with --kernel-config "
                  "(`hisparse validate --help`, docs/kernels.md); unset it",
                  name, v);
}

}  // namespace hisparse::cuda

// @brief Reading and interpolating the measured FlashMLA attention tables (see attention_table.h).
#include "sim/cost/terms/attention_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/csv_reader.h"
#include "core/scenario_loader.h"

namespace hisparse::sim {
namespace {

constexpr const char* kKernels[] = {"flashmla_sparse_fwd", "flashmla_fp8_decode"};
constexpr const char* kPad = "_pad64";
constexpr int kPaddedHeads = 64;  // Hopper's FlashMLA sparse kernels run 64 query heads at least (SGLang pads to 64)

/// "batch 1 heads 128 K 2048" -> {1, 128, 2048}; false when the text is not that shape.
bool parse_shape(const std::string& text, int* batch, int* heads, int* K) {
  char tail = 0;
  return std::sscanf(text.c_str(), "batch %d heads %d K %d%c", batch, heads, K, &tail) == 3 && *batch > 0 &&
         *heads > 0 && *K > 0;
}

/// Piecewise linear through the sorted points (x, y); beyond the last, linear from the last two (`*beyond` set);
/// below the first, the first's y.
double piecewise(const std::vector<std::pair<double, double>>& pts, double x, bool* beyond) {
  if (x <= pts.front().first) return pts.front().second;
  for (size_t i = 1; i < pts.size(); ++i)
    if (x <= pts[i].first) {
      const auto& [x0, y0] = pts[i - 1];
      const auto& [x1, y1] = pts[i];
      return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
    }
  *beyond = true;
  const auto& [x0, y0] = pts[pts.size() - 2];
  const auto& [x1, y1] = pts.back();
  return y1 + (y1 - y0) * (x - x1) / (x1 - x0);
}

}  // namespace

const char* attention_kernel_for(KvDtype dtype) { return dtype == KvDtype::kFp8 ? kKernels[1] : kKernels[0]; }

AttentionTable AttentionTable::load(const std::string& path) {
  CsvReader csv(path, "the attention table (expected a FlashMLA timing CSV)",
                "the header kernel,shape,median_us,...");
  AttentionTable t;
  t.file_ = path;
  const size_t c_kernel = csv.column("kernel"), c_shape = csv.column("shape"), c_us = csv.column("median_us"),
               c_method = csv.column("method"), c_device = csv.column("device");
  std::vector<std::string> v;
  while (csv.next(v)) {
    auto bad = [&](size_t col, const std::string& expected) { csv.bad(v, col, expected); };
    std::string name = v[c_kernel];
    const bool padded = name.size() > std::strlen(kPad) && name.compare(name.size() - std::strlen(kPad), std::string::npos, kPad) == 0;
    if (padded) name.resize(name.size() - std::strlen(kPad));
    if (std::find(std::begin(kKernels), std::end(kKernels), name) == std::end(kKernels))
      bad(c_kernel, "flashmla_sparse_fwd, flashmla_fp8_decode, or either with _pad64");
    int batch = 0, heads = 0, K = 0;
    if (!parse_shape(v[c_shape], &batch, &heads, &K)) bad(c_shape, "'batch B heads H K K' with positive integers");
    // The padded rows are the kernel below 64 heads, the plain rows at 64 and above: one head axis.
    if (padded && heads >= kPaddedHeads) bad(c_shape, "fewer than 64 heads on a _pad64 row");
    if (!padded && heads < kPaddedHeads) bad(c_shape, "64 heads or more on a row without _pad64 (Hopper pads to 64)");
    double us = 0;
    try {
      size_t used = 0;
      us = std::stod(v[c_us], &used);
      if (used != v[c_us].size()) us = -1;
    } catch (const std::exception&) {
      us = -1;
    }
    if (!(us > 0) || !std::isfinite(us)) bad(c_us, "a time in µs > 0");
    if (v[c_method] != "graph") bad(c_method, "graph (a decode step replays its kernels from a CUDA graph)");
    if (v[c_device].empty()) bad(c_device, "the device name");
    if (t.device_.empty()) t.device_ = v[c_device];
    if (v[c_device] != t.device_) bad(c_device, fmt::format("one device per table ('{}' above)", t.device_));
    Series& s = t.kernels_[name].grid[heads][K];
    if (std::any_of(s.begin(), s.end(), [&](const auto& p) { return p.first == batch; }))
      bad(c_shape, fmt::format("one row per kernel and shape ({}{} at this shape came before)", name, padded ? kPad : ""));
    s.emplace_back(batch, us);
  }
  if (t.kernels_.empty()) throw_error("{}: no rows", path);
  for (auto& [name, k] : t.kernels_) {
    std::set<int> ks;
    for (const auto& [h, by_k] : k.grid)
      for (const auto& [K, s] : by_k) ks.insert(K);
    std::vector<double> reference;
    for (auto& [h, by_k] : k.grid) {
      for (int K : ks)
        if (!by_k.count(K)) throw_error("{}: {} has no rows at heads {} K {} (the heads × K grid must be full)", path, name, h, K);
      for (auto& [K, s] : by_k) {
        std::sort(s.begin(), s.end());
        std::vector<double> b;
        for (const auto& p : s) b.push_back(p.first);
        if (b.size() < 2) throw_error("{}: {} heads {} K {} has {} batch(es); at least two are needed", path, name, h, K, b.size());
        if (reference.empty()) reference = b;
        if (b != reference)
          throw_error("{}: {} heads {} K {} was measured at other batches than the rest of the kernel", path, name, h, K);
      }
    }
    if (k.grid.size() < 2 || ks.size() < 2)
      throw_error("{}: {} has {} head count(s) and {} K value(s); at least two of each are needed", path, name,
                  k.grid.size(), ks.size());
  }
  return t;
}

const AttentionTable::Kernel& AttentionTable::kernel(const std::string& name) const {
  const auto it = kernels_.find(name);
  if (it == kernels_.end()) throw_error("{}: no rows of kernel {}", file_, name);
  return it->second;
}

AttentionLookup AttentionTable::lookup(const std::string& name, double batch, double heads, double K) const {
  const Kernel& k = kernel(name);
  AttentionLookup out;
  // Interpolate over batch within each (heads, K), then over K, then over heads.
  std::vector<std::pair<double, double>> over_heads;
  for (const auto& [h, by_k] : k.grid) {
    std::vector<std::pair<double, double>> over_k;
    for (const auto& [kk, s] : by_k) over_k.emplace_back(kk, piecewise(s, batch, &out.extrapolated_batch));
    over_heads.emplace_back(h, piecewise(over_k, K, &out.extrapolated_k));
  }
  out.us = piecewise(over_heads, heads, &out.extrapolated_heads);
  return out;
}

std::vector<double> AttentionTable::batches(const std::string& name) const {
  std::vector<double> out;
  for (const auto& p : kernel(name).grid.begin()->second.begin()->second) out.push_back(p.first);
  return out;
}

std::vector<double> AttentionTable::heads(const std::string& name) const {
  std::vector<double> out;
  for (const auto& [h, by_k] : kernel(name).grid) out.push_back(h);
  return out;
}

std::vector<double> AttentionTable::ks(const std::string& name) const {
  std::vector<double> out;
  for (const auto& [K, s] : kernel(name).grid.begin()->second) out.push_back(K);
  return out;
}

AttentionLookup AttentionPricing::layer_us(KvDtype dtype, double batch, double heads, double K, double flops,
                                           double bytes, const HardwareSpec& hw) const {
  const char* name = attention_kernel_for(dtype);
  AttentionLookup at = table->lookup(name, batch, heads, K);
  if (from_hardware.empty()) return at;
  const double floor = table->time_us(name, 1, heads, K);
  const double here = std::max(flops / hw.bf16_flops, bytes / hw.hbm_bytes_per_s);
  const double there = std::max(flops / from_bf16_flops, bytes / from_hbm_bytes_per_s);
  if (there > 0) at.us = floor + (at.us - floor) * here / there;
  return at;
}

std::string AttentionPricing::label() const {
  if (!table) return "modelled (roofline at efficiency.attention)";
  const std::string file = std::filesystem::path(table->file()).filename().string();
  if (from_hardware.empty()) return fmt::format("measured (FlashMLA, {}, {})", file, table->device());
  return fmt::format("modelled (FlashMLA measured on {} ({}, {}), carried over: floor kept, the rest scaled by the "
                     "roofline ratio)",
                     from_hardware, table->device(), file);
}

AttentionPricing choose_attention_pricing(const std::string& flag, const HardwareSpec& hw) {
  AttentionPricing p;
  if (flag == "none") return p;
  if (!flag.empty() && flag != "auto") {
    p.table = std::make_shared<const AttentionTable>(AttentionTable::load(flag));
    return p;
  }
  if (!hw.attention_table.empty()) {
    p.table = std::make_shared<const AttentionTable>(AttentionTable::load(hw.attention_table));
    return p;
  }
  if (hw.attention_table_from.empty()) return p;
  const HardwareSpec from = load_hardware_spec(hw.attention_table_from);
  if (from.attention_table.empty())
    throw_error("hardware {}: attention_table_from names {} ({}), which has no attention_table of its own", hw.name,
                from.name, hw.attention_table_from);
  p.table = std::make_shared<const AttentionTable>(AttentionTable::load(from.attention_table));
  p.from_hardware = from.name;
  p.from_bf16_flops = from.bf16_flops;
  p.from_hbm_bytes_per_s = from.hbm_bytes_per_s;
  return p;
}

}  // namespace hisparse::sim

// @brief `hisparse info --scenario S [--json]`: the memory budget of a scenario, every figure with its formula.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command_line.h"
#include "apps/command.h"
#include "core/dsv4_pool_budget.h"
#include "core/error.h"
#include "core/io/json_writer.h"
#include "core/pipeline_stages.h"
#include "core/family/family_registry.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "core/text_format.h"
#include "sim/advise/advisor.h"

namespace hisparse::apps {

namespace {

namespace po = boost::program_options;

/// Bytes in decimal units with two decimals, as SGLang logs them ("Allocating 93.45 GB host memory").
std::string human_bytes(double b) {
  const double a = std::fabs(b);
  if (a >= 1e12) return fmt::format("{:.2f} TB", b / 1e12);
  if (a >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  return fmt::format("{} B", group_digits(static_cast<int64_t>(std::llround(b))));
}

std::string show(const Figure& f) {
  if (f.unit == "B") return human_bytes(f.value);
  const std::string n = f.value == std::floor(f.value) ? group_digits(static_cast<int64_t>(f.value))
                                                       : fmt::format("{:.4g}", f.value);
  return f.unit.empty() ? n : n + " " + f.unit;
}

constexpr JsonWriter::Layout kInline = JsonWriter::Layout::kInline;

/// A figure on one line; its value at 17 significant digits, which reads back exactly.
void json_figure(JsonWriter& j, const Figure& f) {
  j.begin_object(kInline).member("key", f.key).member("label", f.label).key("value").general(f.value, 17);
  j.member("unit", f.unit).member("formula", f.formula).end_object();
}

void json_head(JsonWriter& j, const Scenario& s) {
  j.begin_object().member("scenario", s.deployment.name).member("source", s.source).member("model", s.model.name);
  j.member("hardware", s.hardware.name);
}

void print_json(const Scenario& s, const MemoryBudget& b) {
  JsonWriter j(2);
  json_head(j, s);
  j.key("figures").begin_array();
  for (const Figure* f : b.figures()) json_figure(j, *f);
  j.end_array().member("attention", b.attention).key("per_seq_len").begin_array();
  for (const SeqLenBudget& q : b.per_seq_len) {
    j.begin_object(kInline).member("seq_len", q.seq_len).key("figures").begin_array(JsonWriter::Layout::kLines, 6);
    std::vector<const Figure*> fs = {&q.full_kv_bytes,      &q.full_latent_bytes,   &q.full_indexer_bytes,
                                     &q.hisparse_hbm_bytes, &q.hisparse_host_bytes, &q.max_requests_full,
                                     &q.max_requests_hisparse};
    if (b.sliding_layer_count > 0) fs.push_back(&q.swa_tokens);
    for (const Figure* f : fs) json_figure(j, *f);
    j.end_array().end_object();
  }
  j.end_array().end_object();
  fmt::print("{}\n", j.str());
}

void print_section(const std::string& title, const std::vector<const Figure*>& figs) {
  fmt::print("\n{}\n", title);
  for (const Figure* f : figs) fmt::print("  {:<46} {:>18}   {}\n", f->label, show(*f), f->formula);
}

/// A model without a sparse indexer (GQA / MHA, with or without sliding layers): SGLang's MHA or SWA pools, no HiSparse.
void print_gqa_text(const Scenario& s, const MemoryBudget& b) {
  const DeploymentSpec& d = s.deployment;
  const ModelSpec& m = s.model;
  fmt::print("scenario {}  ({})\n", d.name, s.source);
  fmt::print("  model {} ({}: {} query heads, {} KV heads of {}{}) · hardware {} · decode {} × {} GPUs (tp {}, "
             "dp_attention {}, ep {})\n",
             m.name, b.attention, m.attention_heads, m.num_key_value_heads, m.head_dim,
             b.sliding_layer_count > 0 ? fmt::format("; window {} on {} of {} layers", m.sliding_window,
                                                      b.sliding_layer_count, m.layers)
                                       : "",
             s.hardware.name, d.decode.count, d.decode.gpus, d.decode.tp, d.decode.dp_attention, d.decode.ep);
  fmt::print("  page_size {} · {} KV · mem_fraction_static {}{}\n", d.page_size,
             to_string(d.kv_dtype), d.mem_fraction_static,
             b.sliding_layer_count > 0 ? fmt::format(" · swa_full_tokens_ratio {}", d.swa_full_tokens_ratio) : "");
  fmt::print("  HiSparse: not applicable (no sparse indexer: HiSparse offloads what DeepSeek Sparse Attention's "
             "indexer selects)\n");
  if (b.double_sparse) {
    const DoubleSparsityConfig& ds = d.double_sparsity;
    fmt::print("  Double Sparsity on: {} heavy channels per KV head ({} calibration), {} heavy tokens per step past {} "
               "tokens (SGLang --enable-double-sparsity)\n",
               ds.heavy_channel_num, ds.channel_type, ds.heavy_token_num, ds.sparse_decode_threshold);
  }
  if (b.linear_layer_count > 0)
    fmt::print("  hybrid: {} of {} layers are linear attention with a fixed Mamba state per request (nothing to offload "
               "or select); a sparse indexer could offload only the KV of the {} full-attention layers\n",
               b.linear_layer_count, m.layers, b.full_layers);
  std::vector<const Figure*> per_token = {&b.kv_layers, &b.kv_heads_per_rank, &b.latent_row_bytes};
  if (b.sliding_layer_count > 0) per_token.insert(per_token.end(), {&b.full_attention_layers, &b.sliding_layers});
  per_token.push_back(&b.latent_bytes_per_token);
  if (b.double_sparse)
    per_token.insert(per_token.end(), {&b.ds_heavy_channel_num, &b.label_row_bytes, &b.label_bytes_per_token});
  per_token.push_back(&b.full_cell_bytes);
  print_section("Bytes per token", per_token);
  print_section("HBM per GPU", {&b.hbm_bytes, &b.weights_per_gpu_bytes, &b.activation_reserve_bytes, &b.kv_budget_bytes});
  std::vector<const Figure*> pools;
  if (b.sliding_layer_count > 0) pools = {&b.profile_pool_tokens, &b.swa_full_tokens_ratio, &b.full_pool_tokens,
                                          &b.swa_pool_tokens};
  else pools = {&b.full_pool_tokens};
  if (b.double_sparse) pools.push_back(&b.label_pool_bytes);
  if (b.linear_layer_count > 0) {
    print_section("SGLang Mamba pools per GPU (HybridReqToTokenPool → MambaPool: one state slot per request)",
                  {&b.linear_layers, &b.mamba_state_per_request, &b.mamba_full_memory_ratio, &b.mamba_slots,
                   &b.mamba_pool_bytes, &b.max_requests_by_mamba});
    print_section("SGLang KV pool per GPU (HybridLinearKVPool: full-attention layers only; max_total_num_tokens)", pools);
  } else {
    print_section(b.sliding_layer_count > 0 ? "SGLang SWA pools per GPU (SWAKVPool; full pool = max_total_num_tokens)"
                  : b.double_sparse ? "SGLang pool per GPU (DoubleSparseTokenToKVPool: K, V and the label cache)"
                                    : "SGLang pool per GPU (MHATokenToKVPool; max_total_num_tokens in the server log)",
                  pools);
  }
  fmt::print("\nOne request by sequence length (max requests: per dp rank, memory limits only — `hisparse plan` adds "
             "the SLO limit)\n");
  fmt::print("  {:>8} {:>12} {:>14} {:>9}\n", "seq_len", "KV / request", "sliding kept", "max full");
  for (const auto& q : b.per_seq_len)
    fmt::print("  {:>8} {:>12} {:>14} {:>9}\n", group_digits(q.seq_len), human_bytes(q.full_kv_bytes.value),
               b.sliding_layer_count > 0 ? group_digits(static_cast<int64_t>(q.swa_tokens.value)) : std::string("-"),
               group_digits(static_cast<int64_t>(q.max_requests_full.value)));
  if (!b.per_seq_len.empty()) {
    const SeqLenBudget& q = b.per_seq_len.front();
    fmt::print("  formulas (seq_len {}):\n", group_digits(q.seq_len));
    std::vector<const Figure*> fs = {&q.full_kv_bytes, &q.max_requests_full};
    if (b.sliding_layer_count > 0) fs.insert(fs.begin() + 1, &q.swa_tokens);
    for (const Figure* f : fs) fmt::print("    {:<38} {}\n", f->label, f->formula);
  }
  if (b.kv_budget_bytes.value <= 0)
    fmt::print("\nwarning: no HBM left for KV: the weights do not fit at mem_fraction_static {}\n", d.mem_fraction_static);
}

/// DeepSeek-V4: SGLang's DSV4 pools (sliding window, C4, C128, indexer, compress states), today's sizing, the
/// request-capacity sizing of PR #33979 and the full-token usage of PR #30909.
void print_dsv4_text(const Scenario& s, const Dsv4PoolBudget& v) {
  const DeploymentSpec& d = s.deployment;
  const HiSparseConfig& hs = d.hisparse;
  fmt::print("scenario {}  ({})\n", d.name, s.source);
  fmt::print("  model {} (compressed attention: window {}, C4 top_k {}) · hardware {} · decode {} × {} GPUs (tp {}, "
             "dp_attention {}, ep {}){}\n",
             s.model.name, s.model.window_size, s.model.top_k, s.hardware.name, d.decode.count, d.decode.gpus, d.decode.tp,
             d.decode.dp_attention, d.decode.ep,
             (d.decode.pp > 1 ? fmt::format(" · pipeline pp {} (each GPU holds one stage: the KV layers below)",
                                            d.decode.pp)
                              : std::string()) +
                 (d.pd_disaggregation ? " · PD disaggregation" : ""));
  fmt::print("  HiSparse {} · top_k {} · device_buffer_size {} · host_to_device_ratio {} · page_size {} · {} KV · "
             "mem_fraction_static {} · max_running_requests {}\n",
             d.hisparse_enabled ? "on (C4 caches only)" : "off", hs.top_k, hs.device_buffer_size, hs.host_to_device_ratio,
             d.page_size, to_string(d.kv_dtype), d.mem_fraction_static, d.max_running_requests);
  fmt::print("\nKV entry sizes per layer (the deployment's kv_dtype picks one)\n");
  for (const Dsv4RowSize& r : v.rows)
    fmt::print("  {:<6} main {:>5} B + C4 indexer {:>4} B   {}\n", r.dtype,
               r.main_bytes > 0 ? group_digits(r.main_bytes) : std::string("-"), r.indexer_bytes, r.formula);
  print_section("Layers and entries", {&v.swa_only_layers, &v.c4_layers, &v.c128_layers, &v.mtp_inflation, &v.kv_row_bytes,
                                       &v.indexer_key_bytes, &v.window_size, &v.swa_full_tokens_ratio,
                                       &v.c4_shrink_factor, &v.c4_state_ring, &v.c4_state_bytes,
                                       &v.c4_indexer_state_bytes, &v.c128_state_ring, &v.c128_state_bytes});
  print_section("Bytes per full token (SGLang DSV4PoolConfigurator)",
                {&v.swa_term, &v.c4_term, &v.c128_term, &v.indexer_term, &v.c4_state_term, &v.bytes_per_full_token});
  print_section("HBM per GPU", {&v.hbm.hbm_bytes, &v.hbm.weights_per_gpu_bytes, &v.hbm.activation_reserve_bytes,
                                &v.hbm.kv_budget_bytes, &v.c128_state_fixed_bytes});
  print_section("SGLang DSV4 pools per GPU (dp rank); full = max_total_num_tokens in the server log",
                {&v.full_tokens, &v.swa_tokens, &v.c4_device_entries, &v.c128_entries, &v.c4_state_rows,
                 &v.c4_host_entries, &v.c4_host_bytes});
  if (v.request_capacity_applicable)
    print_section("C4 device pool by request capacity (sglang PR #33979, open)",
                  {&v.rc_entries_per_request, &v.rc_request_slots, &v.rc_c4_device_entries, &v.rc_c4_device_bytes,
                   &v.rc_base_bytes_per_full_token, &v.rc_full_tokens});
  else
    fmt::print("\nC4 device pool by request capacity (sglang PR #33979): not applicable (needs HiSparse on and "
               "max_running_requests > 0)\n");
  print_section("Full token usage of an empty pool (sglang PR #30909, open)",
                {&v.usage_capacity_before, &v.usage_empty_before, &v.usage_empty_after});
  // The memory budget plan, simulate and advise read: both modes' pools and a request's footprint and capacity.
  const MemoryBudget b = compute_memory_budget(s, default_seq_lens());
  fmt::print("\nOne request by sequence length (per dp rank, memory limits only; {}; `hisparse plan` adds PCIe and SLO "
             "limits)\n", dsv4_pools_line(b));
  fmt::print("  {:>8} {:>12} {:>14} {:>14} {:>9} {:>9}\n", "seq_len", "full KV", "HiSparse HBM", "HiSparse host",
             "max full", "max HiSp");
  for (const auto& q : b.per_seq_len)
    fmt::print("  {:>8} {:>12} {:>14} {:>14} {:>9} {:>9}\n", group_digits(q.seq_len), human_bytes(q.full_kv_bytes.value),
               human_bytes(q.hisparse_hbm_bytes.value), human_bytes(q.hisparse_host_bytes.value),
               group_digits(static_cast<int64_t>(q.max_requests_full.value)),
               group_digits(static_cast<int64_t>(q.max_requests_hisparse.value)));
  fmt::print("\nHiSparse offloads the C4 main KV only; the sliding-window, C128, indexer and state pools stay on the "
             "GPU.\nNot modelled:\n");
  for (const std::string& n : v.not_modelled) fmt::print("  - {}\n", n);
  if (v.hbm.kv_budget_bytes.value <= 0)
    fmt::print("\nwarning: no HBM left for KV: the weights do not fit at mem_fraction_static {}\n", d.mem_fraction_static);
}

void print_dsv4_json(const Scenario& s, const Dsv4PoolBudget& v) {
  const std::vector<const Figure*> figs = {
      &v.swa_only_layers, &v.c4_layers, &v.c128_layers, &v.mtp_inflation, &v.kv_row_bytes, &v.indexer_key_bytes,
      &v.window_size, &v.swa_full_tokens_ratio, &v.c4_shrink_factor, &v.c4_state_ring, &v.c4_state_bytes,
      &v.c4_indexer_state_bytes, &v.c128_state_ring, &v.c128_state_bytes, &v.c128_state_fixed_bytes, &v.swa_term, &v.c4_term, &v.c128_term, &v.indexer_term, &v.c4_state_term,
      &v.bytes_per_full_token, &v.hbm.hbm_bytes, &v.hbm.weights_per_gpu_bytes, &v.hbm.activation_reserve_bytes,
      &v.hbm.kv_budget_bytes, &v.full_tokens, &v.swa_tokens, &v.c4_device_entries, &v.c128_entries, &v.c4_state_rows,
      &v.c4_host_entries, &v.c4_host_bytes, &v.usage_capacity_before, &v.usage_empty_before, &v.usage_empty_after};
  std::vector<const Figure*> all = figs;
  if (v.request_capacity_applicable)
    all.insert(all.end(), {&v.rc_entries_per_request, &v.rc_request_slots, &v.rc_c4_device_entries,
                           &v.rc_c4_device_bytes, &v.rc_base_bytes_per_full_token, &v.rc_full_tokens});
  JsonWriter j(2);
  json_head(j, s);
  j.member("attention", "dsv4-compressed").key("figures").begin_array();
  for (const Figure* f : all) json_figure(j, *f);
  j.end_array().end_object();
  fmt::print("{}\n", j.str());
}

void print_text(const Scenario& s, const MemoryBudget& b) {
  if (b.model_family().lists_every_pool_figure()) return print_gqa_text(s, b);  // GQA families: one pool table
  const DeploymentSpec& d = s.deployment;
  const HiSparseConfig& hs = d.hisparse;
  fmt::print("scenario {}  ({})\n", d.name, s.source);
  fmt::print("  model {} · hardware {} · decode {} × {} GPUs (tp {}, dp_attention {}, ep {}){}\n", s.model.name,
             s.hardware.name, d.decode.count, d.decode.gpus, d.decode.tp, d.decode.dp_attention, d.decode.ep,
             d.pd_disaggregation ? " · PD disaggregation" : "");
  // vLLM's host pool in GiB replaces the ratio (docs/capacity.md): say so, and which engine's flags those are.
  const std::string host_knob = hs.host_pool_gib > 0 ? fmt::format("host_pool_gib {} ({})", hs.host_pool_gib, hs.host_pool_sharing)
                                                     : fmt::format("host_to_device_ratio {}", hs.host_to_device_ratio);
  fmt::print("  HiSparse {} · top_k {} · device_buffer_size {} · {} · page_size {} · {} KV · "
             "mem_fraction_static {}\n",
             d.hisparse_enabled ? "on" : "off", hs.top_k, hs.device_buffer_size, host_knob, d.page_size,
             to_string(d.kv_dtype), d.mem_fraction_static);
  if (hs.host_pool_gib > 0)
    fmt::print("  vLLM: HiSparseConnector kv_connector_extra_config '{}', hisparse_config device_buffer_size {}\n",
               JsonWriter().begin_object(kInline).member("host_pool_gib", hs.host_pool_gib).end_object().str(),
               hs.device_buffer_size);
  else
    fmt::print("  SGLang flag: --hisparse-config '{}'\n",
               sim::hisparse_config_json(hs.top_k, hs.device_buffer_size, hs.host_to_device_ratio));

  std::vector<const Figure*> per_token = {&b.kv_layers, &b.latent_row_bytes, &b.indexer_key_bytes};
  if (b.indexer_layers != b.full_layers) per_token.push_back(&b.indexer_cache_layers);
  per_token.insert(per_token.end(), {&b.latent_bytes_per_token, &b.indexer_bytes_per_token, &b.full_cell_bytes,
                                     &b.hisparse_cell_bytes});
  print_section("Bytes per token", per_token);
  print_section("HBM per GPU", {&b.hbm_bytes, &b.weights_per_gpu_bytes, &b.activation_reserve_bytes, &b.kv_budget_bytes});
  print_section("SGLang pools per GPU (dp rank); device pool = max_total_num_tokens in the server log",
                {&b.full_pool_tokens, &b.device_pool_tokens, &b.logical_pool_tokens, &b.indexer_pool_tokens,
                 &b.device_latent_pool_bytes, &b.indexer_pool_bytes});
  print_section("Host memory", {&b.host_pool_tokens, &b.host_pool_bytes_per_gpu, &b.host_pool_bytes_per_node,
                                &b.host_dram_bytes, &b.host_dram_left_bytes});
  print_section("Device buffer per request", {&b.device_buffer_tokens, &b.device_buffer_bytes,
                                              &b.max_buffers_per_device_pool});

  fmt::print("\nOne request by sequence length (max requests: per dp rank, memory limits only — `hisparse plan` adds "
             "PCIe and SLO limits)\n");
  fmt::print("  {:>8} {:>12} {:>12} {:>12} {:>14} {:>14} {:>9} {:>9}\n", "seq_len", "full KV", "latent", "indexer",
             "HiSparse HBM", "HiSparse host", "max full", "max HiSp");
  for (const auto& q : b.per_seq_len)
    fmt::print("  {:>8} {:>12} {:>12} {:>12} {:>14} {:>14} {:>9} {:>9}\n", group_digits(q.seq_len),
               human_bytes(q.full_kv_bytes.value), human_bytes(q.full_latent_bytes.value),
               human_bytes(q.full_indexer_bytes.value), human_bytes(q.hisparse_hbm_bytes.value),
               human_bytes(q.hisparse_host_bytes.value), group_digits(static_cast<int64_t>(q.max_requests_full.value)),
               group_digits(static_cast<int64_t>(q.max_requests_hisparse.value)));
  if (!b.per_seq_len.empty()) {
    const SeqLenBudget& q = b.per_seq_len.front();
    fmt::print("  formulas (seq_len {}):\n", group_digits(q.seq_len));
    for (const Figure* f : {&q.full_kv_bytes, &q.hisparse_hbm_bytes, &q.hisparse_host_bytes, &q.max_requests_full,
                            &q.max_requests_hisparse})
      fmt::print("    {:<38} {}\n", f->label, f->formula);
  }

  // Conditions under which SGLang itself would refuse to start.
  if (b.kv_budget_bytes.value <= 0)
    fmt::print("\nwarning: no HBM left for KV: the weights do not fit at mem_fraction_static {}\n", d.mem_fraction_static);
  const double ten_gib = 10.0 * 1073741824.0;
  if (b.host_dram_left_bytes.value < ten_gib)
    fmt::print("\nwarning: host pools leave {} of host DRAM; SGLang refuses to allocate a host pool unless 10 GiB "
               "stay free\n",
               human_bytes(b.host_dram_left_bytes.value));
}

}  // namespace

int run_info(int argc, char** argv) {
  po::options_description opts("hisparse info: the memory budget of a scenario, each figure with its formula");
  std::string scenario = "dsv32-8xh200-1tb";
  opts.add_options()("help,h", "show this help")(
      "scenario,s", po::value<std::string>(&scenario)->default_value(scenario),
      "deployment name (scenarios/deployments/<name>.yaml) or path to a deployment YAML")(
      "json", "print JSON instead of the table");
  po::variables_map vm;
  try {
    store_flags(parse_args(argc, argv, opts), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw_error("{} (see hisparse info --help)", e.what());
  }
  if (vm.count("help")) {
    std::cout << opts << "\nscenarios:";
    for (const auto& n : list_scenarios("deployments")) std::cout << " " << n;
    std::cout << "\n";
    return 0;
  }
  const Scenario s = load_scenario(scenario);
  const bool json = vm.count("json") > 0;
  // DeepSeek-V4's compressed attention has pools of its own (core/dsv4_pool_budget.h).
  if (family_of(s).compressed_pools()) {
    // Pipeline parallelism: the pools of one GPU, which holds the binding stage's layers (core/pipeline_stages.h).
    const Dsv4PoolBudget v = compute_dsv4_pool_budget(pipeline_stage_scenario(s));
    json ? print_dsv4_json(s, v) : print_dsv4_text(s, v);
    return 0;
  }
  const MemoryBudget b = compute_memory_budget(s);
  json ? print_json(s, b) : print_text(s, b);
  return 0;
}

}  // namespace hisparse::apps

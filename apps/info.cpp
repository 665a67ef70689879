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
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "core/text_format.h"

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

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out;
}

std::string json_figure(const Figure& f) {
  return fmt::format(R"({{"key": "{}", "label": "{}", "value": {}, "unit": "{}", "formula": "{}"}})", f.key,
                     json_escape(f.label), fmt::format("{:.17g}", f.value), f.unit, json_escape(f.formula));
}

void print_json(const Scenario& s, const MemoryBudget& b) {
  std::string out = fmt::format("{{\n  \"scenario\": \"{}\",\n  \"source\": \"{}\",\n  \"model\": \"{}\",\n"
                                "  \"hardware\": \"{}\",\n  \"figures\": [\n",
                                json_escape(s.deployment.name), json_escape(s.source), json_escape(s.model.name),
                                json_escape(s.hardware.name));
  const auto figs = b.figures();
  for (size_t i = 0; i < figs.size(); ++i)
    out += fmt::format("    {}{}\n", json_figure(*figs[i]), i + 1 < figs.size() ? "," : "");
  out += fmt::format("  ],\n  \"attention\": \"{}\",\n  \"per_seq_len\": [\n", b.attention);
  for (size_t i = 0; i < b.per_seq_len.size(); ++i) {
    const SeqLenBudget& q = b.per_seq_len[i];
    out += fmt::format("    {{\"seq_len\": {}, \"figures\": [\n", q.seq_len);
    std::vector<const Figure*> fs = {&q.full_kv_bytes,      &q.full_latent_bytes,   &q.full_indexer_bytes,
                                     &q.hisparse_hbm_bytes, &q.hisparse_host_bytes, &q.max_requests_full,
                                     &q.max_requests_hisparse};
    if (b.sliding_layer_count > 0) fs.push_back(&q.swa_tokens);
    for (size_t j = 0; j < std::size(fs); ++j)
      out += fmt::format("      {}{}\n", json_figure(*fs[j]), j + 1 < std::size(fs) ? "," : "");
    out += fmt::format("    ]}}{}\n", i + 1 < b.per_seq_len.size() ? "," : "");
  }
  out += "  ]\n}\n";
  fmt::print("{}", out);
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
             d.kv_dtype == KvDtype::kFp8 ? "fp8" : "bf16", d.mem_fraction_static,
             b.sliding_layer_count > 0 ? fmt::format(" · swa_full_tokens_ratio {}", d.swa_full_tokens_ratio) : "");
  fmt::print("  HiSparse: not applicable (no sparse indexer: HiSparse offloads what DeepSeek Sparse Attention's "
             "indexer selects)\n");
  std::vector<const Figure*> per_token = {&b.kv_layers, &b.kv_heads_per_rank, &b.latent_row_bytes};
  if (b.sliding_layer_count > 0) per_token.insert(per_token.end(), {&b.full_attention_layers, &b.sliding_layers});
  per_token.insert(per_token.end(), {&b.latent_bytes_per_token, &b.full_cell_bytes});
  print_section("Bytes per token", per_token);
  print_section("HBM per GPU", {&b.hbm_bytes, &b.weights_per_gpu_bytes, &b.activation_reserve_bytes, &b.kv_budget_bytes});
  std::vector<const Figure*> pools;
  if (b.sliding_layer_count > 0) pools = {&b.profile_pool_tokens, &b.swa_full_tokens_ratio, &b.full_pool_tokens,
                                          &b.swa_pool_tokens};
  else pools = {&b.full_pool_tokens};
  print_section(b.sliding_layer_count > 0 ? "SGLang SWA pools per GPU (SWAKVPool; full pool = max_total_num_tokens)"
                                          : "SGLang pool per GPU (MHATokenToKVPool; max_total_num_tokens in the server log)",
                pools);
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

void print_text(const Scenario& s, const MemoryBudget& b) {
  if (s.model.is_gqa()) return print_gqa_text(s, b);
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
             d.kv_dtype == KvDtype::kFp8 ? "fp8" : "bf16", d.mem_fraction_static);
  if (hs.host_pool_gib > 0)
    fmt::print("  vLLM: HiSparseConnector kv_connector_extra_config '{{\"host_pool_gib\": {}}}', hisparse_config "
               "device_buffer_size {}\n", hs.host_pool_gib, hs.device_buffer_size);
  else
    fmt::print("  SGLang flag: --hisparse-config '{{\"top_k\": {}, \"device_buffer_size\": {}, \"host_to_device_ratio\": {}}}'\n",
               hs.top_k, hs.device_buffer_size, hs.host_to_device_ratio);

  print_section("Bytes per token", {&b.kv_layers, &b.latent_row_bytes, &b.indexer_key_bytes, &b.latent_bytes_per_token,
                                    &b.indexer_bytes_per_token, &b.full_cell_bytes, &b.hisparse_cell_bytes});
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
    store_flags(po::command_line_parser(argc, argv).options(opts).run(), vm);
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
  const MemoryBudget b = compute_memory_budget(s);
  if (vm.count("json")) {
    print_json(s, b);
  } else {
    print_text(s, b);
  }
  return 0;
}

}  // namespace hisparse::apps

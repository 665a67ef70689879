// @brief The memory budget of GQA / MHA models, sliding-window hybrids, Double Sparsity and hybrid Mamba models, as
// SGLang sizes their pools (the sources are listed at the top of core/memory_budget.cpp).
#include "core/gqa_memory_budget.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/budget_figure.h"
#include "core/error.h"

namespace hisparse {

namespace {

using budget_detail::attention_tp_of;
using budget_detail::fig;
using budget_detail::num;

}  // namespace

// SGLang's Mamba pools (model_runner_kv_cache_mixin.py handle_max_mamba_cache / init_memory): with
// --max-mamba-cache-size the slots are given; otherwise the Mamba share of the KV budget is
// rest × ratio / (1 + ratio) (--mamba-full-memory-ratio, default 0.9) and slots = floor(share / mamba_cache_per_req);
// the KV pool gets the rest, and max_running_requests is capped at slots / 3 (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_
// RATIO, radix cache on, no extra buffer). One slot, per linear layer: a conv state of (2 × key heads × key dim +
// value heads × value dim) × (kernel − 1) bf16 values and an SSM state of value heads × key dim × value dim fp32
// values (mamba_ssm_dtype default float32); heads are split over attention TP like the KV heads (modelled).
MambaLayerState mamba_layer_state(const ModelSpec& m, int atp) {
  MambaLayerState out;
  const int64_t conv_dim = 2 * int64_t{m.linear_num_key_heads} * m.linear_key_head_dim +
                           int64_t{m.linear_num_value_heads} * m.linear_value_head_dim;
  out.conv_bytes = conv_dim / atp * (m.linear_conv_kernel_dim - 1) * 2;
  out.ssm_elements = int64_t{m.linear_num_value_heads} / atp * m.linear_key_head_dim * m.linear_value_head_dim;
  out.ssm_bytes = out.ssm_elements * 4;
  return out;
}

namespace {

void mamba_figures(const Scenario& s, int atp, MemoryBudget& b) {
  const ModelSpec& m = s.model;
  const DeploymentSpec& d = s.deployment;
  const int Ll = m.linear_layer_count();
  const int64_t conv_dim = 2 * int64_t{m.linear_num_key_heads} * m.linear_key_head_dim +
                           int64_t{m.linear_num_value_heads} * m.linear_value_head_dim;
  const MambaLayerState state = mamba_layer_state(m, atp);
  const double per_req = static_cast<double>(Ll) * static_cast<double>(state.bytes());
  b.linear_layers = fig("linear_layers", "linear-attention (Mamba state) layers", Ll, "layers",
                        "layers between full-attention ones (model full_attention_interval)");
  b.mamba_state_per_request = fig(
      "mamba_state_per_request", "Mamba state per request slot", per_req, "B",
      fmt::format("linear_layers × (conv + ssm) = {} × ({} / {} × ({} − 1) × 2 + {} / {} × {} × {} × 4)", Ll, conv_dim,
                  atp, m.linear_conv_kernel_dim, m.linear_num_value_heads, atp, m.linear_key_head_dim,
                  m.linear_value_head_dim));
  const double r = d.mamba_full_memory_ratio > 0 ? d.mamba_full_memory_ratio : 0.9;
  b.mamba_full_memory_ratio = fig("mamba_full_memory_ratio", "mamba_full_memory_ratio", r, "",
                                  d.mamba_full_memory_ratio > 0 ? "deployment mamba_full_memory_ratio"
                                                                : "SGLang --mamba-full-memory-ratio default 0.9");
  const double rest = b.kv_budget_bytes.value;
  int64_t slots = 0;
  std::string slots_formula;
  if (d.max_mamba_cache_size > 0) {
    slots = d.max_mamba_cache_size;
    slots_formula = "deployment max_mamba_cache_size";
  } else {
    slots = rest > 0 ? static_cast<int64_t>(std::floor(rest * r / (1 + r) / per_req)) : 0;
    slots_formula = fmt::format("floor(kv_budget × ratio / (1 + ratio) / mamba_state) = floor({} × {} / {} / {})",
                                num(rest), num(r), num(1 + r), num(per_req));
  }
  b.mamba_slots = fig("mamba_slots", "Mamba slots (max_mamba_cache_size)", static_cast<double>(slots), "slots",
                      slots_formula);
  b.mamba_pool_bytes = fig("mamba_pool_bytes", "Mamba pool bytes", static_cast<double>(slots) * per_req, "B",
                           fmt::format("mamba_slots × mamba_state = {} × {}", slots, num(per_req)));
  // SGLang refuses to start when the slots cannot serve one request ("state cache is too small to serve any requests").
  if (slots / 3 < 1)
    throw_error("{}: the Mamba pool holds {} slots ({}), fewer than the 3 one running request needs; expected a larger "
                "mamba_full_memory_ratio, max_mamba_cache_size or KV budget", s.source, slots, slots_formula);
  b.mamba_request_cap = slots / 3;
  b.max_requests_by_mamba = fig("max_requests_by_mamba", "max running requests by Mamba slots",
                                static_cast<double>(slots / 3), "requests",
                                fmt::format("floor(mamba_slots / 3) = floor({} / 3) (radix cache on)", slots));
}

}  // namespace

MemoryBudget compute_gqa_budget(const Scenario& s, const std::vector<int64_t>& seq_lens) {
  const ModelSpec& m = s.model;
  const DeploymentSpec& d = s.deployment;
  const MemoryOverrides& ov = d.memory;
  const int page = d.page_size;
  for (auto [key, value] : {std::pair{"device_pool_tokens", ov.device_pool_tokens},
                            std::pair{"host_pool_tokens", ov.host_pool_tokens}})
    if (value > 0)
      throw_error("{}: memory.{}: got {}, expected 0 or absent: model {} has no sparse indexer, so there is no HiSparse "
                  "pool to pin", s.source, key, value, m.name);
  MemoryBudget b;
  const int Ls = m.sliding_layer_count(), Lf = m.full_attention_layer_count(), Ll = m.linear_layer_count();
  // Hybrid linear attention: only the full-attention layers hold KV (SGLang counts full_attention_layer_ids).
  const int L = Ll > 0 ? Lf : m.kv_layers();
  const bool swa = Ls > 0;
  b.linear_layer_count = Ll;
  b.sparse_indexer = false;
  b.page_size = page;
  b.sliding_window = swa ? m.sliding_window : 0;
  b.full_layers = Lf;
  b.sliding_layer_count = Ls;
  const int atp = attention_tp_of(d.decode);
  const int kvh = kv_heads_per_rank(m, atp);
  const int64_t elem = d.kv_dtype == KvDtype::kFp8 ? 1 : 2;
  const int64_t row = gqa_kv_row_bytes(m, d.kv_dtype, atp);
  const std::string na = fmt::format("not applicable: {} has no sparse indexer (gqa attention), HiSparse pools are "
                                     "not allocated", m.name);

  b.kv_layers = fig("kv_layers", "KV layers", L, "layers",
                    Ll > 0 ? fmt::format("full-attention layers = layers − linear layers = {} − {} (every {}th layer; "
                                         "HybridLinearKVPool)", m.layers, Ll, m.layers / std::max(1, Lf))
                           : fmt::format("layers = {}", m.layers));
  b.kv_heads_per_rank = fig("kv_heads_per_rank", "KV heads per GPU", kvh, "heads",
                            fmt::format("max(1, num_key_value_heads / attention_tp) = max(1, {} / {}){}",
                                        m.num_key_value_heads, atp,
                                        atp > m.num_key_value_heads ? " (replicated: attention TP > KV heads)" : ""));
  b.latent_row_bytes = fig("kv_row_bytes", "K + V per token per layer", static_cast<double>(row), "B",
                           fmt::format("2 × kv_heads_per_rank × head_dim × {} = 2 × {} × {} × {}",
                                       elem == 1 ? "1 (fp8)" : "2 (bf16)", kvh, m.head_dim, elem));
  b.indexer_key_bytes = fig("indexer_key_bytes", "indexer key per token per layer", 0, "B", na);
  if (swa) {
    b.full_attention_layers = fig("full_attention_layers", "full-attention layers", Lf, "layers",
                                  "layers not marked sliding (model layer_types / sliding_window_pattern)");
    b.sliding_layers = fig("sliding_layers", "sliding-window layers", Ls, "layers",
                           fmt::format("layers attending the last {} tokens (model sliding_window)", m.sliding_window));
  }
  b.latent_bytes_per_token = fig("kv_bytes_per_token", "K + V per token, all layers", static_cast<double>(L * row),
                                 "B/token", fmt::format("kv_layers × kv_row = {} × {}", L, row));
  b.indexer_bytes_per_token = fig("indexer_bytes_per_token", "indexer keys per token, all KV layers", 0, "B/token", na);
  const DoubleSparsityConfig& ds = d.double_sparsity;
  b.double_sparse = ds.enabled;
  const int64_t label_row = ds.enabled ? int64_t{kvh} * ds.heavy_channel_num * elem : 0;
  if (ds.enabled) {
    b.ds_heavy_channel_num = fig("ds_heavy_channel_num", "Double Sparsity heavy channels per KV head",
                                 ds.heavy_channel_num, "channels",
                                 "deployment double_sparsity.heavy_channel_num (SGLang --ds-heavy-channel-num, "
                                 "default 32)");
    b.label_row_bytes = fig("label_row_bytes", "label per token per layer", static_cast<double>(label_row), "B",
                            fmt::format("kv_heads_per_rank × heavy_channel_num × {} = {} × {} × {}",
                                        elem == 1 ? "1 (fp8)" : "2 (bf16)", kvh, ds.heavy_channel_num, elem));
    b.label_bytes_per_token = fig("label_bytes_per_token", "label per token, all layers",
                                  static_cast<double>(L * label_row), "B/token",
                                  fmt::format("kv_layers × label_row = {} × {}", L, label_row));
  }
  const double cell = static_cast<double>(L * (row + label_row));
  b.full_cell_bytes = fig("full_cell_bytes", "SGLang cell size, full KV", cell, "B/token",
                          swa ? fmt::format("(full_layers + sliding_layers) × kv_row = ({} + {}) × {} (the profile "
                                            "cell of every layer, before the SWA split)", Lf, Ls, row)
                          : ds.enabled
                              ? fmt::format("kv_layers × (kv_row + label_row) = {} × ({} + {}) "
                                            "(DoubleSparseTokenToKVPool; SGLang's own cell leaves the label out)",
                                            L, row, label_row)
                              : fmt::format("kv_layers × kv_row = {} × {} ({})", L, row,
                                            Ll > 0 ? "HybridLinearKVPool" : "MHATokenToKVPool"));
  b.hisparse_cell_bytes = fig("hisparse_cell_bytes", "SGLang cell size, HiSparse", 0, "B/token", na);
  hbm_figures(s, b);
  double budget = b.kv_budget_bytes.value;
  std::string budget_name = "kv_budget";
  if (Ll > 0) {
    mamba_figures(s, atp, b);
    budget -= b.mamba_pool_bytes.value;
    budget_name = "(kv_budget − mamba_pool)";
  }

  const int64_t profile = pool_tokens(budget, cell, page);
  const std::string profile_formula =
      fmt::format("floor({} / full_cell / page_size) × page_size = floor({} / {} / {}) × {}", budget_name, num(budget),
                  num(cell), page, page);
  if (!swa) {
    b.full_pool_tokens = fig("full_pool_tokens", "KV pool (max_total_num_tokens)", static_cast<double>(profile),
                             "tokens", profile_formula);
  } else {
    const double r = d.swa_full_tokens_ratio;
    b.profile_pool_tokens = fig("profile_pool_tokens", "profiled max_total_num_tokens (before the SWA split)",
                                static_cast<double>(profile), "tokens", profile_formula);
    b.swa_full_tokens_ratio = fig("swa_full_tokens_ratio", "swa_full_tokens_ratio", r, "",
                                  "deployment swa_full_tokens_ratio (SGLang --swa-full-tokens-ratio, default 0.8)");
    // set_num_tokens_hybrid_swa: one memory total, split so that swa = r × full.
    const double total = static_cast<double>(profile) * cell;
    const double denom = static_cast<double>(row) * Lf + r * static_cast<double>(row) * Ls;
    const auto full_raw = static_cast<int64_t>(std::floor(total / denom));
    const auto swa_raw = static_cast<int64_t>(std::floor(static_cast<double>(full_raw) * r));
    b.full_pool_tokens = fig(
        "full_pool_tokens", "full-attention layer pool (max_total_num_tokens)",
        static_cast<double>(full_raw / page * page), "tokens",
        fmt::format("floor(floor(profiled × cell / (kv_row × full_layers + ratio × kv_row × sliding_layers)) / page) × "
                    "page = floor(floor({} × {} / ({} × {} + {} × {} × {})) / {}) × {}",
                    profile, num(cell), row, Lf, num(r), row, Ls, page, page));
    b.swa_pool_tokens = fig("swa_pool_tokens", "sliding-layer pool", static_cast<double>(swa_raw / page * page),
                            "tokens",
                            fmt::format("floor(floor(full_unrounded × ratio) / page) × page = floor(floor({} × {}) / {}) "
                                        "× {}", full_raw, num(r), page, page));
  }
  if (ov.full_pool_tokens > 0) {
    b.full_pool_tokens.value = static_cast<double>(ov.full_pool_tokens);
    b.full_pool_tokens.formula = "deployment memory.full_pool_tokens (override)";
  }
  if (ds.enabled) {
    const auto pool = static_cast<int64_t>(b.full_pool_tokens.value);
    b.label_pool_bytes = fig("label_pool_bytes", "Double Sparsity label pool", static_cast<double>(pool + 1) * L *
                             static_cast<double>(label_row), "B",
                             fmt::format("(max_total_num_tokens + 1) × kv_layers × label_row = ({} + 1) × {} × {}",
                                         pool, L, label_row));
  }
  for (Figure* f : {&b.device_pool_tokens, &b.logical_pool_tokens, &b.indexer_pool_tokens, &b.device_latent_pool_bytes,
                    &b.indexer_pool_bytes, &b.host_pool_tokens, &b.host_pool_bytes_per_gpu, &b.host_pool_bytes_per_node,
                    &b.device_buffer_tokens, &b.device_buffer_bytes, &b.max_buffers_per_device_pool}) {
    f->value = 0;
    f->formula = na;
  }
  b.host_dram_bytes = fig("host_dram_bytes", "host DRAM per decode node", d.host_dram_bytes, "B",
                          "deployment host_dram_bytes");
  b.host_dram_left_bytes = fig("host_dram_left_bytes", "host DRAM left after host pools", d.host_dram_bytes, "B",
                               "no host pool (no HiSparse): all of host_dram");

  for (int64_t n : seq_lens) {
    SeqLenBudget q;
    q.seq_len = n;
    const double bytes = full_kv_request_bytes(b, n);
    q.full_kv_bytes = fig("full_kv_bytes", ds.enabled ? "full KV (K + V + label)" : "full KV (K + V)", bytes, "B",
                          full_kv_request_formula(b, n));
    q.full_latent_bytes =
        ds.enabled ? fig("full_latent_bytes", "K + V", static_cast<double>(n) * L * row, "B",
                         fmt::format("seq_len × kv_layers × kv_row = {} × {} × {}", n, L, row))
                   : fig("full_latent_bytes", "K + V", bytes, "B", "= full KV (no indexer keys)");
    q.full_indexer_bytes = fig("full_indexer_bytes", "indexer keys", 0, "B", na);
    q.hisparse_hbm_bytes = fig("hisparse_hbm_bytes", "HiSparse HBM (buffer + indexer keys)", 0, "B", na);
    q.hisparse_host_bytes = fig("hisparse_host_bytes", "HiSparse host (latent)", 0, "B", na);
    if (swa)
      q.swa_tokens = fig("swa_tokens", "tokens kept per sliding layer", static_cast<double>(sliding_tokens_kept(b, n)),
                         "tokens",
                         fmt::format("min(seq_len, window + page_size) = min({}, {} + {}) (modelled bound)", n,
                                     m.sliding_window, page));
    std::string f;
    int64_t max_full = full_pool_requests(b, n, &f);
    if (d.max_running_requests > 0) {
      max_full = std::min<int64_t>(max_full, d.max_running_requests);
      f += fmt::format(", capped at max_running_requests {}", d.max_running_requests);
    }
    q.max_requests_full = fig("max_requests_full", "max requests full-KV (memory)", static_cast<double>(max_full),
                              "requests", f);
    q.max_requests_hisparse = fig("max_requests_hisparse", "max requests HiSparse (memory)", 0, "requests", na);
    b.per_seq_len.push_back(q);
  }
  return b;
}


}  // namespace hisparse

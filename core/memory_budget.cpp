// @brief The memory arithmetic of a scenario, following SGLang's own pool sizing so capacities match the real engine.
//
// What SGLang does (read in sgl-project/sglang, python/sglang/srt):
//  - model_executor/pool_configurator.py (DefaultPoolConfigurator): cell_size = kv_cache_dim × layers × dtype size
//    + indexer (index_head_dim + index_head_dim / 128 × 4 bytes, uint8) × layers, the indexer term multiplied by
//    host_to_device_ratio when --enable-hisparse (PR #28752: the HiSparse pool allocates its indexer buffer for every
//    logical token; older versions did not scale it and over-sized the pool, sglang issue #23704, PR #25288).
//    An EAGLE/MTP draft scales cell_size by (1 + draft_layers / layers): same as counting the MTP layer.
//    max_total_num_tokens = available_bytes // cell_size // page_size × page_size.
//  - model_runner_kv_cache_mixin.py: available_bytes = free memory after weights − total × (1 − mem_fraction_static),
//    i.e. HBM × mem_fraction_static − weights (activations and CUDA graphs live in the 1 − fraction share).
//  - mem_cache/hisparse_memory_pool.py: HiSparseDSATokenToKVPool(size) keeps the latent for `size` tokens and the
//    indexer buffer for index_buf_size = size × host_to_device_ratio tokens; HiSparseTokenToKVPoolAllocator has a
//    logical allocator of size × ratio and a device (hisparse) allocator of size.
//  - mem_cache/memory_pool_host.py (HostKVCache): host size = device size × ratio, then
//    (size // page_size + 1) × page_size; bytes = size × layers × row bytes (the host pool holds the latent only).
//  - managers/hisparse_coordinator.py: a request past H holds H + page_size device slots (slot H = newest token).
//  - MLA under attention TP replicates the latent on every rank, and every rank owns its host pool.
// GQA / MHA models (attention: gqa), same files:
//  - model_runner_kv_cache_mixin.py get_cell_size_per_token: cell = get_num_kv_heads(attention_tp) × (head_dim +
//    v_head_dim) × layers × dtype size; model_config.get_num_kv_heads(tp) = max(1, num_key_value_heads / tp), so
//    KV heads are split over attention TP and replicated when TP > KV heads. MHATokenToKVPool(max_total_num_tokens,
//    head_num = that, head_dim, layer_num) holds a K and a V buffer per layer.
//  - init_memory: max_total_num_tokens = rest_memory // cell, then // page_size × page_size.
//  - Hybrid SWA (set_num_tokens_hybrid_swa): with F / S the per-layer K + V bytes of full / sliding layers and
//    r = --swa-full-tokens-ratio (server_args default 0.8), total = max_total_num_tokens × (F × n_full + S × n_swa);
//    full = int(total / (F × n_full + r × S × n_swa)), swa = int(full × r), each then rounded down to whole pages;
//    SWAKVPool(size = full, size_swa = swa). A sliding layer frees tokens once they leave the window, so a request
//    holds at most window + page_size of them there (modelled bound: the page holding the window's first token).
// Double Sparsity (--enable-double-sparsity), mem_cache/memory_pool.py DoubleSparseTokenToKVPool: K and V as
//    MHATokenToKVPool plus label_buffer[layer] = [size + 1, head_num, heavy_channel_num] in the KV dtype, head_num =
//    get_num_kv_heads(attention_tp). SGLang's get_cell_size_per_token leaves the label out, so the real server sizes
//    max_total_num_tokens as without it and the label buffer comes out of the 1 − mem_fraction_static headroom; here
//    the label is part of the cell (one budget for everything the pool allocates), so the KV pool is smaller by the
//    factor kv_row / (kv_row + label_row) and the headroom is left to activations (docs/capacity.md).
#include "core/memory_budget.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/budget_figure.h"
#include "core/dsv4_pool_budget.h"
#include "core/error.h"
#include "core/gqa_memory_budget.h"

namespace hisparse {

using budget_detail::fig;
using budget_detail::num;
using budget_detail::attention_tp_of;

// Numbers inside formulas: exact where it matters (pool bytes), short where the input was round (690e9).
std::string formula_number(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9 && std::fmod(v, 1e7) == 0) return fmt::format("{:g}e9", v / 1e9);
  if (a >= 1e6 || v == std::floor(v)) return fmt::format("{}", static_cast<int64_t>(std::llround(v)));
  return fmt::format("{:.6g}", v);
}

const std::vector<int64_t>& default_seq_lens() {
  static const std::vector<int64_t> lens = {16384, 32768, 65536, 131072};
  return lens;
}

int64_t latent_row_bytes(const ModelSpec& model, KvDtype dtype) {
  if (dtype == KvDtype::kNvfp4) return model.latent_row_bytes_nvfp4;
  return dtype == KvDtype::kFp8 ? model.latent_row_bytes_fp8 : model.latent_row_bytes;
}

double weights_per_gpu_bytes(const ModelSpec& model, const InstanceSpec& inst, double weight_bytes) {
  const double replicated = std::min(model.dp_replicated_weight_bytes, weight_bytes);
  return (weight_bytes - replicated) / inst.tp + replicated * inst.dp_attention / inst.tp;
}

int64_t pool_tokens(double budget_bytes, double cell_bytes, int page_size) {
  if (budget_bytes <= 0 || cell_bytes <= 0) return 0;
  const auto tokens = static_cast<int64_t>(std::floor(budget_bytes / cell_bytes));
  return tokens / page_size * page_size;
}

int64_t host_pool_tokens(int64_t logical_tokens, int page_size) { return (logical_tokens / page_size + 1) * page_size; }

int64_t round_up_to_page(int64_t tokens, int page_size) { return (tokens + page_size - 1) / page_size * page_size; }

std::vector<const Figure*> MemoryBudget::figures() const {
  if (attention == "dsv4")
    return {&kv_layers, &latent_row_bytes, &indexer_key_bytes, &full_cell_bytes, &hisparse_cell_bytes, &hbm_bytes,
            &weights_per_gpu_bytes, &activation_reserve_bytes, &kv_budget_bytes, &c128_state_fixed_bytes,
            &full_pool_tokens, &swa_pool_tokens, &logical_pool_tokens, &hisparse_swa_pool_tokens, &device_pool_tokens,
            &host_pool_tokens, &host_pool_bytes_per_gpu, &host_pool_bytes_per_node, &host_dram_bytes,
            &host_dram_left_bytes, &device_buffer_tokens, &device_buffer_bytes, &max_buffers_per_device_pool,
            &reserved_decode_tokens};
  if (attention == "gqa" || attention == "gqa+swa" || attention == "gqa+mamba") {
    std::vector<const Figure*> f = {&kv_layers, &kv_heads_per_rank, &latent_row_bytes};
    if (sliding_layer_count > 0) f.insert(f.end(), {&full_attention_layers, &sliding_layers});
    f.push_back(&latent_bytes_per_token);
    if (double_sparse) f.insert(f.end(), {&ds_heavy_channel_num, &label_row_bytes, &label_bytes_per_token});
    f.insert(f.end(), {&full_cell_bytes, &hbm_bytes, &weights_per_gpu_bytes, &activation_reserve_bytes,
                       &kv_budget_bytes});
    if (sliding_layer_count > 0) f.insert(f.end(), {&profile_pool_tokens, &swa_full_tokens_ratio});
    f.push_back(&full_pool_tokens);
    if (double_sparse) f.push_back(&label_pool_bytes);
    if (sliding_layer_count > 0) f.push_back(&swa_pool_tokens);
    if (linear_layer_count > 0)
      f.insert(f.end(), {&linear_layers, &mamba_state_per_request, &mamba_full_memory_ratio, &mamba_slots,
                         &mamba_pool_bytes, &max_requests_by_mamba});
    f.push_back(&host_dram_bytes);
    return f;
  }
  std::vector<const Figure*> f = {&kv_layers, &latent_row_bytes, &indexer_key_bytes};
  if (indexer_layers != full_layers) f.push_back(&indexer_cache_layers);
  f.insert(f.end(), {
          &latent_bytes_per_token,
          &indexer_bytes_per_token,
          &full_cell_bytes,
          &hisparse_cell_bytes,
          &hbm_bytes,
          &weights_per_gpu_bytes,
          &activation_reserve_bytes,
          &kv_budget_bytes,
          &full_pool_tokens,
          &device_pool_tokens,
          &logical_pool_tokens,
          &indexer_pool_tokens,
          &device_latent_pool_bytes,
          &indexer_pool_bytes,
          &host_pool_tokens,
          &host_pool_bytes_per_gpu,
          &host_pool_bytes_per_node,
          &host_dram_bytes,
          &host_dram_left_bytes,
          &device_buffer_tokens,
          &device_buffer_bytes,
          &max_buffers_per_device_pool,
          &reserved_decode_tokens});
  return f;
}

void hbm_figures(const Scenario& s, MemoryBudget& b) {
  const int64_t reserve = s.deployment.decode_token_reserve();
  b.reserved_decode_tokens =
      fig("reserved_decode_tokens", "decode tokens reserved per running request", static_cast<double>(reserve), "tokens",
          s.deployment.num_reserved_decode_tokens >= 0
              ? fmt::format("deployment num_reserved_decode_tokens = {}", reserve)
              : fmt::format("SGLang's num_reserved_decode_tokens (default 512) on a PD decode server, 0 colocated: {} "
                            "(pd_disaggregation {})",
                            reserve, s.deployment.pd_disaggregation ? "true" : "false"));
  const ModelSpec& m = s.model;
  const DeploymentSpec& d = s.deployment;
  const MemoryOverrides& ov = d.memory;
  const double hbm = ov.hbm_bytes > 0 ? ov.hbm_bytes : s.hardware.hbm_bytes;
  b.hbm_bytes = fig("hbm_bytes", "HBM per GPU", hbm, "B",
                    ov.hbm_bytes > 0 ? std::string("deployment memory.hbm_bytes (override)")
                                     : fmt::format("hardware {} hbm_bytes", s.hardware.name));
  const double weight_total = ov.weight_bytes > 0 ? ov.weight_bytes : m.weight_bytes;
  if (ov.weights_per_gpu_bytes > 0) {
    b.weights_per_gpu_bytes = fig("weights_per_gpu_bytes", "weights per GPU", ov.weights_per_gpu_bytes, "B",
                                  "deployment memory.weights_per_gpu_bytes (override)");
  } else {
    const double R = std::min(m.dp_replicated_weight_bytes, weight_total);
    b.weights_per_gpu_bytes =
        fig("weights_per_gpu_bytes", "weights per GPU", weights_per_gpu_bytes(m, d.decode, weight_total), "B",
            fmt::format("(weight_bytes − replicated) / tp + replicated × dp_attention / tp = ({} − {}) / {} + {} × {} / {}",
                        num(weight_total), num(R), d.decode.tp, num(R), d.decode.dp_attention, d.decode.tp));
  }
  b.activation_reserve_bytes = fig("activation_reserve_bytes", "activation / graph reserve per GPU",
                                   d.activation_reserve_bytes, "B",
                                   "deployment activation_reserve_bytes (SGLang keeps activations and CUDA graphs "
                                   "in the 1 − mem_fraction_static share)");
  if (ov.kv_budget_bytes > 0) {
    b.kv_budget_bytes = fig("kv_budget_bytes", "HBM for KV per GPU", ov.kv_budget_bytes, "B",
                            "deployment memory.kv_budget_bytes (override)");
  } else {
    const double budget = hbm * d.mem_fraction_static - b.weights_per_gpu_bytes.value - d.activation_reserve_bytes;
    b.kv_budget_bytes = fig("kv_budget_bytes", "HBM for KV per GPU", budget, "B",
                            fmt::format("HBM × mem_fraction_static − weights − reserve = {} × {} − {} − {}", num(hbm),
                                        num(d.mem_fraction_static), num(b.weights_per_gpu_bytes.value),
                                        num(d.activation_reserve_bytes)));
  }
}

int kv_heads_per_rank(const ModelSpec& m, int attention_tp) {
  return std::max(1, m.num_key_value_heads / std::max(1, attention_tp));
}

int64_t gqa_kv_row_bytes(const ModelSpec& m, KvDtype dtype, int attention_tp) {
  const int64_t elem = dtype == KvDtype::kFp8 ? 1 : 2;
  return 2 * int64_t{kv_heads_per_rank(m, attention_tp)} * m.head_dim * elem;
}

int64_t kv_row_bytes(const ModelSpec& m, const InstanceSpec& decode, KvDtype dtype) {
  return m.is_gqa() ? gqa_kv_row_bytes(m, dtype, attention_tp_of(decode)) : latent_row_bytes(m, dtype);
}

int64_t sliding_tokens_kept(const MemoryBudget& b, int64_t tokens) {
  return b.sliding_window > 0 ? std::min<int64_t>(tokens, b.sliding_window + b.page_size) : tokens;
}

double full_kv_request_bytes(const MemoryBudget& b, int64_t tokens) {
  const double row = b.latent_row_bytes.value + b.label_row_bytes.value, idx = b.indexer_key_bytes.value;
  return static_cast<double>(tokens) * (b.full_layers * row + b.indexer_layers * idx) +
         static_cast<double>(sliding_tokens_kept(b, tokens)) * b.sliding_layer_count * row +
         b.mamba_state_per_request.value;
}

std::string full_kv_request_formula(const MemoryBudget& b, int64_t n) {
  const std::string row = num(b.latent_row_bytes.value);
  if (b.double_sparse)
    return fmt::format("seq_len × kv_layers × (kv_row + label_row) = {} × {} × ({} + {})", n, b.full_layers, row,
                       num(b.label_row_bytes.value));
  if (b.sliding_layer_count > 0)
    return fmt::format("(seq_len × full_layers + min(seq_len, window + page) × sliding_layers) × kv_row = ({} × {} + "
                       "{} × {}) × {}",
                       n, b.full_layers, sliding_tokens_kept(b, n), b.sliding_layer_count, row);
  if (b.linear_layer_count > 0)
    return fmt::format("seq_len × full_attention_layers × kv_row + mamba_state = {} × {} × {} + {}", n, b.full_layers,
                       row, num(b.mamba_state_per_request.value));
  if (!b.sparse_indexer || b.indexer_key_bytes.value == 0)
    return fmt::format("seq_len × kv_layers × {} = {} × {} × {}", b.attention == "gqa" ? "kv_row" : "latent_row_bytes",
                       n, b.full_layers, row);
  if (b.indexer_layers != b.full_layers)
    return fmt::format("seq_len × (kv_layers × latent_row_bytes + indexer_cache_layers × indexer_key_bytes) = {} × "
                       "({} × {} + {} × {})", n, b.full_layers, row, b.indexer_layers, num(b.indexer_key_bytes.value));
  return fmt::format("seq_len × kv_layers × (latent_row_bytes + indexer_key_bytes) = {} × {} × ({} + {})", n,
                     b.full_layers, row, num(b.indexer_key_bytes.value));
}

namespace {

// requests_in_pool's arithmetic in words and numbers; the integer and the expected forms differ only in how the
// request's length is named and how the numbers print.
std::string pool_fit_formula(const char* pool_name, const char* paged_name, bool reserved, const std::string& pool,
                             const std::string& paged, const std::string& reserve) {
  if (!reserved) return fmt::format("floor({} / {}) = floor({} / {})", pool_name, paged_name, pool, paged);
  return fmt::format("floor(({0} + reserved) / ({1} + reserved)) = floor(({2} + {4}) / ({3} + {4}))", pool_name,
                     paged_name, pool, paged, reserve);
}

}  // namespace

int64_t requests_in_pool(int64_t pool, int64_t paged, int64_t reserve, const char* pool_name, std::string* formula) {
  if (paged <= 0) throw_error("requests_in_pool: a request of {} tokens; expected at least 1", paged);
  reserve = std::max<int64_t>(0, reserve);
  if (formula)
    *formula = pool_fit_formula(pool_name, "paged_seq_len", reserve > 0, fmt::to_string(pool), fmt::to_string(paged),
                                fmt::to_string(reserve));
  return (pool + reserve) / (paged + reserve);
}

int64_t requests_in_pool(double pool, double paged, double reserve, const char* pool_name, std::string* formula) {
  if (!(paged > 0)) throw_error("requests_in_pool: a request of {} tokens on average; expected more than 0", paged);
  reserve = reserve > 0 ? reserve : 0.0;
  if (formula)
    *formula = pool_fit_formula(pool_name, "E[paged seq_len]", reserve > 0, fmt::format("{:.0f}", pool),
                                fmt::format("{:.1f}", paged), fmt::format("{:.0f}", reserve));
  return static_cast<int64_t>(std::floor((pool + reserve) / (paged + reserve) + 1e-9));
}

void set_max_requests(SeqLenBudget& q, const DeploymentSpec& d, int64_t full, const std::string& full_formula,
                      int64_t hisparse, const std::string& hisparse_formula) {
  std::string cap;
  if (d.max_running_requests > 0) {
    full = std::min<int64_t>(full, d.max_running_requests);
    hisparse = std::min<int64_t>(hisparse, d.max_running_requests);
    cap = fmt::format(", capped at max_running_requests {}", d.max_running_requests);
  }
  q.max_requests_full = fig("max_requests_full", "max requests full-KV (memory)", static_cast<double>(full), "requests",
                            full_formula + cap);
  q.max_requests_hisparse = fig("max_requests_hisparse", "max requests HiSparse (memory)", static_cast<double>(hisparse),
                                "requests", hisparse_formula + cap);
}

int64_t full_pool_requests(const MemoryBudget& b, int64_t n, std::string* formula) {
  const int page = std::max(1, b.page_size);
  const int64_t paged = round_up_to_page(n, page);
  const auto pool = static_cast<int64_t>(b.full_pool_tokens.value);
  std::string f;
  int64_t out = requests_in_pool(pool, paged, static_cast<int64_t>(b.reserved_decode_tokens.value), "full_pool", &f);
  if (b.sliding_layer_count > 0) {
    const int64_t kept = round_up_to_page(sliding_tokens_kept(b, n), page);
    const auto swa = static_cast<int64_t>(b.swa_pool_tokens.value);
    std::string f_swa;
    out = std::min(out, requests_in_pool(swa, kept, static_cast<int64_t>(b.reserved_decode_tokens.value),
                                         "swa_pool", &f_swa));
    f = fmt::format("min({}, {}) with paged_seq_len of the sliding pool = paged(min(seq_len, window + page))", f, f_swa);
  }
  if (b.mamba_request_cap > 0 && b.mamba_request_cap < out) {
    out = b.mamba_request_cap;
    f += fmt::format(", capped by the Mamba slots: floor(mamba_slots / 3) = {}", b.mamba_request_cap);
  }
  if (formula) *formula = f;
  return out;
}

MemoryBudget compute_memory_budget(const Scenario& s, const std::vector<int64_t>& seq_lens) {
  if (s.model.is_gqa()) return compute_gqa_budget(s, seq_lens);
  // A compressed-attention cache entry covers 4 or 128 tokens and lives in one of five pools: the DSV4 pool
  // arithmetic sizes them (core/dsv4_pool_budget.h), with HiSparse on and off.
  if (s.model.is_compressed()) return dsv4_memory_budget(s, seq_lens);
  const ModelSpec& m = s.model;
  const DeploymentSpec& d = s.deployment;
  const HiSparseConfig& hs = d.hisparse;
  const MemoryOverrides& ov = d.memory;
  const int page = d.page_size;
  const int ratio = hs.host_to_device_ratio;
  const int H = hs.device_buffer_size;
  MemoryBudget b;
  b.sparse_indexer = m.has_sparse_indexer();
  b.attention = b.sparse_indexer ? "mla+dsa" : "mla";
  b.page_size = page;
  b.full_layers = m.kv_layers();
  b.indexer_layers = m.indexer_key_layers();

  const int L = m.kv_layers();
  // Indexer-key caches (IndexShare): only the top-k anchors and the MTP layers keep indexer keys.
  const int Li = b.indexer_layers;
  const char* li_name = Li == L ? "kv_layers" : "indexer_layers";
  const int64_t row = hisparse::latent_row_bytes(m, d.kv_dtype);
  const int64_t idx = m.indexer_key_bytes;
  b.indexer_cache_layers =
      fig("indexer_cache_layers", "indexer-key caches", Li, "layers",
          Li == L ? fmt::format("every KV layer = {}", L)
                  : fmt::format("top-k anchors + mtp_layers = {} + {} of {} MLA caches ({} + {}): the layers that "
                                "reuse an anchor's top-k keep no indexer keys (IndexShare; SGLang #30531)",
                                m.topk_anchor_layers(), m.mtp_layers, L, m.layers, m.mtp_layers));
  b.kv_layers = fig("kv_layers", "KV layers", L, "layers", fmt::format("layers + mtp_layers = {} + {}", m.layers, m.mtp_layers));
  b.latent_row_bytes = fig("latent_row_bytes", "latent row per token per layer", static_cast<double>(row), "B",
                           d.kv_dtype == KvDtype::kFp8
                               ? fmt::format("FlashMLA fp8: kv_lora_rank + kv_lora_rank/128 × 4 + qk_rope_head_dim × 2 = {} + {} + {}",
                                             m.kv_lora_rank, m.kv_lora_rank / 128 * 4, 2 * m.qk_rope_head_dim)
                               : fmt::format("bf16: (kv_lora_rank + qk_rope_head_dim) × 2 = ({} + {}) × 2",
                                             m.kv_lora_rank, m.qk_rope_head_dim));
  b.indexer_key_bytes = fig("indexer_key_bytes", "indexer key per token per layer", static_cast<double>(idx), "B",
                            fmt::format("fp8 key + fp32 scale per 128 = {} + {} × 4", m.indexer_head_dim,
                                        m.indexer_head_dim / 128));
  b.latent_bytes_per_token = fig("latent_bytes_per_token", "latent per token, all KV layers",
                                 static_cast<double>(L * row), "B/token",
                                 fmt::format("kv_layers × latent_row_bytes = {} × {}", L, row));
  b.indexer_bytes_per_token = fig("indexer_bytes_per_token", "indexer keys per token, all KV layers",
                                  static_cast<double>(Li * idx), "B/token",
                                  fmt::format("{} × indexer_key_bytes = {} × {}", li_name, Li, idx));
  // vLLM sizes the host pool in GiB (host_pool_gib): the host pool is fixed first, every one of its tokens keeps its
  // indexer key on the GPU, and the device pool takes what HBM is left; the ratio plays no part.
  const bool gib = hs.host_pool_gib > 0;
  const double full_cell = static_cast<double>(L * row + Li * idx);
  const double hs_cell = static_cast<double>(gib ? L * row : L * row + Li * int64_t{ratio} * idx);
  b.full_cell_bytes = fig("full_cell_bytes", "SGLang cell size, full KV", full_cell, "B/token",
                          fmt::format("kv_layers × latent_row_bytes + indexer_layers × indexer_key_bytes = {} × {} + {} × {}", L, row,
                                      Li, idx));
  b.hisparse_cell_bytes =
      gib ? fig("hisparse_cell_bytes", "device cell size, HiSparse (host_pool_gib)", hs_cell, "B/token",
                fmt::format("kv_layers × latent_row_bytes = {} × {} (the host pool's indexer keys come off the budget "
                            "first)", L, row))
          : fig("hisparse_cell_bytes", "SGLang cell size, HiSparse", hs_cell, "B/token",
                fmt::format("kv_layers × latent_row_bytes + {} × host_to_device_ratio × indexer_key_bytes = "
                            "{} × {} + {} × {} × {}", li_name, L, row, Li, ratio, idx));

  hbm_figures(s, b);
  const double budget = b.kv_budget_bytes.value;

  // Pools per GPU.
  b.full_pool_tokens = fig("full_pool_tokens", "full-KV pool (max_total_num_tokens, no HiSparse)",
                           static_cast<double>(pool_tokens(budget, full_cell, page)), "tokens",
                           fmt::format("floor(kv_budget / full_cell / page_size) × page_size = floor({} / {} / {}) × {}",
                                       num(budget), num(full_cell), page, page));
  if (ov.full_pool_tokens > 0) {
    b.full_pool_tokens.value = static_cast<double>(ov.full_pool_tokens);
    b.full_pool_tokens.formula = "deployment memory.full_pool_tokens (override)";
  }
  // vLLM: host_num_blocks = host_pool_gib × 2^30 // block bytes (vllm/v1/hisparse planner, create_hisparse_layout).
  const int64_t gib_host_tokens =
      gib ? static_cast<int64_t>(std::floor(hs.host_pool_gib * 1073741824.0 / (static_cast<double>(page) * L * row))) * page
          : 0;
  int64_t N = gib ? pool_tokens(budget - static_cast<double>(gib_host_tokens) * L * idx, hs_cell, page)
                  : pool_tokens(budget, hs_cell, page);
  std::string n_formula =
      gib ? fmt::format("floor((kv_budget − host_pool × kv_layers × indexer_key_bytes) / hisparse_cell / page_size) × "
                        "page_size = floor(({} − {} × {} × {}) / {} / {}) × {}",
                        num(budget), gib_host_tokens, L, idx, num(hs_cell), page, page)
          : fmt::format("floor(kv_budget / hisparse_cell / page_size) × page_size = floor({} / {} / {}) × {}", num(budget),
                        num(hs_cell), page, page);
  if (ov.device_pool_tokens > 0) {
    N = ov.device_pool_tokens;
    n_formula = "deployment memory.device_pool_tokens (override)";
  }
  b.device_pool_tokens = fig("device_pool_tokens", "device pool (max_total_num_tokens, HiSparse)",
                             static_cast<double>(N), "tokens", n_formula);
  const int64_t logical = gib ? gib_host_tokens : N * ratio;
  const std::string logical_formula = gib ? fmt::format("host pool from host_pool_gib = {}", gib_host_tokens)
                                          : fmt::format("device_pool × host_to_device_ratio = {} × {}", N, ratio);
  b.logical_pool_tokens = fig("logical_pool_tokens", "logical pool", static_cast<double>(logical), "tokens", logical_formula);
  b.indexer_pool_tokens = fig("indexer_pool_tokens", "indexer key cache (all logical tokens)",
                              static_cast<double>(logical), "tokens", logical_formula);
  b.device_latent_pool_bytes = fig("device_latent_pool_bytes", "device latent pool bytes",
                                   static_cast<double>(N) * L * row, "B",
                                   fmt::format("device_pool × kv_layers × latent_row_bytes = {} × {} × {}", N, L, row));
  b.indexer_pool_bytes = fig("indexer_pool_bytes", "indexer key cache bytes", static_cast<double>(logical) * Li * idx, "B",
                             fmt::format("logical_pool × {} × indexer_key_bytes = {} × {} × {}", li_name, logical, Li, idx));
  int64_t host_tokens = gib ? gib_host_tokens : host_pool_tokens(logical, page);
  std::string host_formula =
      gib ? fmt::format("floor(host_pool_gib × 2^30 / (page_size × kv_layers × latent_row_bytes)) × page_size = "
                        "floor({} × 2^30 / ({} × {} × {})) × {} (vLLM host_pool_gib, per DP replica)",
                        num(hs.host_pool_gib), page, L, row, page)
          : fmt::format("(floor(logical_pool / page_size) + 1) × page_size = (floor({} / {}) + 1) × {}", logical, page,
                        page);
  if (ov.host_pool_tokens > 0) {
    host_tokens = ov.host_pool_tokens;
    host_formula = "deployment memory.host_pool_tokens (override)";
  }
  b.host_pool_tokens = fig("host_pool_tokens", "host pool", static_cast<double>(host_tokens), "tokens", host_formula);
  // Who holds the bytes: per_rank, every GPU of an attention-TP rank its own copy of the replicated latent (SGLang,
  // vLLM's private pools); shared, one copy per node for the rank's GPUs there (vLLM's mmap pool, #52760 / #56629).
  const int gpus_node = std::min(d.decode.gpus, s.hardware.gpus_per_node);
  const bool shared = hs.host_pool_sharing == "shared";
  const int sharers = shared ? std::max(1, std::min(attention_tp_of(d.decode), gpus_node)) : 1;
  const double host_gpu = static_cast<double>(host_tokens) * L * row / sharers;
  std::string per_gpu = fmt::format("host_pool × kv_layers × latent_row_bytes = {} × {} × {}", host_tokens, L, row);
  if (shared)
    per_gpu = fmt::format("host_pool × kv_layers × latent_row_bytes / GPUs sharing it = {} × {} × {} / {} "
                          "(host_pool_sharing shared: min(attention_tp, GPUs per node) = min({}, {}))",
                          host_tokens, L, row, sharers, attention_tp_of(d.decode), gpus_node);
  else if (gib)
    per_gpu += fmt::format(" (host_pool_sharing per_rank: each of the rank's {} GPUs holds a copy)", attention_tp_of(d.decode));
  b.host_pool_bytes_per_gpu = fig("host_pool_bytes_per_gpu", "host pool bytes per GPU", host_gpu, "B", per_gpu);
  b.host_pool_bytes_per_node = fig("host_pool_bytes_per_node", "host pools per decode node", host_gpu * gpus_node, "B",
                                   fmt::format("host_pool_bytes_per_gpu × GPUs per node = {} × {}", num(host_gpu), gpus_node));
  b.host_dram_bytes = fig("host_dram_bytes", "host DRAM per decode node", d.host_dram_bytes, "B",
                          "deployment host_dram_bytes");
  b.host_dram_left_bytes = fig("host_dram_left_bytes", "host DRAM left after host pools",
                               d.host_dram_bytes - host_gpu * gpus_node, "B",
                               fmt::format("host_dram − host_pools_per_node = {} − {}", num(d.host_dram_bytes),
                                           num(host_gpu * gpus_node)));

  // Per request.
  const int64_t buf_tokens = int64_t{H} + page;
  b.device_buffer_tokens = fig("device_buffer_tokens", "device buffer slots per request", static_cast<double>(buf_tokens),
                               "tokens", fmt::format("device_buffer_size + page_size = {} + {}", H, page));
  b.device_buffer_bytes = fig("device_buffer_bytes", "device buffer bytes per request",
                              static_cast<double>(buf_tokens * L * row), "B",
                              fmt::format("(H + page_size) × kv_layers × latent_row_bytes = ({} + {}) × {} × {}", H, page,
                                          L, row));
  b.max_buffers_per_device_pool = fig("max_buffers_per_device_pool", "full device buffers per device pool",
                                      static_cast<double>(N / buf_tokens), "requests",
                                      fmt::format("floor(device_pool / (H + page_size)) = floor({} / {})", N, buf_tokens));

  for (int64_t n : seq_lens) {
    SeqLenBudget q;
    q.seq_len = n;
    const int64_t paged = round_up_to_page(n, page);
    q.full_latent_bytes = fig("full_latent_bytes", "latent", static_cast<double>(n) * L * row, "B",
                              fmt::format("seq_len × kv_layers × latent_row_bytes = {} × {} × {}", n, L, row));
    q.full_indexer_bytes = fig("full_indexer_bytes", "indexer keys", static_cast<double>(n) * Li * idx, "B",
                               fmt::format("seq_len × {} × indexer_key_bytes = {} × {} × {}", li_name, n, Li, idx));
    q.full_kv_bytes = fig("full_kv_bytes", "full KV (latent + indexer)", full_kv_request_bytes(b, n), "B",
                          full_kv_request_formula(b, n));
    // buffer_slots: past H the buffer is H + page slots; up to H it grows page by page (paged seq_len).
    const int64_t dev_tokens = n <= H ? paged : buf_tokens;
    q.hisparse_hbm_bytes =
        fig("hisparse_hbm_bytes", "HiSparse HBM (buffer + indexer keys)",
            static_cast<double>(dev_tokens) * L * row + static_cast<double>(n) * Li * idx, "B",
            fmt::format("buffer_slots × kv_layers × latent_row_bytes + seq_len × {} × indexer_key_bytes = "
                        "{} × {} × {} + {} × {} × {}",
                        li_name, dev_tokens, L, row, n, Li, idx));
    q.hisparse_host_bytes = fig("hisparse_host_bytes", "HiSparse host (latent)", static_cast<double>(n) * L * row, "B",
                                fmt::format("seq_len × kv_layers × latent_row_bytes = {} × {} × {}", n, L, row));
    std::string f_full, f_logical;
    const int64_t max_full = full_pool_requests(b, n, &f_full);
    const int64_t by_logical =
        requests_in_pool(logical, paged, static_cast<int64_t>(b.reserved_decode_tokens.value), "logical_pool", &f_logical);
    set_max_requests(q, d, max_full, f_full, std::min(N / dev_tokens, by_logical),
                     fmt::format("min(floor(device_pool / buffer) = floor({} / {}), {})", N, dev_tokens, f_logical));
    b.per_seq_len.push_back(q);
  }
  return b;
}

}  // namespace hisparse

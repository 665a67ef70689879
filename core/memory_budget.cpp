// @brief The memory arithmetic of a scenario, following SGLang's own pool sizing so capacities match the real engine.
// This file holds what every family shares (HBM split, row sizes, pool rounding, the requests a pool admits); each
// family's pools are in their own file (MLA: core/mla_memory_budget.cpp; GQA / MHA: core/gqa_memory_budget.cpp;
// DeepSeek-V4: core/dsv4_pool_budget.cpp), and core/budget_family.cpp picks one: they include this file's header, not
// each other.
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
#include "core/error.h"
#include "core/family/family_registry.h"

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

const ModelFamily& MemoryBudget::model_family() const { return family ? *family : default_family(); }

std::vector<const Figure*> MemoryBudget::figures() const { return model_family().figures(*this); }

std::vector<const Figure*> mla_budget_figures(const MemoryBudget& b) {
  std::vector<const Figure*> f = {&b.kv_layers, &b.latent_row_bytes, &b.indexer_key_bytes};
  if (b.indexer_layers != b.full_layers) f.push_back(&b.indexer_cache_layers);
  f.insert(f.end(), {&b.latent_bytes_per_token, &b.indexer_bytes_per_token, &b.full_cell_bytes,
                     &b.hisparse_cell_bytes, &b.hbm_bytes, &b.weights_per_gpu_bytes, &b.activation_reserve_bytes,
                     &b.kv_budget_bytes, &b.full_pool_tokens, &b.device_pool_tokens, &b.logical_pool_tokens,
                     &b.indexer_pool_tokens, &b.device_latent_pool_bytes, &b.indexer_pool_bytes, &b.host_pool_tokens,
                     &b.host_pool_bytes_per_gpu, &b.host_pool_bytes_per_node, &b.host_dram_bytes,
                     &b.host_dram_left_bytes, &b.device_buffer_tokens, &b.device_buffer_bytes,
                     &b.max_buffers_per_device_pool, &b.reserved_decode_tokens});
  return f;
}

std::vector<const Figure*> gqa_budget_figures(const MemoryBudget& b) {
  std::vector<const Figure*> f = {&b.kv_layers, &b.kv_heads_per_rank, &b.latent_row_bytes};
  if (b.sliding_layer_count > 0) f.insert(f.end(), {&b.full_attention_layers, &b.sliding_layers});
  f.push_back(&b.latent_bytes_per_token);
  if (b.double_sparse) f.insert(f.end(), {&b.ds_heavy_channel_num, &b.label_row_bytes, &b.label_bytes_per_token});
  f.insert(f.end(), {&b.full_cell_bytes, &b.hbm_bytes, &b.weights_per_gpu_bytes, &b.activation_reserve_bytes,
                     &b.kv_budget_bytes});
  if (b.sliding_layer_count > 0) f.insert(f.end(), {&b.profile_pool_tokens, &b.swa_full_tokens_ratio});
  f.push_back(&b.full_pool_tokens);
  if (b.double_sparse) f.push_back(&b.label_pool_bytes);
  if (b.sliding_layer_count > 0) f.push_back(&b.swa_pool_tokens);
  if (b.linear_layer_count > 0)
    f.insert(f.end(), {&b.linear_layers, &b.mamba_state_per_request, &b.mamba_full_memory_ratio, &b.mamba_slots,
                       &b.mamba_pool_bytes, &b.max_requests_by_mamba});
  f.push_back(&b.host_dram_bytes);
  return f;
}

std::vector<const Figure*> dsv4_budget_figures(const MemoryBudget& b) {
  return {&b.kv_layers, &b.latent_row_bytes, &b.indexer_key_bytes, &b.full_cell_bytes, &b.hisparse_cell_bytes,
          &b.hbm_bytes, &b.weights_per_gpu_bytes, &b.activation_reserve_bytes, &b.kv_budget_bytes,
          &b.c128_state_fixed_bytes, &b.full_pool_tokens, &b.swa_pool_tokens, &b.logical_pool_tokens,
          &b.hisparse_swa_pool_tokens, &b.device_pool_tokens, &b.host_pool_tokens, &b.host_pool_bytes_per_gpu,
          &b.host_pool_bytes_per_node, &b.host_dram_bytes, &b.host_dram_left_bytes, &b.device_buffer_tokens,
          &b.device_buffer_bytes, &b.max_buffers_per_device_pool, &b.reserved_decode_tokens};
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
    return fmt::format("seq_len × kv_layers × {} = {} × {} × {}", b.model_family().kv_row_name(),
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

}  // namespace hisparse

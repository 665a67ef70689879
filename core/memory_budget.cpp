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
#include "core/memory_budget.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse {

namespace {

// Numbers inside formulas: exact where it matters (pool bytes), short where the input was round (690e9).
std::string num(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9 && std::fmod(v, 1e7) == 0) return fmt::format("{:g}e9", v / 1e9);
  if (a >= 1e6 || v == std::floor(v)) return fmt::format("{}", static_cast<int64_t>(std::llround(v)));
  return fmt::format("{:.6g}", v);
}

Figure fig(const char* key, const char* label, double value, const char* unit, std::string formula) {
  return Figure{key, label, value, unit, std::move(formula)};
}

}  // namespace

const std::vector<int64_t>& default_seq_lens() {
  static const std::vector<int64_t> lens = {16384, 32768, 65536, 131072};
  return lens;
}

int64_t latent_row_bytes(const ModelSpec& model, KvDtype dtype) {
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
  if (attention == "gqa" || attention == "gqa+swa") {
    std::vector<const Figure*> f = {&kv_layers, &kv_heads_per_rank, &latent_row_bytes};
    if (sliding_layer_count > 0) f.insert(f.end(), {&full_attention_layers, &sliding_layers});
    f.insert(f.end(), {&latent_bytes_per_token, &full_cell_bytes, &hbm_bytes, &weights_per_gpu_bytes,
                       &activation_reserve_bytes, &kv_budget_bytes});
    if (sliding_layer_count > 0) f.insert(f.end(), {&profile_pool_tokens, &swa_full_tokens_ratio});
    f.push_back(&full_pool_tokens);
    if (sliding_layer_count > 0) f.push_back(&swa_pool_tokens);
    f.push_back(&host_dram_bytes);
    return f;
  }
  return {&kv_layers,
          &latent_row_bytes,
          &indexer_key_bytes,
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
          &max_buffers_per_device_pool};
}

namespace {

/// HBM per GPU: the same for every attention kind.
void hbm_figures(const Scenario& s, MemoryBudget& b) {
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

int attention_tp_of(const InstanceSpec& decode) { return std::max(1, decode.tp / std::max(1, decode.dp_attention)); }

MemoryBudget compute_gqa_budget(const Scenario& s, const std::vector<int64_t>& seq_lens);

}  // namespace

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
  const double row = b.latent_row_bytes.value, idx = b.indexer_key_bytes.value;
  return static_cast<double>(tokens) * (b.full_layers * row + b.indexer_layers * idx) +
         static_cast<double>(sliding_tokens_kept(b, tokens)) * b.sliding_layer_count * row;
}

std::string full_kv_request_formula(const MemoryBudget& b, int64_t n) {
  const std::string row = num(b.latent_row_bytes.value);
  if (b.sliding_layer_count > 0)
    return fmt::format("(seq_len × full_layers + min(seq_len, window + page) × sliding_layers) × kv_row = ({} × {} + "
                       "{} × {}) × {}",
                       n, b.full_layers, sliding_tokens_kept(b, n), b.sliding_layer_count, row);
  if (!b.sparse_indexer || b.indexer_key_bytes.value == 0)
    return fmt::format("seq_len × kv_layers × {} = {} × {} × {}", b.attention == "gqa" ? "kv_row" : "latent_row_bytes",
                       n, b.full_layers, row);
  return fmt::format("seq_len × (kv_layers × latent_row_bytes + indexer_layers × indexer_key_bytes) = {} × ({} × {} + "
                     "{} × {})", n, b.full_layers, row, b.indexer_layers, num(b.indexer_key_bytes.value));
}

int64_t full_pool_requests(const MemoryBudget& b, int64_t n, std::string* formula) {
  const int page = std::max(1, b.page_size);
  const int64_t paged = round_up_to_page(n, page);
  const auto pool = static_cast<int64_t>(b.full_pool_tokens.value);
  int64_t out = pool / paged;
  std::string f = fmt::format("floor(full_pool / paged_seq_len) = floor({} / {})", pool, paged);
  if (b.sliding_layer_count > 0) {
    const int64_t kept = round_up_to_page(sliding_tokens_kept(b, n), page);
    const auto swa = static_cast<int64_t>(b.swa_pool_tokens.value);
    out = std::min(out, swa / kept);
    f = fmt::format("min(floor(full_pool / paged_seq_len), floor(swa_pool / paged(min(seq_len, window + page)))) = "
                    "min(floor({} / {}), floor({} / {}))",
                    pool, paged, swa, kept);
  }
  if (formula) *formula = f;
  return out;
}

MemoryBudget compute_memory_budget(const Scenario& s, const std::vector<int64_t>& seq_lens) {
  if (s.model.is_gqa()) return compute_gqa_budget(s, seq_lens);
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
  const int Li = b.indexer_layers;  // IndexShare: only the top-k anchors (and MTP layers) keep indexer keys
  const int64_t row = hisparse::latent_row_bytes(m, d.kv_dtype);
  const int64_t idx = m.indexer_key_bytes;
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
                                  fmt::format("indexer_layers × indexer_key_bytes = {} × {}", Li, idx));
  const double full_cell = static_cast<double>(L * row + Li * idx);
  const double hs_cell = static_cast<double>(L * row + Li * int64_t{ratio} * idx);
  b.full_cell_bytes = fig("full_cell_bytes", "SGLang cell size, full KV", full_cell, "B/token",
                          fmt::format("kv_layers × latent_row_bytes + indexer_layers × indexer_key_bytes = {} × {} + {} × {}", L, row,
                                      Li, idx));
  b.hisparse_cell_bytes =
      fig("hisparse_cell_bytes", "SGLang cell size, HiSparse", hs_cell, "B/token",
          fmt::format("kv_layers × latent_row_bytes + indexer_layers × host_to_device_ratio × indexer_key_bytes = "
                      "{} × {} + {} × {} × {}", L, row, Li, ratio, idx));

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
  int64_t N = pool_tokens(budget, hs_cell, page);
  std::string n_formula =
      fmt::format("floor(kv_budget / hisparse_cell / page_size) × page_size = floor({} / {} / {}) × {}", num(budget),
                  num(hs_cell), page, page);
  if (ov.device_pool_tokens > 0) {
    N = ov.device_pool_tokens;
    n_formula = "deployment memory.device_pool_tokens (override)";
  }
  b.device_pool_tokens = fig("device_pool_tokens", "device pool (max_total_num_tokens, HiSparse)",
                             static_cast<double>(N), "tokens", n_formula);
  const int64_t logical = N * ratio;
  b.logical_pool_tokens = fig("logical_pool_tokens", "logical pool", static_cast<double>(logical), "tokens",
                              fmt::format("device_pool × host_to_device_ratio = {} × {}", N, ratio));
  b.indexer_pool_tokens = fig("indexer_pool_tokens", "indexer key cache (all logical tokens)",
                              static_cast<double>(logical), "tokens",
                              fmt::format("device_pool × host_to_device_ratio = {} × {}", N, ratio));
  b.device_latent_pool_bytes = fig("device_latent_pool_bytes", "device latent pool bytes",
                                   static_cast<double>(N) * L * row, "B",
                                   fmt::format("device_pool × kv_layers × latent_row_bytes = {} × {} × {}", N, L, row));
  b.indexer_pool_bytes = fig("indexer_pool_bytes", "indexer key cache bytes", static_cast<double>(logical) * Li * idx, "B",
                             fmt::format("logical_pool × indexer_layers × indexer_key_bytes = {} × {} × {}", logical, Li,
                                         idx));
  int64_t host_tokens = host_pool_tokens(logical, page);
  std::string host_formula = fmt::format("(floor(logical_pool / page_size) + 1) × page_size = (floor({} / {}) + 1) × {}",
                                         logical, page, page);
  if (ov.host_pool_tokens > 0) {
    host_tokens = ov.host_pool_tokens;
    host_formula = "deployment memory.host_pool_tokens (override)";
  }
  b.host_pool_tokens = fig("host_pool_tokens", "host pool", static_cast<double>(host_tokens), "tokens", host_formula);
  const double host_gpu = static_cast<double>(host_tokens) * L * row;
  b.host_pool_bytes_per_gpu = fig("host_pool_bytes_per_gpu", "host pool bytes per GPU", host_gpu, "B",
                                  fmt::format("host_pool × kv_layers × latent_row_bytes = {} × {} × {}", host_tokens, L, row));
  const int gpus_node = std::min(d.decode.gpus, s.hardware.gpus_per_node);
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

  const auto full_pool = static_cast<int64_t>(b.full_pool_tokens.value);
  for (int64_t n : seq_lens) {
    SeqLenBudget q;
    q.seq_len = n;
    const int64_t paged = round_up_to_page(n, page);
    q.full_latent_bytes = fig("full_latent_bytes", "latent", static_cast<double>(n) * L * row, "B",
                              fmt::format("seq_len × kv_layers × latent_row_bytes = {} × {} × {}", n, L, row));
    q.full_indexer_bytes = fig("full_indexer_bytes", "indexer keys", static_cast<double>(n) * Li * idx, "B",
                               fmt::format("seq_len × indexer_layers × indexer_key_bytes = {} × {} × {}", n, Li, idx));
    q.full_kv_bytes = fig("full_kv_bytes", "full KV (latent + indexer)", static_cast<double>(n) * (L * row + Li * idx), "B",
                          fmt::format("seq_len × (kv_layers × latent_row_bytes + indexer_layers × indexer_key_bytes) = "
                                      "{} × ({} × {} + {} × {})", n, L, row, Li, idx));
    // buffer_slots: past H the buffer is H + page slots; up to H it grows page by page (paged seq_len).
    const int64_t dev_tokens = n <= H ? paged : buf_tokens;
    q.hisparse_hbm_bytes =
        fig("hisparse_hbm_bytes", "HiSparse HBM (buffer + indexer keys)",
            static_cast<double>(dev_tokens) * L * row + static_cast<double>(n) * Li * idx, "B",
            fmt::format("buffer_slots × kv_layers × latent_row_bytes + seq_len × indexer_layers × indexer_key_bytes = "
                        "{} × {} × {} + {} × {} × {}",
                        dev_tokens, L, row, n, Li, idx));
    q.hisparse_host_bytes = fig("hisparse_host_bytes", "HiSparse host (latent)", static_cast<double>(n) * L * row, "B",
                                fmt::format("seq_len × kv_layers × latent_row_bytes = {} × {} × {}", n, L, row));
    int64_t max_full = full_pool / paged;
    int64_t max_hs = std::min(N / dev_tokens, logical / paged);
    std::string cap;
    if (d.max_running_requests > 0) {
      max_full = std::min<int64_t>(max_full, d.max_running_requests);
      max_hs = std::min<int64_t>(max_hs, d.max_running_requests);
      cap = fmt::format(", capped at max_running_requests {}", d.max_running_requests);
    }
    q.max_requests_full = fig("max_requests_full", "max requests full-KV (memory)", static_cast<double>(max_full),
                              "requests", fmt::format("floor(full_pool / paged_seq_len) = floor({} / {}){}", full_pool, paged, cap));
    q.max_requests_hisparse = fig("max_requests_hisparse", "max requests HiSparse (memory)", static_cast<double>(max_hs),
                                  "requests",
                                  fmt::format("min(floor(device_pool / buffer), floor(logical_pool / paged_seq_len)) = "
                                              "min(floor({} / {}), floor({} / {})){}",
                                              N, dev_tokens, logical, paged, cap));
    b.per_seq_len.push_back(q);
  }
  return b;
}

namespace {

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
  const int Ls = m.sliding_layer_count(), Lf = m.full_attention_layer_count(), L = m.kv_layers();
  const bool swa = Ls > 0;
  b.attention = swa ? "gqa+swa" : "gqa";
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

  b.kv_layers = fig("kv_layers", "KV layers", L, "layers", fmt::format("layers = {}", m.layers));
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
  const double cell = static_cast<double>(L * row);
  b.full_cell_bytes = fig("full_cell_bytes", "SGLang cell size, full KV", cell, "B/token",
                          swa ? fmt::format("(full_layers + sliding_layers) × kv_row = ({} + {}) × {} (the profile "
                                            "cell of every layer, before the SWA split)", Lf, Ls, row)
                              : fmt::format("kv_layers × kv_row = {} × {} (MHATokenToKVPool)", L, row));
  b.hisparse_cell_bytes = fig("hisparse_cell_bytes", "SGLang cell size, HiSparse", 0, "B/token", na);
  hbm_figures(s, b);
  const double budget = b.kv_budget_bytes.value;

  const int64_t profile = pool_tokens(budget, cell, page);
  const std::string profile_formula =
      fmt::format("floor(kv_budget / full_cell / page_size) × page_size = floor({} / {} / {}) × {}", num(budget),
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
    q.full_kv_bytes = fig("full_kv_bytes", "full KV (K + V)", bytes, "B", full_kv_request_formula(b, n));
    q.full_latent_bytes = fig("full_latent_bytes", "K + V", bytes, "B", "= full KV (no indexer keys)");
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

}  // namespace

}  // namespace hisparse

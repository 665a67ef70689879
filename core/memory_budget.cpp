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

MemoryBudget compute_memory_budget(const Scenario& s, const std::vector<int64_t>& seq_lens) {
  const ModelSpec& m = s.model;
  const DeploymentSpec& d = s.deployment;
  const HiSparseConfig& hs = d.hisparse;
  const MemoryOverrides& ov = d.memory;
  const int page = d.page_size;
  const int ratio = hs.host_to_device_ratio;
  const int H = hs.device_buffer_size;
  MemoryBudget b;

  const int L = m.kv_layers();
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
                                  static_cast<double>(L * idx), "B/token",
                                  fmt::format("kv_layers × indexer_key_bytes = {} × {}", L, idx));
  const double full_cell = static_cast<double>(L * (row + idx));
  const double hs_cell = static_cast<double>(L * (row + int64_t{ratio} * idx));
  b.full_cell_bytes = fig("full_cell_bytes", "SGLang cell size, full KV", full_cell, "B/token",
                          fmt::format("kv_layers × (latent_row_bytes + indexer_key_bytes) = {} × ({} + {})", L, row, idx));
  b.hisparse_cell_bytes =
      fig("hisparse_cell_bytes", "SGLang cell size, HiSparse", hs_cell, "B/token",
          fmt::format("kv_layers × (latent_row_bytes + host_to_device_ratio × indexer_key_bytes) = {} × ({} + {} × {})", L,
                      row, ratio, idx));

  // HBM per GPU.
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
  b.indexer_pool_bytes = fig("indexer_pool_bytes", "indexer key cache bytes", static_cast<double>(logical) * L * idx, "B",
                             fmt::format("logical_pool × kv_layers × indexer_key_bytes = {} × {} × {}", logical, L, idx));
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
    q.full_indexer_bytes = fig("full_indexer_bytes", "indexer keys", static_cast<double>(n) * L * idx, "B",
                               fmt::format("seq_len × kv_layers × indexer_key_bytes = {} × {} × {}", n, L, idx));
    q.full_kv_bytes = fig("full_kv_bytes", "full KV (latent + indexer)", static_cast<double>(n) * L * (row + idx), "B",
                          fmt::format("seq_len × kv_layers × (latent_row_bytes + indexer_key_bytes) = {} × {} × ({} + {})",
                                      n, L, row, idx));
    // buffer_slots: past H the buffer is H + page slots; up to H it grows page by page (paged seq_len).
    const int64_t dev_tokens = n <= H ? paged : buf_tokens;
    q.hisparse_hbm_bytes =
        fig("hisparse_hbm_bytes", "HiSparse HBM (buffer + indexer keys)",
            static_cast<double>(dev_tokens) * L * row + static_cast<double>(n) * L * idx, "B",
            fmt::format("buffer_slots × kv_layers × latent_row_bytes + seq_len × kv_layers × indexer_key_bytes = "
                        "{} × {} × {} + {} × {} × {}",
                        dev_tokens, L, row, n, L, idx));
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

}  // namespace hisparse

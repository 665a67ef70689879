// @brief compute_memory_budget's MLA branch (MLA with or without DeepSeek Sparse Attention's indexer): SGLang's
// token pool and, with HiSparse, its device, logical and host pools (the SGLang sources are cited at the top of
// core/memory_budget.cpp; vLLM's host_pool_gib below).
#include "core/mla_memory_budget.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/budget_figure.h"
#include "core/error.h"

namespace hisparse {

using budget_detail::fig;
using budget_detail::num;
using budget_detail::attention_tp_of;

MemoryBudget compute_mla_budget(const Scenario& s, const std::vector<int64_t>& seq_lens) {
  const ModelSpec& m = s.model;
  const DeploymentSpec& d = s.deployment;
  const HiSparseConfig& hs = d.hisparse;
  const MemoryOverrides& ov = d.memory;
  const int page = d.page_size;
  const int ratio = hs.host_to_device_ratio;
  const int H = hs.device_buffer_size;
  MemoryBudget b;
  b.sparse_indexer = m.has_sparse_indexer();
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

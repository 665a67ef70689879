// @brief The DeepSeek-V4 pool arithmetic, following SGLang's DSV4PoolConfigurator so the pool sizes match the engine.
//
// What SGLang does (read in sgl-project/sglang, python/sglang/srt/model_executor/pool_configurator.py,
// DSV4PoolConfigurator):
//  - kv_bytes = qk_nope_head_dim + 2 × qk_rope_head_dim + 8 per cached entry (fp8 nope, bf16 rope, 8 bytes of
//    scales); indexer_bytes = index_head_dim + index_head_dim / 128 × 4 (fp8 key + fp32 scale).
//  - bytes_per_full_token = swa_ratio × kv × layers + kv × n_c4 / (4 × shrink) + kv × n_c128 / 128
//    + indexer × n_c4 / 4 + swa_ratio × (ring / window) × (c4 state + c4 indexer state) × n_c4, where shrink is
//    host_to_device_ratio under --enable-hisparse (else 1), the layer counts come from config compress_ratios over
//    the model's own layers, and a speculative draft inflates the whole by (layers + 1) / layers.
//  - full = available // bytes_per_full_token, page-aligned (page_size a multiple of 128); swa = full × ratio,
//    page-aligned; c4 = full // (4 × shrink); c128 = full // 128; c4_state = swa // window × ring.
// PR #33979 (open): size the C4 device pool by request capacity, Q = device_buffer_size + c4_page_size entries per
//   request slot, N = M + E + 1 slots (M = max_running_requests per worker, E = extra decode slots, row 0 the dummy
//   row), R = N; the PR's own text in the stored corpus stops there, the rest (C4 device = R × Q entries charged as
//   fixed bytes before the per-token split) is inferred from its stated aim and labelled so.
// PR #30909 (open): an empty HiSparse pool reported its full-token capacity as min(logical_available,
//   c4_device_available × 4), so the logical pool looked 1 − 1 / (shrink) full; the fix reports logical_available.
#include "core/dsv4_pool_budget.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/budget_figure.h"
#include "core/error.h"
#include "core/text_format.h"

namespace hisparse {

namespace {

using budget_detail::fig;
using budget_detail::num;

// Compress-state element size: SGLANG_DSV4_COMPRESS_STATE_DTYPE accepts float32 or bfloat16; its default is not in
// the stored source, so fp32 (the larger, conservative one) is assumed.
constexpr int64_t kStateDtypeBytes = 4;

}  // namespace

Dsv4StateRows dsv4_state_rows(const ModelSpec& m) {
  // Rings (get_compress_state_ring_size): C4 8 rows per window of SWA tokens, C128 128 rows per request slot; 16 and
  // 256 with a speculative draft (the C4 sizes also in sglang PR #40337's measurement table).
  const bool spec = m.mtp_layers > 0;
  const int64_t head = int64_t{m.kv_lora_rank} + m.qk_rope_head_dim;
  return Dsv4StateRows{spec ? 16 : 8, spec ? 256 : 128, 2 * 2 * head * kStateDtypeBytes,
                       2 * 2 * int64_t{m.indexer_head_dim} * kStateDtypeBytes, 2 * head * kStateDtypeBytes};
}

std::vector<Dsv4RowSize> dsv4_row_sizes(const ModelSpec& m) {
  const int64_t idx = m.indexer_key_bytes;
  std::vector<Dsv4RowSize> rows;
  rows.push_back({"bf16", m.latent_row_bytes, idx,
                  fmt::format("(nope + rope) × 2 = ({} + {}) × 2", m.kv_lora_rank, m.qk_rope_head_dim)});
  rows.push_back({"fp8", m.latent_row_bytes_fp8, idx,
                  fmt::format("nope fp8 + rope bf16 + 8 scale bytes = {} + {} × 2 + 8 (SGLang DSV4 kv_bytes)",
                              m.kv_lora_rank, m.qk_rope_head_dim)});
  rows.push_back({"nvfp4", m.latent_row_bytes_nvfp4, idx,
                  m.latent_row_bytes_nvfp4 > 0 ? std::string("model latent_row_bytes_nvfp4 (SGLang PR #35237)")
                                               : std::string("not published for this model")});
  return rows;
}

int64_t dsv4_reported_full_capacity_before_fix(int64_t logical_available, int64_t c4_device_available,
                                               int compress_ratio) {
  return std::min(logical_available, c4_device_available * compress_ratio);
}

Dsv4PoolBudget compute_dsv4_pool_budget(const Scenario& s) {
  const ModelSpec& m = s.model;
  const DeploymentSpec& d = s.deployment;
  if (!m.is_compressed())
    throw_error("{}: model {} has no compress_ratios; the DeepSeek-V4 pools apply to compressed attention only",
                s.source, m.name);
  const int page = d.page_size;
  if (page % 128 != 0)
    throw_error("{}: page_size: got {}, expected a multiple of 128 (SGLang asserts it for compressed attention)",
                s.source, page);
  Dsv4PoolBudget b;
  b.rows = dsv4_row_sizes(m);
  const int L = m.layers, n4 = m.compressed_layer_count(4), n128 = m.compressed_layer_count(128);
  const int n0 = L - n4 - n128;
  const int64_t kv = latent_row_bytes(m, d.kv_dtype), idx = m.indexer_key_bytes;
  const int W = m.window_size;
  const double r = d.swa_full_tokens_ratio;
  const int shrink = d.hisparse_enabled ? d.hisparse.host_to_device_ratio : 1;
  const Dsv4StateRows st = dsv4_state_rows(m);
  const int ring = st.c4_ring;
  const double infl = static_cast<double>(L + m.mtp_layers) / L;

  b.swa_only_layers = fig("swa_only_layers", "sliding-window-only layers", n0, "layers", "compress_ratios entries 0");
  b.c4_layers = fig("c4_layers", "C4 layers (compressed sparse attention)", n4, "layers", "compress_ratios entries 4");
  b.c128_layers = fig("c128_layers", "C128 layers (heavily compressed)", n128, "layers", "compress_ratios entries 128");
  b.mtp_inflation = fig("mtp_inflation", "speculative draft inflation", infl, "",
                        fmt::format("(layers + mtp_layers) / layers = ({} + {}) / {}", L, m.mtp_layers, L));
  const Dsv4RowSize& row = b.rows[d.kv_dtype == KvDtype::kFp8 ? 1 : d.kv_dtype == KvDtype::kNvfp4 ? 2 : 0];
  b.kv_row_bytes = fig("kv_row_bytes", "KV entry per layer", static_cast<double>(kv), "B",
                       fmt::format("{}: {}", row.dtype, row.formula));
  b.indexer_key_bytes = fig("indexer_key_bytes", "C4 indexer key per entry", static_cast<double>(idx), "B",
                            fmt::format("fp8 key + fp32 scale per 128 = {} + {} × 4", m.indexer_head_dim,
                                        m.indexer_head_dim / 128));
  b.window_size = fig("window_size", "sliding window", W, "tokens", "model window_size (config sliding_window)");
  b.swa_full_tokens_ratio = fig("swa_full_tokens_ratio", "swa_full_tokens_ratio", r, "",
                                "deployment swa_full_tokens_ratio (SGLang --swa-full-tokens-ratio)");
  b.c4_shrink_factor = fig("c4_shrink_factor", "C4 device shrink factor", shrink, "",
                           d.hisparse_enabled ? "HiSparse on: host_to_device_ratio" : "HiSparse off: 1");
  b.c4_state_ring = fig("c4_state_ring", "C4 compress-state ring", ring, "entries",
                        m.mtp_layers > 0 ? "16 with a speculative draft (sglang PR #40337 table)"
                                         : "8 without a speculative draft (sglang PR #40337 table)");
  const int64_t head = int64_t{m.kv_lora_rank} + m.qk_rope_head_dim;
  const int64_t state = st.c4_state_bytes, idx_state = st.c4_indexer_state_bytes;
  b.c4_state_bytes = fig("c4_state_bytes", "C4 attention state per row", static_cast<double>(state), "B",
                         fmt::format("2 × 2 × head_dim × 4 = 2 × 2 × {} × 4 (assumed fp32 state)", head));
  b.c4_indexer_state_bytes = fig("c4_indexer_state_bytes", "C4 indexer state per row", static_cast<double>(idx_state),
                                 "B", fmt::format("2 × 2 × index_head_dim × 4 = 2 × 2 × {} × 4 (assumed fp32 state)",
                                                  m.indexer_head_dim));

  // C128 states (pool_configurator.py _get_c128_state_fixed_bytes): slots = M + E + 1 request slots of `ring` rows,
  // plus ring + 1, rounded up to 128 rows, each 2 × head_dim state values (kv, score; no overlap), per C128 layer.
  const int ring128 = st.c128_ring;
  const int64_t state128 = st.c128_state_bytes;
  b.c128_state_ring = fig("c128_state_ring", "C128 compress-state ring", ring128, "rows",
                          m.mtp_layers > 0 ? "256 with a speculative draft (get_compress_state_ring_size)"
                                           : "128 without a speculative draft (get_compress_state_ring_size)");
  b.c128_state_bytes = fig("c128_state_bytes", "C128 state per row", static_cast<double>(state128), "B",
                           fmt::format("2 × head_dim × 4 = 2 × {} × 4 (assumed fp32 state)", head));
  if (d.max_running_requests > 0) {
    const int64_t slots = int64_t{d.max_running_requests} + 1;
    const int64_t rows = (slots * ring128 + ring128 + 1 + 127) / 128 * 128;
    b.c128_state_fixed_bytes =
        fig("c128_state_fixed_bytes", "C128 compress states (fixed)", static_cast<double>(rows * state128 * n128), "B",
            fmt::format("ceil((slots × ring + ring + 1) / 128) × 128 × state × c128_layers = ceil(({} × {} + {} + 1) / "
                        "128) × 128 × {} × {}; slots = M + E + 1 = {} + 0 + 1 (E: extra decode slots, assumed 0)",
                        slots, ring128, ring128, state128, n128, d.max_running_requests));
  } else {
    b.c128_state_fixed_bytes = fig("c128_state_fixed_bytes", "C128 compress states (fixed)", 0, "B",
                                   "max_running_requests unset: SGLang then sizes them from the token capacity (not "
                                   "modelled), taken as 0");
  }

  // Bytes per full token, term by term.
  const double t_swa = r * kv * L, t_c4 = static_cast<double>(kv) * n4 / (4.0 * shrink),
               t_c128 = static_cast<double>(kv) * n128 / 128.0, t_idx = static_cast<double>(idx) * n4 / 4.0,
               t_state = r * ring / W * static_cast<double>(state + idx_state) * n4;
  b.swa_term = fig("swa_term", "sliding-window KV", t_swa, "B/token",
                   fmt::format("ratio × kv × layers = {} × {} × {}", num(r), kv, L));
  b.c4_term = fig("c4_term", "C4 KV on device", t_c4, "B/token",
                  fmt::format("kv × c4_layers / (4 × shrink) = {} × {} / (4 × {})", kv, n4, shrink));
  b.c128_term = fig("c128_term", "C128 KV", t_c128, "B/token", fmt::format("kv × c128_layers / 128 = {} × {} / 128", kv, n128));
  b.indexer_term = fig("indexer_term", "C4 indexer keys", t_idx, "B/token",
                       fmt::format("indexer × c4_layers / 4 = {} × {} / 4", idx, n4));
  b.c4_state_term = fig("c4_state_term", "C4 compress states", t_state, "B/token",
                        fmt::format("ratio × ring / window × (state + indexer state) × c4_layers = {} × {} / {} × ({} + "
                                    "{}) × {}", num(r), ring, W, state, idx_state, n4));
  const double bpf = (t_swa + t_c4 + t_c128 + t_idx + t_state) * infl;
  b.bytes_per_full_token = fig("bytes_per_full_token", "bytes per full token", bpf,
                               "B/token", fmt::format("(swa + c4 + c128 + indexer + states) × inflation = ({} + {} + {} "
                                                      "+ {} + {}) × {}", num(t_swa), num(t_c4), num(t_c128),
                                                      num(t_idx), num(t_state), num(infl)));

  hbm_figures(s, b.hbm);
  const double c128_fixed = b.c128_state_fixed_bytes.value;
  const double budget = b.hbm.kv_budget_bytes.value - c128_fixed;
  int64_t full = pool_tokens(budget, bpf, page);
  std::string full_formula = fmt::format("floor((kv_budget − C128 states) / bytes_per_full_token / page) × page = "
                                         "floor(({} − {}) / {} / {}) × {}", num(b.hbm.kv_budget_bytes.value),
                                         num(c128_fixed), num(bpf), page, page);
  if (d.memory.full_pool_tokens > 0) {
    full = d.memory.full_pool_tokens / page * page;
    full_formula = fmt::format("deployment memory.full_pool_tokens (override) {} rounded to pages of {}",
                               d.memory.full_pool_tokens, page);
  }
  const int64_t swa = static_cast<int64_t>(std::floor(static_cast<double>(full) * r)) / page * page;
  const int64_t c4 = full / (4 * int64_t{shrink});
  b.full_tokens = fig("full_tokens", "full (logical) pool (max_total_num_tokens)", static_cast<double>(full), "tokens",
                      full_formula);
  b.swa_tokens = fig("swa_tokens", "sliding-window pool", static_cast<double>(swa), "tokens",
                     fmt::format("floor(full × ratio / page) × page = floor({} × {} / {}) × {}", full, num(r), page, page));
  b.c4_device_entries = fig("c4_device_entries", "C4 device pool", static_cast<double>(c4), "entries",
                            fmt::format("floor(full / (4 × shrink)) = floor({} / (4 × {}))", full, shrink));
  b.c128_entries = fig("c128_entries", "C128 pool", static_cast<double>(full / 128), "entries",
                       fmt::format("floor(full / 128) = floor({} / 128)", full));
  b.c4_state_rows = fig("c4_state_rows", "C4 compress-state rows", static_cast<double>(swa / W * ring), "rows",
                        fmt::format("floor(swa / window) × ring = floor({} / {}) × {}", swa, W, ring));
  const int64_t host_entries = d.hisparse_enabled ? full / 4 : 0;
  b.c4_host_entries = fig("c4_host_entries", "C4 host pool (HiSparse)", static_cast<double>(host_entries), "entries",
                          d.hisparse_enabled ? fmt::format("floor(full / 4) = floor({} / 4): every logical C4 entry "
                                                           "(modelled)", full)
                                             : std::string("HiSparse off: no host pool"));
  b.c4_host_bytes = fig("c4_host_bytes", "C4 host pool bytes per GPU", static_cast<double>(host_entries) * n4 * kv, "B",
                        fmt::format("c4_host × c4_layers × kv = {} × {} × {}", host_entries, n4, kv));

  // PR #33979: request-capacity sizing of the C4 device pool.
  const int M = d.max_running_requests;
  b.request_capacity_applicable = d.hisparse_enabled && M > 0;
  if (b.request_capacity_applicable) {
    const int64_t H = d.hisparse.device_buffer_size, c4_page = page / 4;
    const int64_t Q = H + c4_page, N = int64_t{M} + 1, R = N;
    const double fixed = static_cast<double>(R * Q) * n4 * kv;
    const double base = bpf - t_c4 * infl;
    b.rc_entries_per_request = fig("rc_entries_per_request", "C4 entries per request slot (Q)", static_cast<double>(Q),
                                   "entries", fmt::format("device_buffer_size + c4_page_size = {} + {} (page / 4)", H, c4_page));
    b.rc_request_slots = fig("rc_request_slots", "C4 request slots (R = N)", static_cast<double>(R), "slots",
                             fmt::format("M + E + 1 = {} + 0 + 1 (E: extra decode slots, assumed 0; row 0 the dummy)", M));
    b.rc_c4_device_entries = fig("rc_c4_device_entries", "C4 device pool (#33979)", static_cast<double>(R * Q), "entries",
                                 fmt::format("R × Q = {} × {} (inferred from the PR's aim)", R, Q));
    b.rc_c4_device_bytes = fig("rc_c4_device_bytes", "C4 device pool bytes (fixed)", fixed, "B",
                               fmt::format("R × Q × c4_layers × kv = {} × {} × {} × {}", R, Q, n4, kv));
    b.rc_base_bytes_per_full_token = fig("rc_base_bytes_per_full_token", "bytes per full token without the C4 term",
                                         base, "B/token", fmt::format("bytes_per_full_token − c4 × inflation = {} − {} × {}",
                                                                      num(bpf), num(t_c4), num(infl)));
    const int64_t rc_full = pool_tokens(budget - fixed, base, page);
    b.rc_full_tokens = fig("rc_full_tokens", "full (logical) pool (#33979)", static_cast<double>(rc_full), "tokens",
                           fmt::format("floor((kv_budget − C128 states − C4 fixed) / base / page) × page = floor(({} − "
                                       "{} − {}) / {} / {}) × {}", num(b.hbm.kv_budget_bytes.value), num(c128_fixed),
                                       num(fixed), num(base), page, page));
  }

  // PR #30909: the usage an empty pool reported.
  const int64_t cap = dsv4_reported_full_capacity_before_fix(full, c4, 4);
  b.usage_capacity_before = fig("usage_capacity_before", "full capacity reported before #30909",
                                static_cast<double>(cap), "tokens",
                                fmt::format("min(logical_available, c4_device × 4) = min({}, {} × 4)", full, c4));
  b.usage_empty_before = fig("usage_empty_before", "empty-pool usage reported before #30909",
                             full > 0 ? 1.0 - static_cast<double>(cap) / full : 0, "",
                             fmt::format("1 − capacity / full = 1 − {} / {}", cap, full));
  b.usage_empty_after = fig("usage_empty_after", "empty-pool usage reported after #30909", 0, "",
                            "1 − logical_available / full = 0 (capacity = logical_available)");
  b.not_modelled = {
      "the extra PD decode request slots (SGLang's disaggregation_decode_extra_slots): taken as 0 in the C128 states "
      "and in #33979's R"};
  return b;
}

std::string dsv4_pools_line(const MemoryBudget& b) {
  auto n = [](const Figure& f) { return group_digits(static_cast<int64_t>(f.value)); };
  return fmt::format("full KV: full {} / sliding-window {} tokens; HiSparse: full (logical) {} / sliding-window {} "
                     "tokens, C4 device pool {} entries, C4 host pool {} entries",
                     n(b.full_pool_tokens), n(b.swa_pool_tokens), n(b.logical_pool_tokens), n(b.hisparse_swa_pool_tokens),
                     n(b.device_pool_tokens), n(b.host_pool_tokens));
}

Dsv4RequestLimits dsv4_request_limits(const MemoryBudget& b, int64_t n, bool hisparse) {
  Dsv4RequestLimits r;
  const int page = std::max(1, b.page_size);
  const int64_t paged = round_up_to_page(n, page), reserve = static_cast<int64_t>(b.reserved_decode_tokens.value);
  r.c4_entries = paged / 4;
  r.swa_tokens = round_up_to_page(sliding_tokens_kept(b, n), page);
  if (!hisparse) {
    // Full KV: the full and sliding-window pools (C4 = full / 4 and C128 = full / 128 entries never bind first).
    r.hbm = full_pool_requests(b, n, &r.hbm_formula);
    return r;
  }
  const auto Q = static_cast<int64_t>(b.device_buffer_tokens.value);
  const int64_t H = Q - page / 4;
  r.device_slots = r.c4_entries <= H ? r.c4_entries : Q;
  const auto c4_dev = static_cast<int64_t>(b.device_pool_tokens.value);
  const int64_t by_c4 = r.device_slots > 0 ? c4_dev / r.device_slots : 0;
  std::string f_swa;
  const int64_t by_swa = requests_in_pool(static_cast<int64_t>(b.hisparse_swa_pool_tokens.value), r.swa_tokens, reserve,
                                          "swa_pool", &f_swa);
  r.hbm = std::min(by_c4, by_swa);
  r.hbm_formula = fmt::format("min(floor(c4_device_pool / c4_slots) = floor({} / {}), {}); c4_slots = {}", c4_dev,
                              r.device_slots, f_swa,
                              r.c4_entries <= H ? "paged seq_len / 4 (all entries fit the buffer)"
                                                : "device_buffer_size + page / 4");
  r.logical = requests_in_pool(static_cast<int64_t>(b.logical_pool_tokens.value), paged, reserve, "logical_pool",
                               &r.logical_formula);
  const auto host = static_cast<int64_t>(b.host_pool_tokens.value);
  r.host = r.c4_entries > 0 ? host / r.c4_entries : 0;
  r.host_formula = fmt::format("floor(c4_host_pool / (paged seq_len / 4)) = floor({} / {})", host, r.c4_entries);
  return r;
}

MemoryBudget dsv4_memory_budget(const Scenario& s, const std::vector<int64_t>& seq_lens) {
  const ModelSpec& m = s.model;
  const DeploymentSpec& d = s.deployment;
  // The same arithmetic twice: the pools of a server without HiSparse, and with it.
  Scenario off = s, on = s;
  off.deployment.hisparse_enabled = false;
  on.deployment.hisparse_enabled = true;
  const Dsv4PoolBudget f = compute_dsv4_pool_budget(off), h = compute_dsv4_pool_budget(on);
  const int page = d.page_size, L = m.layers, n4 = m.compressed_layer_count(4), n128 = m.compressed_layer_count(128);
  const int64_t kv = latent_row_bytes(m, d.kv_dtype), idx = m.indexer_key_bytes;
  const int W = m.window_size;
  const int64_t H = d.hisparse.device_buffer_size, Q = H + page / 4;
  MemoryBudget b;
  b.sparse_indexer = true;
  b.page_size = page;
  b.sliding_window = W;
  b.sliding_layer_count = L;  // every layer keeps the window (full_pool_requests then bounds by the SWA pool too)
  b.indexer_layers = n4;
  b.c4_layers = n4;
  b.c128_layers = n128;
  b.kv_layers = fig("kv_layers", "KV layers", L + m.mtp_layers, "layers",
                    fmt::format("layers + mtp_layers = {} + {} (every layer keeps the window; {} C4, {} C128)", L,
                                m.mtp_layers, n4, n128));
  b.latent_row_bytes = f.kv_row_bytes;
  b.latent_row_bytes.key = "latent_row_bytes";
  b.indexer_key_bytes = f.indexer_key_bytes;
  b.full_cell_bytes = f.bytes_per_full_token;
  b.full_cell_bytes.key = "full_cell_bytes";
  b.full_cell_bytes.label = "bytes per full token, full KV";
  b.hisparse_cell_bytes = h.bytes_per_full_token;
  b.hisparse_cell_bytes.key = "hisparse_cell_bytes";
  b.hisparse_cell_bytes.label = "bytes per full token, HiSparse";
  for (auto [dst, src] : {std::pair{&b.hbm_bytes, &f.hbm.hbm_bytes}, {&b.weights_per_gpu_bytes, &f.hbm.weights_per_gpu_bytes},
                          {&b.activation_reserve_bytes, &f.hbm.activation_reserve_bytes},
                          {&b.kv_budget_bytes, &f.hbm.kv_budget_bytes},
                          {&b.reserved_decode_tokens, &f.hbm.reserved_decode_tokens}})
    *dst = *src;
  b.c128_state_fixed_bytes = f.c128_state_fixed_bytes;
  auto renamed = [](Figure x, const char* key, const char* label) {
    x.key = key;
    x.label = label;
    return x;
  };
  b.full_pool_tokens = renamed(f.full_tokens, "full_pool_tokens", "full pool, full KV (max_total_num_tokens)");
  b.swa_pool_tokens = renamed(f.swa_tokens, "swa_pool_tokens", "sliding-window pool, full KV");
  b.logical_pool_tokens = renamed(h.full_tokens, "logical_pool_tokens", "full (logical) pool, HiSparse");
  b.hisparse_swa_pool_tokens = renamed(h.swa_tokens, "hisparse_swa_pool_tokens", "sliding-window pool, HiSparse");
  b.device_pool_tokens = renamed(h.c4_device_entries, "device_pool_tokens", "C4 device pool, HiSparse (entries)");
  b.host_pool_tokens = renamed(h.c4_host_entries, "host_pool_tokens", "C4 host pool (entries)");
  b.host_pool_bytes_per_gpu = renamed(h.c4_host_bytes, "host_pool_bytes_per_gpu", "host pool bytes per GPU");
  const int gpus_node = std::min(d.decode.gpus, s.hardware.gpus_per_node);
  const double host_node = h.c4_host_bytes.value * gpus_node;
  b.host_pool_bytes_per_node = fig("host_pool_bytes_per_node", "host pools per decode node", host_node, "B",
                                   fmt::format("host_pool_bytes_per_gpu × GPUs per node = {} × {}",
                                               num(h.c4_host_bytes.value), gpus_node));
  b.host_dram_bytes = fig("host_dram_bytes", "host DRAM per decode node", d.host_dram_bytes, "B", "deployment host_dram_bytes");
  b.host_dram_left_bytes = fig("host_dram_left_bytes", "host DRAM left after host pools", d.host_dram_bytes - host_node,
                               "B", fmt::format("host_dram − host_pools_per_node = {} − {}", num(d.host_dram_bytes),
                                                num(host_node)));
  const auto c4_dev = static_cast<int64_t>(h.c4_device_entries.value);
  b.device_latent_pool_bytes = fig("device_latent_pool_bytes", "C4 device pool bytes", static_cast<double>(c4_dev) * n4 * kv,
                                   "B", fmt::format("c4_device × c4_layers × kv = {} × {} × {}", c4_dev, n4, kv));
  b.device_buffer_tokens = fig("device_buffer_tokens", "device buffer per request (C4 entries)", static_cast<double>(Q),
                               "entries", fmt::format("device_buffer_size + page / 4 = {} + {}", H, page / 4));
  b.device_buffer_bytes = fig("device_buffer_bytes", "device buffer bytes per request",
                              static_cast<double>(Q) * n4 * kv, "B",
                              fmt::format("(H + page / 4) × c4_layers × kv = {} × {} × {}", Q, n4, kv));
  b.max_buffers_per_device_pool = fig("max_buffers_per_device_pool", "full device buffers per C4 device pool",
                                      static_cast<double>(c4_dev / Q), "requests",
                                      fmt::format("floor(c4_device / (H + page / 4)) = floor({} / {})", c4_dev, Q));

  // Per request: what stays on the GPU in both modes (the window of every layer, the C128 entries, the C4 indexer
  // keys, the C4 compress-state rows of its window pages, its slot's C128 states) and the C4 entries, all on the
  // GPU (full KV) or in the buffer with the rest on the host (HiSparse).
  const int64_t state4 = static_cast<int64_t>(f.c4_state_bytes.value + f.c4_indexer_state_bytes.value);
  const auto ring4 = static_cast<int64_t>(f.c4_state_ring.value), ring128 = static_cast<int64_t>(f.c128_state_ring.value);
  const auto state128 = static_cast<int64_t>(f.c128_state_bytes.value);
  for (int64_t n : seq_lens) {
    SeqLenBudget q;
    q.seq_len = n;
    const Dsv4RequestLimits lf = dsv4_request_limits(b, n, false), lh = dsv4_request_limits(b, n, true);
    const int64_t e = lf.c4_entries, kept = lf.swa_tokens, paged = round_up_to_page(n, page), e128 = paged / 128;
    const double fixed = static_cast<double>(kept) * L * kv + static_cast<double>(e128) * n128 * kv;
    const double states = static_cast<double>(kept / W * ring4 * state4 * n4 + ring128 * state128 * n128);
    const std::string fixed_formula = fmt::format(
        "swa × layers × kv + paged / 128 × c128_layers × kv + states = {} × {} × {} + {} × {} × {} + ({} / {} × {} × {} "
        "× {} + {} × {} × {})", kept, L, kv, e128, n128, kv, kept, W, ring4, state4, n4, ring128, state128, n128);
    q.swa_tokens = fig("swa_tokens", "tokens kept in the window", static_cast<double>(kept), "tokens",
                       fmt::format("paged(min(seq_len, window + page)) = paged(min({}, {} + {}))", n, W, page));
    q.full_latent_bytes = fig("full_latent_bytes", "C4 entries", static_cast<double>(e) * n4 * kv, "B",
                              fmt::format("paged / 4 × c4_layers × kv = {} × {} × {}", e, n4, kv));
    q.full_indexer_bytes = fig("full_indexer_bytes", "C4 indexer keys", static_cast<double>(e) * n4 * idx, "B",
                               fmt::format("paged / 4 × c4_layers × indexer = {} × {} × {}", e, n4, idx));
    q.full_kv_bytes = fig("full_kv_bytes", "full KV (all pools)",
                          q.full_latent_bytes.value + q.full_indexer_bytes.value + fixed + states, "B",
                          fmt::format("C4 + indexer + device-only pools = {} + {} + ({})",
                                      num(q.full_latent_bytes.value), num(q.full_indexer_bytes.value), fixed_formula));
    q.hisparse_hbm_bytes = fig("hisparse_hbm_bytes", "HiSparse HBM (C4 buffer + device-only pools)",
                               static_cast<double>(lh.device_slots) * n4 * kv + q.full_indexer_bytes.value + fixed + states,
                               "B", fmt::format("c4_slots × c4_layers × kv + indexer + device-only pools = {} × {} × {} + {} + {}",
                                                lh.device_slots, n4, kv, num(q.full_indexer_bytes.value),
                                                num(fixed + states)));
    q.hisparse_host_bytes = fig("hisparse_host_bytes", "HiSparse host (C4 entries)", q.full_latent_bytes.value, "B",
                                q.full_latent_bytes.formula);
    set_max_requests(q, d, lf.hbm, lf.hbm_formula, std::min({lh.hbm, lh.logical, lh.host}),
                     fmt::format("min({}, {}, {})", lh.hbm_formula, lh.logical_formula, lh.host_formula));
    b.per_seq_len.push_back(q);
  }
  return b;
}

}  // namespace hisparse

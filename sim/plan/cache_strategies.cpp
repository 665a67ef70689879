// @brief Cache strategies side by side (see cache_strategies.h; definitions and formulas in docs/capacity.md,
// "Cache strategies"). Symbols as docs/capacity.md: L kv_layers, Li indexer_layers, row latent row bytes, idx indexer key bytes,
// paged(n) = ⌈n / page⌉ × page, full_pool = full-KV max_total_num_tokens, K = the deployment's top_k.
//
// Per request at context n, per strategy:
//   full KV      — the plan's full-KV row, copied: HBM n × (L × row + Li × idx); attends min(n, model top_k).
//   HiSparse     — the plan's HiSparse row, copied: HBM device buffer + indexer keys of all n; host n × L × row;
//                  PCIe misses × row (H2D) + L × row (D2H backup of the newest token) per step.
//   eviction E   — SnapKV / PyramidKV: after prefill only the kept = min(n, E) tokens stay, latent AND indexer key
//                  (the model's DSA indexer keeps scoring what is kept, so the model runs unchanged on the kept set);
//                  HBM kept × (L × row + Li × idx), no host memory, no PCIe; indexes kept and attends min(kept, top_k):
//                  the full-KV step at n = kept. Limits: hbm ⌊(full_pool + R) / (paged(kept) + R)⌋ (R: requests_in_pool), cap, SLO.
//   masking      — OmniKV: every token stays in HBM (memory exactly as full KV); attention reads only the top-K
//                  selected rows and the indexer scores all n: the full-KV step with the model's top_k set to the
//                  deployment's K = HiSparse's step without swap-in, miss copy or backup. No host memory, no PCIe.
//   compression  — DeltaKV: the S sink and R recent tokens' rows in full precision, the other n − min(n, S + R)
//                  latent rows compressed by c (row / c bytes each); indexer keys of all n uncompressed (the DSA
//                  indexer still scores every token). HBM L × (f × row + m × row / c) + Li × n × idx, f = min(n, S+R),
//                  m = n − f. Step = the full-KV step at n plus the reconstruction: per compressed row attended
//                  (at most min(min(n, top_k), m): assumed every attended row may be compressed, the upper bound)
//                  and layer, `reconstruct_bytes` of HBM traffic at the hardware's hbm_bytes_per_s. The hbm limit
//                  is ⌊full_pool × full_cell / per_request(paged(n))⌋: the full-KV pool's bytes over the request's.
#include "sim/plan/cache_strategies.h"
#include "sim/plan/cache_strategy_rows.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/json_writer.h"
#include "core/io/output_file.h"
#include "sim/calibration/deltakv_calibration.h"
#include "sim/plan/capacity_plan.h"
#include "sim/plan/plan_report.h"
#include "traces/json_value.h"

namespace hisparse::sim {

StrategyRow from_plan(const PlanRow& r, const std::string& key, const std::string& name, const std::string& def) {
  StrategyRow o;
  o.key = key;
  o.name = name;
  o.definition = def;
  o.seq_len = r.seq_len;
  o.hbm_per_request = r.hbm_per_request.value;
  o.host_per_request = r.host_per_request.value;
  o.hbm_formula = r.hbm_per_request.formula;
  o.max_per_rank = r.max_per_rank;
  o.max_concurrency = r.max_concurrency;
  o.binding_limit = r.binding_limit;
  o.tpot_ms = r.at_max.tpot_ns * 1e-6;
  o.decode_tokens_per_s = r.decode_tokens_per_s;
  for (const auto& l : r.limits) {
    if (l.key == "hbm") o.hbm_limit_per_rank = l.per_rank;
    if (l.key == "slo") o.slo_limit_per_rank = l.per_rank;
  }
  return o;
}

void set_limits(StrategyRow& o, const CapacityPlan& p, int64_t hbm_limit, const std::string& hbm_formula,
                const std::function<SimTime(int64_t)>& step_ns, const std::function<double(int64_t)>& tokens_per_s) {
  const DeploymentSpec& d = p.scenario.deployment;
  const SimTime slo = static_cast<SimTime>(std::llround(d.tpot_slo_ms * 1e6));
  std::vector<PlanLimit> limits = unset_limits();
  if (d.max_running_requests > 0) find_limit(limits, "max_running_requests").per_rank = d.max_running_requests;
  find_limit(limits, "hbm").per_rank = hbm_limit;
  find_limit(limits, "hbm").formula = hbm_formula;
  o.hbm_limit_per_rank = hbm_limit;
  o.hbm_formula = hbm_formula;
  o.slo_limit_per_rank = largest_fitting(p.options.batch_cap, [&](int64_t B) { return step_ns(B) <= slo; });
  if (!p.options.memory_only) find_limit(limits, "slo").per_rank = o.slo_limit_per_rank;
  const PlanLimit& bind = binding_limit(limits);
  o.binding_limit = bind.key;
  o.max_per_rank = bind.per_rank;
  o.max_concurrency = o.max_per_rank * p.layout.ranks;
  o.tpot_ms = o.max_per_rank > 0 ? static_cast<double>(step_ns(o.max_per_rank)) * 1e-6 : 0;
  o.decode_tokens_per_s = o.max_per_rank > 0 ? tokens_per_s(o.max_per_rank) : 0;
}

namespace {

const traces::JsonValue* find_row(const traces::JsonValue& doc, const std::string& selector, int64_t k) {
  const traces::JsonValue* rows = doc.find("rows");
  if (!rows || rows->kind != traces::JsonValue::Kind::kArray) return nullptr;
  for (const auto& r : rows->items) {
    const auto* sel = r.find("selector");
    const auto* tk = r.find("top_k");
    const auto* layer = r.find("layer");
    const auto* rec = r.find("recall");
    if (!sel || !tk || !layer || !rec || sel->kind != traces::JsonValue::Kind::kString) continue;
    if (sel->text != selector || !tk->is_integer || tk->integer != k) continue;
    if (layer->kind != traces::JsonValue::Kind::kString || layer->text != "all") continue;
    if (rec->kind != traces::JsonValue::Kind::kNumber) continue;
    return &r;
  }
  return nullptr;
}

std::string available_ks(const traces::JsonValue& doc, const std::string& selector) {
  std::vector<int64_t> ks;
  if (const auto* rows = doc.find("rows"); rows && rows->kind == traces::JsonValue::Kind::kArray)
    for (const auto& r : rows->items) {
      const auto* sel = r.find("selector");
      const auto* tk = r.find("top_k");
      if (sel && tk && sel->text == selector && tk->is_integer &&
          std::find(ks.begin(), ks.end(), tk->integer) == ks.end())
        ks.push_back(tk->integer);
    }
  if (ks.empty()) return "none";
  std::string s;
  for (int64_t k : ks) s += fmt::format("{}{}", s.empty() ? "" : ",", k);
  return s;
}

}  // namespace

const std::vector<std::string>& strategy_keys() {
  static const std::vector<std::string> keys = {"full", "hisparse", "eviction", "masking", "compression"};
  return keys;
}

StrategyRecall strategy_recall(const std::string& key, const std::string& json, const std::string& source,
                               int64_t top_k, int64_t eviction_budget, int64_t recall_top_k) {
  StrategyRecall r;
  if (key == "full") {
    r.known = true;
    r.value = 1.0;
    r.text = "1 (by definition: every row kept, the model's own selection over all of them)";
    return r;
  }
  if (key == "compression") {
    r.text = "not measured (the select study has no compressed-key selector)";
    return r;
  }
  if (json.empty()) {
    r.text = "not measured (no --recall-from select.json)";
    return r;
  }
  const traces::JsonValue doc = traces::parse_json(json, source);
  std::string selector = "oracle";
  int64_t k = top_k;
  if (key == "eviction") {
    selector = "sink-recent";
    k = eviction_budget;
  } else if (key != "hisparse" && key != "masking") {
    throw_error("plan: unknown cache strategy '{}'", key);
  }
  if (recall_top_k > 0) k = recall_top_k;
  const traces::JsonValue* row = find_row(doc, selector, k);
  if (!row) {
    r.text = fmt::format("not measured ({} has no {} row at K={}; K there: {})", source, selector, k,
                         available_ks(doc, selector));
    return r;
  }
  r.known = true;
  r.value = row->find("recall")->number;
  r.text = fmt::format("{:.4f} ({}, K={}, {})", r.value, selector, k, source);
  if (key != "eviction")
    if (const traces::JsonValue* ix = find_row(doc, "indexer", k))
      r.text += fmt::format("; untrained indexer stand-in {:.4f}", ix->find("recall")->number);
  return r;
}

namespace {

// The reconstruction work of the compression strategy per compressed row attended per layer: --reconstruct-bytes, the
// hardware's DeltaKV calibration, or the assumed read + write of a row.
void set_reconstruction(StrategyTable& t, const Scenario& s, const StrategyOptions& opt, double row) {
  if (!(opt.compression_ratio >= 1)) throw_error("plan: --compression-ratio {} (expected >= 1)", opt.compression_ratio);
  if (opt.compression_sinks < 0 || opt.compression_recent < 0)
    throw_error("plan: --compression-sinks {} / --compression-recent {} (expected >= 0)", opt.compression_sinks,
                opt.compression_recent);
  t.reconstruct_assumed = false;
  if (opt.reconstruct_bytes >= 0) {
    t.reconstruct_bytes = opt.reconstruct_bytes;
    t.reconstruct_label = "--reconstruct-bytes";
  } else if (!s.hardware.deltakv_calibration.empty()) {
    // Measured time per row × the measuring GPU's HBM rate = the traffic that takes as long; scaled to this
    // deployment's row by bytes (the kernel streams each row's residual in and its bf16 row out).
    const DeltaKvCalibration cal = load_deltakv_calibration(s.hardware.deltakv_calibration);
    const double measured_row = 2.0 * static_cast<double>(cal.dim);
    t.reconstruct_bytes = cal.effective_bytes_per_row() * row / measured_row;
    t.reconstruct_label = fmt::format(
        "calibrated: {} ({}, {}): {:.2f} ns per {}-element row with {} references = {:.0f} B at its {:.3g} TB/s, "
        "scaled by row bytes {:.0f} / {:.0f}",
        cal.path, cal.device, cal.date, cal.ns_per_row, cal.dim, cal.refs, cal.effective_bytes_per_row(),
        cal.hbm_bytes_per_s * 1e-12, row, measured_row);
  } else {
    t.reconstruct_assumed = true;
    t.reconstruct_bytes = row / opt.compression_ratio + row;
    t.reconstruct_label = "assumed: row / c + row, read compressed + write full precision";
  }
  if (!(s.hardware.hbm_bytes_per_s > 0) && t.reconstruct_bytes > 0)
    throw_error("{}: hardware hbm_bytes_per_s must be > 0 to price the compression's reconstruction", s.source);
}

// Full KV and HiSparse: the plan's own rows.
void plan_strategy_rows(const StrategyContext& c, const PlanRow& fr, const PlanRow& hr) {
  const MemoryBudget& b = c.b;
  const int64_t n = fr.seq_len;
  StrategyRow f = from_plan(fr, "full", "full KV",
                            c.compressed ? "every C4 and C128 entry, C4 indexer key and window row in HBM"
                            : b.sparse_indexer ? "every token's latent and indexer key in HBM"
                            : b.sliding_layer_count > 0 ? "every token's K and V in HBM (sliding layers: their window)"
                                                        : "every token's K and V in HBM");
  f.attended_rows = c.attended(n, c.model_k);
  f.indexed_rows = static_cast<double>(c.entries(n));
  f.recall = c.recall("full");
  c.t.rows.push_back(f);
  if (!b.sparse_indexer) return;
  StrategyRow h = from_plan(hr, "hisparse", "HiSparse",
                            fmt::format("device buffer H={} + indexer keys in HBM, {} in host DRAM, LRU swap-in",
                                        c.d.hisparse.device_buffer_size, c.compressed ? "C4 entries" : "latent"));
  h.pcie_bytes_per_step = c.compressed ? dsv4_hisparse_pcie_bytes(c, hr) : hr.misses_per_request_step * c.row + c.L * c.row;
  h.attended_rows = c.attended(n, c.K);
  h.indexed_rows = static_cast<double>(c.entries(n));
  h.recall = c.recall("hisparse");
  c.t.rows.push_back(h);
}

// Physical eviction at budget E: the full-KV request and step at n = min(n, E).
void eviction_strategy_row(const StrategyContext& c, int64_t n) {
  const int64_t kept = std::min(n, c.t.eviction_budget);
  StrategyRow e;
  e.key = "eviction";
  e.name = fmt::format("eviction E={}", c.t.eviction_budget);
  e.definition = "SnapKV/PyramidKV: only min(n, E) tokens (latent + indexer key) stay, in HBM; the rest dropped";
  e.seq_len = n;
  e.attended_rows = c.attended(kept, c.model_k);
  e.indexed_rows = c.b.sparse_indexer ? static_cast<double>(c.entries(kept)) : 0;
  std::string e_formula;
  int64_t e_limit = 0;
  if (c.compressed) {
    e_limit = dsv4_eviction_memory(c, kept, e, &e_formula);
  } else {
    e.hbm_per_request = full_kv_request_bytes(c.b, kept);
    e_limit = round_up_to_page(kept, c.page) > 0 ? full_pool_requests(c.b, kept, &e_formula) : 0;
  }
  e_formula += " at min(n, E)";
  set_limits(e, c.p, e_limit, e_formula, [&](int64_t B) { return c.full.step(B, kept).tpot_ns; },
             [&](int64_t B) { return c.full.step(B, kept).tokens_per_s; });
  e.recall = c.recall("eviction");
  c.t.rows.push_back(e);
}

// Logical masking: memory as full KV, the step of a top-K attention.
void masking_strategy_row(const StrategyContext& c, const PlanRow& fr) {
  const int64_t n = fr.seq_len;
  StrategyRow m;
  m.key = "masking";
  m.name = "logical masking";
  m.definition = "OmniKV: every token stays in HBM (as full KV); attention reads only the top-K selected rows";
  m.seq_len = n;
  m.hbm_per_request = fr.hbm_per_request.value;
  m.attended_rows = c.attended(n, c.K);
  m.indexed_rows = c.b.sparse_indexer ? static_cast<double>(c.entries(n)) : 0;
  std::string m_formula;
  const int64_t m_limit = full_pool_requests(c.b, n, &m_formula);
  set_limits(m, c.p, m_limit, m_formula + " (as full KV)", [&](int64_t B) { return c.masked.step(B, n).tpot_ns; },
             [&](int64_t B) { return c.masked.step(B, n).tokens_per_s; });
  m.recall = c.recall("masking");
  c.t.rows.push_back(m);
}

// The HBM limit of hybrid compression for a token-pool model: the full pool's bytes over the request's (SWA: the
// full-layer pool holds the compressed rows, the sliding pool the windows).
int64_t compression_limit(const StrategyContext& c, int64_t paged, const std::function<double(int64_t)>& full_layer_bytes,
                          double per_req_paged, std::string* formula) {
  const MemoryBudget& b = c.b;
  const auto full_pool = static_cast<int64_t>(b.full_pool_tokens.value);
  const double full_cell = b.full_cell_bytes.value;
  if (b.sliding_layer_count > 0 && !c.compressed) {
    const double full_pool_bytes = static_cast<double>(full_pool) * b.full_layers * c.row;
    const int64_t swa_slots = round_up_to_page(sliding_tokens_kept(b, paged), c.page);
    const auto swa_pool = static_cast<int64_t>(b.swa_pool_tokens.value);
    *formula = fmt::format("min(floor(full_pool × full_layers × kv_row / full-layer bytes(paged n)), floor(swa_pool / "
                           "paged window)) = min(floor({} × {} × {} / {}), floor({} / {}))",
                           full_pool, b.full_layers, c.row, full_layer_bytes(paged), swa_pool, swa_slots);
    return std::min(static_cast<int64_t>(std::floor(full_pool_bytes / full_layer_bytes(paged))), swa_pool / swa_slots);
  }
  const double pool_bytes = static_cast<double>(full_pool) * full_cell;
  // The PD decode reserve (requests_in_pool) in bytes: reserved tokens at the full cell.
  const double reserve_bytes = b.reserved_decode_tokens.value * full_cell;
  *formula = reserve_bytes > 0
                 ? fmt::format("floor((full_pool × full_cell + reserved × full_cell) / (per_request(paged n) + reserved × "
                               "full_cell)) = floor(({} × {} + {}) / ({} + {}))",
                               full_pool, full_cell, reserve_bytes, per_req_paged, reserve_bytes)
                 : fmt::format("floor(full_pool × full_cell / per_request(paged n)) = floor({} × {} / {})", full_pool,
                               full_cell, per_req_paged);
  return per_req_paged > 0
             ? static_cast<int64_t>(std::floor((pool_bytes + reserve_bytes) / (per_req_paged + reserve_bytes)))
             : 0;
}

// Hybrid compression (DeltaKV): S + R rows full precision, the rest at 1 / c, plus the reconstruction per step.
void compression_strategy_row(const StrategyContext& c, int64_t n) {
  const MemoryBudget& b = c.b;
  const int64_t S = c.opt.compression_sinks, R = c.opt.compression_recent;
  const double cr = c.opt.compression_ratio;
  // Full-attention layers compress; a sliding layer already keeps only its window (full precision).
  const double Lf = b.full_layers, Ls = b.sliding_layer_count;
  std::function<double(int64_t)> full_layer_bytes = [&](int64_t tokens) {
    const int64_t fp = std::min(tokens, S + R);
    return Lf * (static_cast<double>(fp) * c.row + static_cast<double>(tokens - fp) * c.row / cr) +
           b.indexer_layers * static_cast<double>(tokens) * c.idx;
  };
  std::function<double(int64_t)> bytes_at = [&](int64_t tokens) {
    return full_layer_bytes(tokens) + Ls * static_cast<double>(sliding_tokens_kept(b, tokens)) * c.row;
  };
  // DeepSeek-V4: only the C4 entries compress (sim/plan/dsv4_cache_strategies.cpp).
  double compressed_layers = Lf;
  if (c.compressed) {
    bytes_at = [&](int64_t tokens) { return dsv4_compressed_request_bytes(c, tokens); };
    compressed_layers = b.c4_layers;
  }
  StrategyRow z;
  z.key = "compression";
  z.name = fmt::format("compression c={}", cr);
  z.definition = fmt::format("DeltaKV: {} sink + {} recent {} full precision, the rest at 1/c of a row; indexer keys "
                             "of all n", S, R, c.compressed ? "tokens' C4 entries" : "rows");
  z.seq_len = n;
  z.hbm_per_request = bytes_at(n);
  z.attended_rows = c.attended(n, c.model_k);
  z.indexed_rows = static_cast<double>(c.entries(n));
  const double compressed_attended = std::min(z.attended_rows, static_cast<double>(c.entries(n - std::min(n, S + R))));
  z.reconstruct_bytes_per_step = compressed_attended * compressed_layers * c.t.reconstruct_bytes;
  const int64_t paged = round_up_to_page(n, c.page);
  std::string z_formula;
  const int64_t zlimit = compression_limit(c, paged, full_layer_bytes, bytes_at(paged), &z_formula);
  const double hbm_rate = c.s.hardware.hbm_bytes_per_s;
  auto z_step = [&](int64_t B) {
    const SimTime rec = c.t.reconstruct_bytes > 0 ? static_cast<SimTime>(std::llround(
                                                        static_cast<double>(B) * z.reconstruct_bytes_per_step / hbm_rate * 1e9))
                                                  : SimTime{0};
    return c.full.step(B, n).tpot_ns + rec;
  };
  set_limits(z, c.p, zlimit, z_formula, z_step, [&](int64_t B) {
    const SimTime st = z_step(B);
    return st > 0 ? static_cast<double>(B) * c.p.layout.ranks / (static_cast<double>(st) * 1e-9) : 0.0;
  });
  z.recall = c.recall("compression");
  c.t.rows.push_back(z);
}

// The notes under the table: what E and K stand for, sliding layers, the compression's terms, recall's K.
void strategy_notes(const StrategyContext& c) {
  const StrategyTable& tt = c.t;
  std::vector<std::string>& notes = c.t.notes;
  const MemoryBudget& b = c.b;
  const StrategyOptions& opt = c.opt;
  if (c.compressed)
    notes.push_back(dsv4_strategy_note(c));
  else if (b.sparse_indexer)
    notes.push_back(fmt::format(
        "eviction budget E = {} ({}): the rows DSA attends per step, so eviction, masking and HiSparse attend the same "
        "number of rows and differ in memory and in what they can still select",
        tt.eviction_budget, opt.eviction_budget > 0 ? "--eviction-budget" : "default: the deployment's top_k"));
  else
    notes.push_back(fmt::format(
        "{}: HiSparse {}. Eviction budget E = {} and masking K = {} ({}) are inputs, not a selection this model makes: "
        "a {} model attends every cached row, so eviction and masking stand for a page- or token-level selector "
        "(Quest, SnapKV) added on top; their recall needs a select study of this model",
        c.s.model.name, c.p.hisparse_not_applicable, tt.eviction_budget, c.K,
        opt.eviction_budget > 0 ? "--eviction-budget" : "default: the deployment's hisparse.top_k, unused by the model",
        b.attention));
  if (b.sliding_layer_count > 0 && !c.compressed)
    notes.push_back(fmt::format(
        "sliding layers ({} of {}) keep at most window + page = {} tokens under every strategy; eviction and "
        "compression act on the {} full-attention layers",
        b.sliding_layer_count, b.full_layers + b.sliding_layer_count, b.sliding_window + b.page_size, b.full_layers));
  notes.push_back(fmt::format(
      "compression: S = {} sinks, R = {} recent, ratio c = {}; reconstruction {:.0f} B of HBM traffic per compressed row "
      "attended per layer ({}), at hbm_bytes_per_s {:.3g} TB/s, added to the full-KV step",
      opt.compression_sinks, opt.compression_recent, opt.compression_ratio, tt.reconstruct_bytes, tt.reconstruct_label,
      c.s.hardware.hbm_bytes_per_s * 1e-12));
  if (opt.recall_top_k > 0 && !opt.recall_json.empty())
    notes.push_back(fmt::format(
        "recall read at K = {} of {} (--recall-top-k) for every strategy, not at this deployment's K = {} / E = {}: "
        "a figure of the recorded model at that K, not of this deployment",
        opt.recall_top_k, tt.recall_source, c.K, tt.eviction_budget));
  if (c.model_k > 0 && c.model_k == c.K)
    notes.push_back(fmt::format(
        "the model's attention is already top-{} sparse ({}): full KV attends min({}, {}) rows, so logical masking "
        "with the same K computes what full KV computes (same row) — it differs only for a dense-attention model or "
        "another --top-k",
        c.K, c.compressed ? "the C4 indexer" : "DSA", c.compressed ? "n / 4" : "n", c.K));
}

}  // namespace

StrategyContext::StrategyContext(const CapacityPlan& plan, const StrategyOptions& options, StrategyTable& table,
                                 const StepTimeModel& full_model, const StepTimeModel& masked_model)
    : p(plan), opt(options), t(table), s(plan.scenario), d(plan.scenario.deployment), b(plan.budget),
      full(full_model), masked(masked_model) {
  page = d.page_size;
  L = b.kv_layers.value;
  row = b.latent_row_bytes.value;
  idx = b.indexer_key_bytes.value;
  K = d.hisparse.top_k;
  model_k = s.model.top_k > 0 ? s.model.top_k : 0;
  compressed = s.model.is_compressed();
}

int64_t StrategyContext::entries(int64_t n) const { return full.estimator().entries(n); }

double StrategyContext::attended(int64_t n, int64_t k) const {
  const int64_t e = entries(n);
  return static_cast<double>(k > 0 ? std::min(e, k) : e);
}

StrategyRecall StrategyContext::recall(const std::string& key) const {
  return strategy_recall(key, opt.recall_json, t.recall_source, K, t.eviction_budget, opt.recall_top_k);
}

StrategyTable compute_cache_strategies(const CapacityPlan& p, const StrategyOptions& opt) {
  StrategyTable t;
  t.options = opt;
  const Scenario& s = p.scenario;
  set_reconstruction(t, s, opt, p.budget.latent_row_bytes.value);
  t.recall_source = opt.recall_file.empty() ? "none" : opt.recall_file;
  const StepTimeModel full(s, p.options.cost, false, nullptr);
  Scenario sm = s;
  sm.model.top_k = static_cast<int>(s.deployment.hisparse.top_k);
  const StepTimeModel masked(sm, p.options.cost, false, nullptr);
  const StrategyContext c(p, opt, t, full, masked);
  // E by default: the tokens the model's selection covers (DSA: K tokens; DeepSeek-V4: K C4 entries of 4 tokens).
  t.eviction_budget = opt.eviction_budget > 0 ? opt.eviction_budget : c.K * full.estimator().cost().compress_ratio();
  for (size_t i = 0; i + 1 < p.rows.size(); i += 2) {
    const PlanRow &fr = p.rows[i], &hr = p.rows[i + 1];
    plan_strategy_rows(c, fr, hr);
    eviction_strategy_row(c, fr.seq_len);
    masking_strategy_row(c, fr);
    compression_strategy_row(c, fr.seq_len);
  }
  strategy_notes(c);
  return t;
}

namespace {

std::string recall_cell(const StrategyRecall& r) { return r.known ? fmt::format("{:.4f}", r.value) : "not measured"; }

std::string dash(double b) { return b > 0 ? plan_bytes(b) : "-"; }

}  // namespace

std::string strategies_to_text(const StrategyTable& t) {
  std::string o = "\n== cache strategies (per request; HBM, host, PCIe, concurrency, tokens/s modelled by this plan's "
                  "memory budget and step model; recall measured by `hisparse select` where a file is given)\n";
  o += fmt::format("recall from: {}\n", t.recall_source);
  int64_t last = -1;
  for (const StrategyRow& r : t.rows) {
    if (r.seq_len != last) {
      last = r.seq_len;
      o += fmt::format("-- seq_len {}\n{:<20} {:>10} {:>10} {:>12} {:>8} {:>11} {:>9} {:<12} {:>9} {:>9} {:>12}\n",
                       r.seq_len, "strategy", "HBM/req", "host/req", "PCIe/step", "attended", "max_concur", "per_rank",
                       "binding", "TPOT ms", "tok/s", "recall");
    }
    o += fmt::format("{:<20} {:>10} {:>10} {:>12} {:>8.0f} {:>11} {:>9} {:<12} {:>9.2f} {:>9.0f} {:>12}\n", r.name,
                     plan_bytes(r.hbm_per_request), dash(r.host_per_request), dash(r.pcie_bytes_per_step), r.attended_rows,
                     plan_int(r.max_concurrency), r.max_per_rank, r.binding_limit, r.tpot_ms, r.decode_tokens_per_s,
                     recall_cell(r.recall));
  }
  o += "recall per strategy:\n";
  last = -1;
  for (const StrategyRow& r : t.rows)
    if (r.seq_len == t.rows.front().seq_len) o += fmt::format("  {:<20} {}\n", r.name, r.recall.text);
  for (const auto& n : t.notes) o += "note: " + n + "\n";
  return o;
}

void strategies_to_json(JsonWriter& j, const StrategyTable& t) {
  using Layout = JsonWriter::Layout;
  // Numbers in the planner's style (plan_json.cpp): whole values as integers, others with 10 significant digits.
  j.begin_object(Layout::kInline).member("eviction_budget", t.eviction_budget);
  j.member("compression_sinks", t.options.compression_sinks).member("compression_recent", t.options.compression_recent);
  j.key("compression_ratio").whole_or_general(t.options.compression_ratio, 10);
  j.key("reconstruct_bytes").whole_or_general(t.reconstruct_bytes, 10);
  j.member("reconstruct_assumed", t.reconstruct_assumed).member("reconstruct_label", t.reconstruct_label);
  j.member("recall_source", t.recall_source);
  j.key("labels").begin_object(Layout::kInline).member("memory", "modelled").member("pcie", "modelled");
  j.member("concurrency", "modelled").member("tokens_per_s", "modelled");
  j.member("recall", "measured by hisparse select, or null = not measured").end_object();
  j.new_line().key("rows").begin_array();
  for (const StrategyRow& r : t.rows) {
    j.begin_object(Layout::kInline).member("seq_len", r.seq_len).member("strategy", r.key).member("name", r.name);
    j.member("definition", r.definition);
    j.key("hbm_per_request").whole_or_general(r.hbm_per_request, 10);
    j.key("host_per_request").whole_or_general(r.host_per_request, 10);
    j.key("pcie_bytes_per_step").whole_or_general(r.pcie_bytes_per_step, 10);
    j.key("attended_rows").whole_or_general(r.attended_rows, 10);
    j.key("indexed_rows").whole_or_general(r.indexed_rows, 10);
    j.key("reconstruct_bytes_per_step").whole_or_general(r.reconstruct_bytes_per_step, 10);
    j.member("hbm_limit_per_rank", r.hbm_limit_per_rank).member("slo_limit_per_rank", r.slo_limit_per_rank);
    j.member("max_per_rank", r.max_per_rank).member("max_concurrency", r.max_concurrency);
    j.member("binding_limit", r.binding_limit);
    j.key("tpot_ms").whole_or_general(r.tpot_ms, 10);
    j.key("decode_tokens_per_s").whole_or_general(r.decode_tokens_per_s, 10);
    j.member("hbm_formula", r.hbm_formula).key("recall");
    if (r.recall.known) j.whole_or_general(r.recall.value, 10); else j.null();
    j.member("recall_text", r.recall.text).end_object();
  }
  j.end_array().key("notes").begin_array(Layout::kInline);
  for (const std::string& n : t.notes) j.string(n);
  j.end_array().end_object();
}

}  // namespace hisparse::sim

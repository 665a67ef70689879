// @brief The capacity planner's arithmetic: per-request memory, each limit on concurrency with its formula, the
// binding one, throughput curves and the two sweeps.
#include "sim/plan/capacity_plan.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/dsv4_pool_budget.h"
#include "core/family/family_registry.h"
#include "sim/capacity/capacity.h"
#include "sim/cost/step/decode_cost_model.h"
#include "core/error.h"

namespace hisparse::sim {

namespace {

std::string num(double v) {
  if (std::fabs(v) >= 1e6 || v == std::floor(v)) return fmt::format("{}", static_cast<int64_t>(std::llround(v)));
  return fmt::format("{:.6g}", v);
}
std::string ms(SimTime t) { return fmt::format("{:.3f} ms", static_cast<double>(t) * 1e-6); }

// What one plan row needs besides the row's own sequence length.
struct RowContext {
  const Scenario& s;
  const MemoryBudget& b;
  const PlanOptions& o;
  RankLayout lay;
  double dram_per_gpu = 0;
};

std::string describe_step_past(const StepTimeModel& model, int64_t B, int64_t n) {
  const StepEstimate e = model.step(B, n);
  std::vector<std::pair<SimTime, const char*>> parts;
  for (int i = 0; i < kStepCostFieldCount; ++i) {
    const std::string name = kStepCostFields[i];
    if (name == "backup" || name == "prefetch_hidden") continue;  // off the critical path
    parts.emplace_back(step_cost_field(e.cost, i), kStepCostFields[i]);
  }
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out = fmt::format("at {} requests per rank the step takes {}:", B, ms(e.step_ns));
  for (size_t i = 0; i < 3 && i < parts.size() && parts[i].first > 0; ++i)
    out += fmt::format("{} {} {:.0f}%", i ? "," : "", parts[i].second,
                       100.0 * static_cast<double>(parts[i].first) / static_cast<double>(e.step_ns));
  return out;
}

// DeepSeek-V4: what a row prints of one request's memory and of the pools (the limits are the capacity model's).
void dsv4_row_memory(const RowContext& c, const SeqLenBudget& q, bool hs, PlanRow& r) {
  const MemoryBudget& b = c.b;
  const double idx = b.indexer_key_bytes.value;
  const int n4 = b.c4_layers;
  r.hbm_per_request = hs ? q.hisparse_hbm_bytes : q.full_kv_bytes;
  r.gpu_indexer_per_request = q.full_indexer_bytes;
  r.gpu_latent_per_request = Figure{"device_kv_bytes", "device KV", r.hbm_per_request.value - q.full_indexer_bytes.value,
                                    "B", "HBM per request less its C4 indexer keys (window, C4 on device, C128, states)"};
  const double indexer_pool = std::floor((hs ? b.logical_pool_tokens.value : b.full_pool_tokens.value) / 4) * n4 * idx;
  r.indexer_pool_bytes = indexer_pool;
  r.latent_pool_bytes = b.kv_budget_bytes.value - indexer_pool;
  r.host_per_request = hs ? q.hisparse_host_bytes
                          : Figure{"host_bytes_per_request", "host", 0, "B", "full KV keeps nothing in host memory"};
}

// What a row prints of one request's memory and of the pools as allocated (figures of the memory budget); the limits
// on concurrency come from the capacity model (sim/capacity/capacity.h).
void row_memory(const RowContext& c, const SeqLenBudget& q, bool hs, PlanRow& r) {
  if (c.b.model_family().compressed_pools()) return dsv4_row_memory(c, q, hs, r);
  const MemoryBudget& b = c.b;
  const int page = c.s.deployment.page_size;
  const int64_t n = q.seq_len;
  const int64_t paged = round_up_to_page(n, page);
  const int64_t L = static_cast<int64_t>(b.kv_layers.value);
  const double row = b.latent_row_bytes.value, idx = b.indexer_key_bytes.value;
  const int64_t Li = b.indexer_layers;  // top-k anchors + MTP layers (IndexShare)
  const int64_t H = c.s.deployment.hisparse.device_buffer_size;
  if (!hs) {
    r.hbm_per_request = q.full_kv_bytes;
    r.host_per_request = Figure{"host_bytes_per_request", "host", 0, "B", "full KV keeps nothing in host memory"};
    r.gpu_latent_per_request = q.full_latent_bytes;
    r.gpu_indexer_per_request = q.full_indexer_bytes;
    // The pools as allocated: one token of every KV layer per pool token (SWA: the sliding layers' own pool).
    const auto pool = static_cast<int64_t>(b.full_pool_tokens.value);
    r.latent_pool_bytes = static_cast<double>(pool) * b.full_layers * row +
                          b.swa_pool_tokens.value * b.sliding_layer_count * row;
    r.indexer_pool_bytes = static_cast<double>(pool) * Li * idx;
    return;
  }
  r.hbm_per_request = q.hisparse_hbm_bytes;
  r.host_per_request = q.hisparse_host_bytes;
  const int64_t slots = n <= H ? paged : H + page;
  r.gpu_latent_per_request = Figure{"device_buffer_bytes", "device buffer", static_cast<double>(slots) * L * row, "B",
                                    fmt::format("buffer_slots × kv_layers × latent_row_bytes = {} × {} × {}", slots, L, num(row))};
  r.gpu_indexer_per_request = Figure{"indexer_bytes", "indexer keys", static_cast<double>(n) * Li * idx, "B",
                                     fmt::format("seq_len × indexer_layers × indexer_key_bytes = {} × {} × {}", n, Li,
                                                 num(idx))};
  r.latent_pool_bytes = b.device_pool_tokens.value * L * row;
  r.indexer_pool_bytes = b.logical_pool_tokens.value * Li * idx;
}

PlanRow plan_row(const RowContext& c, const SeqLenBudget& q, KvMode mode, const StepTimeModel& model) {
  const MemoryBudget& b = c.b;
  const int64_t n = q.seq_len;
  const int64_t paged = round_up_to_page(n, c.s.deployment.page_size);
  const int64_t L = static_cast<int64_t>(b.kv_layers.value);
  const double row = b.latent_row_bytes.value, idx = b.indexer_key_bytes.value;
  const int64_t Li = b.indexer_layers;
  const bool hs = uses_host_pool(mode);
  PlanRow r;
  r.seq_len = n;
  r.mode = mode;
  row_memory(c, q, hs, r);
  CapacityOptions co;
  co.host_reserve_bytes = c.o.host_reserve_bytes;
  co.batch_cap = c.o.batch_cap;
  co.memory_only = c.o.memory_only;
  co.calibrated_swap_in = c.o.cost.swap_in_cost.calibrated;
  const Capacity cap = capacity_limits(c.s, b, ContextMix::single(n), mode, model, co);
  r.limits = cap.limits;
  r.binding_limit = cap.binding_limit;
  r.max_per_rank = cap.per_rank;
  r.misses_per_request_step = cap.misses_per_request_step;
  const int64_t slo_b = find_limit(r.limits, "slo").per_rank;
  if (!c.o.memory_only && slo_b < c.o.batch_cap) r.slo_note = describe_step_past(model, slo_b + 1, n);
  r.max_concurrency = r.max_per_rank * c.lay.ranks;
  r.at_max = model.step(r.max_per_rank, n);
  if (mode != KvMode::kFull) {
    r.decode_transfer = model.estimator().decode_transfer(r.at_max.misses);
    r.prefill_offload = model.estimator().prefill_offload(n);
  }
  r.decode_tokens_per_s = r.at_max.tokens_per_s;
  r.miss_fraction = r.misses_per_request_step > 0
                        ? r.misses_per_request_step / (static_cast<double>(model.estimator().attended(n) - 1) *
                                                       model.estimator().cost().offload_layers())
                        : 0;
  const double B = static_cast<double>(r.max_per_rank);
  if (c.b.model_family().compressed_pools()) {
    r.latent_used_bytes = B * r.gpu_latent_per_request.value;
    r.indexer_used_bytes = B * r.gpu_indexer_per_request.value;
    r.host_used_bytes_per_gpu = B * r.host_per_request.value;
  } else if (hs) {
    r.latent_used_bytes = B * r.gpu_latent_per_request.value;
    r.indexer_used_bytes = B * static_cast<double>(paged) * Li * idx;
    r.host_used_bytes_per_gpu = B * static_cast<double>(paged) * L * row;
  } else {
    r.latent_used_bytes = B * (full_kv_request_bytes(b, paged) - static_cast<double>(paged) * Li * idx);
    r.indexer_used_bytes = B * static_cast<double>(paged) * Li * idx;
  }
  return r;
}

/// The HiSparse row of a model without a sparse indexer: nothing to offload, every limit "not applicable".
PlanRow not_applicable_row(int64_t n, const std::string& why) {
  PlanRow r;
  r.seq_len = n;
  r.mode = KvMode::kHiSparse;
  r.limits = unset_limits();
  for (auto& l : r.limits) l.formula = why;
  r.binding_limit = kNotApplicable;
  for (Figure* f : {&r.hbm_per_request, &r.host_per_request, &r.gpu_latent_per_request, &r.gpu_indexer_per_request})
    *f = Figure{"not_applicable", "HiSparse", 0, "B", why};
  r.slo_note = why;
  return r;
}

int64_t memory_limit(const PlanRow& r, int64_t cap) {
  int64_t m = cap;
  for (const auto& l : r.limits)
    if (l.per_rank >= 0 && l.key != "pcie" && l.key != "slo") m = std::min(m, l.per_rank);
  return m;
}

ThroughputCurve make_curve(const PlanRow& r, const StepTimeModel& model, const PlanOptions& o, SimTime slo, int ranks) {
  ThroughputCurve c;
  c.seq_len = r.seq_len;
  c.mode = r.mode;
  c.memory_limit_per_rank = memory_limit(r, o.batch_cap);
  std::set<int64_t> bs;
  const int64_t top = std::max<int64_t>(1, c.memory_limit_per_rank);
  const int pts = std::max(2, o.curve_points);
  for (int i = 0; i < pts; ++i)
    bs.insert(std::max<int64_t>(1, std::llround(std::pow(static_cast<double>(top), static_cast<double>(i) / (pts - 1)))));
  for (int64_t extra : {r.max_per_rank, r.limits.back().per_rank, r.limits.back().per_rank + 1})
    if (extra >= 1 && extra <= top) bs.insert(extra);
  for (int64_t B : bs) {
    const StepEstimate e = model.step(B, r.seq_len);
    c.points.push_back(CurvePoint{B, B * ranks, e.tpot_ns * 1e-6, e.tokens_per_s, e.cost.h2d * 1e-6, e.tpot_ns <= slo});
  }
  return c;
}

RowContext make_context(const Scenario& s, const MemoryBudget& b, const PlanOptions& o) {
  return RowContext{s, b, o, rank_layout(s), host_dram_per_gpu(s, o.host_reserve_bytes)};
}

SweepRow sweep_row(const std::string& param, int64_t value, bool current, const PlanRow& r, const MemoryBudget& b) {
  SweepRow w;
  w.param = param;
  w.value = value;
  w.is_current = current;
  w.seq_len = r.seq_len;
  w.max_concurrency = r.max_concurrency;
  w.binding_limit = r.binding_limit;
  w.tpot_ms = r.at_max.tpot_ns * 1e-6;
  w.decode_tokens_per_s = r.decode_tokens_per_s;
  w.misses_per_request_step = r.misses_per_request_step;
  w.h2d_bytes_per_step = r.at_max.h2d_bytes;
  w.miss_fraction = r.miss_fraction;
  w.device_pool_tokens = static_cast<int64_t>(b.device_pool_tokens.value);
  w.logical_pool_tokens = static_cast<int64_t>(b.logical_pool_tokens.value);
  w.device_buffer_bytes = b.device_buffer_bytes.value;
  w.hbm_per_request = r.hbm_per_request.value;
  w.host_pool_bytes_per_node = b.host_pool_bytes_per_node.value;
  w.host_dram_left_bytes = b.host_dram_left_bytes.value;
  return w;
}

std::vector<int32_t> sorted_with(std::vector<int32_t> v, int32_t x) {
  v.push_back(x);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

std::vector<int32_t> default_buffer_sweep(const Scenario& s) {
  const int32_t K = s.deployment.hisparse.top_k;
  std::vector<int32_t> v;
  for (double f : {1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0}) v.push_back(static_cast<int32_t>(K * f));
  return sorted_with(v, s.deployment.hisparse.device_buffer_size);
}

std::vector<int32_t> default_ratio_sweep(const Scenario& s) {
  return sorted_with({1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20}, s.deployment.hisparse.host_to_device_ratio);
}

namespace {

// The warnings of a model with a sparse indexer: compressed attention, NVFP4, --limits memory, no KV budget, host
// pools over DRAM, a miss model read outside its range or never measured, a remote NUMA host pool, attention TP.
// A host layout other than the one SGLang's HiSparse allocates (layer_first, io_backend kernel:
// managers/hisparse_coordinator.py:79-86, :98-105 at 009e640a) is a what-if: say what it changes.
void add_host_layout_warning(CapacityPlan& p, const StepTimeModel& hs) {
  const HostPoolLayout layout = p.scenario.deployment.host_layout;
  p.warnings.push_back(fmt::format(
      "host_layout {}: SGLang's HiSparse allocates its host pool layer_first and copies with one kernel per call "
      "(hisparse_coordinator.py), so this is a what-if; {}",
      host_pool_layout_name(layout),
      copies_per_page(layout)
          ? fmt::format("io_backend direct copies each missed row of each layer, and each backed-up row, with its own "
                        "cudaMemcpyAsync at pcie.latency_ns {} ns (assumed) each (sim/cost/terms/transfer_granularity.h)",
                        hs.estimator().rank_scenario().hardware.pcie.latency_ns)
          : std::string("one kernel per call as layer_first, the same calls and bytes: no figure changes")));
}

void add_hisparse_warnings(CapacityPlan& p, const MissCurves& misses, const StepTimeModel& hs) {
  const Scenario& s = p.scenario;
  const DeploymentSpec& d = s.deployment;
  const PlanOptions& options = p.options;
  const int32_t H = d.hisparse.device_buffer_size;
  if (p.budget.model_family().compressed_pools())
    p.warnings.push_back(
        "DeepSeek-V4: HiSparse offloads the C4 entries (one per 4 tokens) of its C4 layers; the sliding window, the C128 "
        "pool, the C4 indexer keys and the compress states stay on the GPU. Misses: the miss model read at n / 4 "
        "entries (assumed: a C4 selection misses as a DSA selection over as many tokens); dynamic residency counts the "
        "C4 device pool in entries (a resident request holds paged(n) / 4, a demoted one H + page / 4)");
  if (d.kv_dtype == KvDtype::kNvfp4 && options.cost.attention.table)
    p.warnings.push_back("NVFP4 KV: the measured FlashMLA table holds no NVFP4 kernel; the attention is priced by its "
                         "roofline at efficiency.attention (modelled), not by the table the cost-model line names");
  if (const std::string v4 = dsv4_modelled_terms_note(s); !v4.empty()) p.warnings.push_back(v4);
  if (options.memory_only)
    p.warnings.push_back(fmt::format("--limits memory: only the max_running_requests cap and memory (HBM, pools, host "
                                     "DRAM) limit concurrency; PCIe and the TPOT SLO of {} ms are not applied, so the "
                                     "step time at that concurrency may exceed the SLO",
                                     d.tpot_slo_ms));
  if (p.budget.kv_budget_bytes.value <= 0)
    p.warnings.push_back(fmt::format("no HBM left for the KV cache: {}", p.budget.kv_budget_bytes.formula));
  const double dram_usable = d.host_dram_bytes - options.host_reserve_bytes;
  if (p.budget.host_pool_bytes_per_node.value > dram_usable)
    p.warnings.push_back(fmt::format(
        "the host pools need {:.1f} GB per node but host DRAM less the reserve is {:.1f} GB: SGLang would fail to "
        "allocate them; lower host_to_device_ratio",
        p.budget.host_pool_bytes_per_node.value * 1e-9, dram_usable * 1e-9));
  std::string beyond;
  for (int64_t n : options.seq_lens)
    if (hs.estimator().entries(n) > H && misses.extrapolated(H, hs.estimator().entries(n))) beyond += fmt::format("{}{}", beyond.empty() ? "" : ", ", n);
  if (!beyond.empty())
    p.warnings.push_back(fmt::format("at device_buffer_size {} the miss model reads outside the (H/K, n/H) range it was "
                                     "measured over for seq_len {}: the nearest measured fraction is held, capped by "
                                     "the steady-state bound (n − H)/(K − 1)",
                                     H, beyond));
  for (int32_t h : misses.unmeasured())
    p.warnings.push_back(fmt::format("the trace never exceeds device_buffer_size {}: its misses there come from the "
                                     "fallback miss model (the miss surface or --miss-fraction), not the replay", h));
  if (d.host_pool_remote_numa)
    p.warnings.push_back(fmt::format(
        "host_pool_numa remote: each GPU reads its host pool across sockets at cross_node_factor {:g} of a node's DRAM "
        "share (assumed; miss copy rate {:.4g} GB/s per GPU, backup {:.4g} GB/s): bind the pool to the GPU's node "
        "(numactl --membind) to lift it",
        s.hardware.numa_cross_node_factor, hs.estimator().h2d_link() * 1e-9, hs.estimator().d2h_rate() * 1e-9));
  if (d.host_layout != HostPoolLayout::kLayerFirst) add_host_layout_warning(p, hs);
  if (p.layout.attention_tp > 1)
    p.warnings.push_back(fmt::format(
        "attention TP {} (tp {} / dp_attention {}): each rank's requests are replicated on its {} GPUs; the step "
        "model divides the attention heads by {} and keeps every latent read",
        p.layout.attention_tp, d.decode.tp, p.layout.ranks, p.layout.attention_tp, p.layout.attention_tp));
}

// The device_buffer_size and host_to_device_ratio sweeps: the HiSparse row of every length at each value.
void add_sweeps(CapacityPlan& p, const MissCurves& misses, const StepTimeModel& hs) {
  const Scenario& s = p.scenario;
  const DeploymentSpec& d = s.deployment;
  const PlanOptions& options = p.options;
  const int32_t H = d.hisparse.device_buffer_size;
  const std::vector<int32_t> bufs = options.sweep_buffer_sizes.empty() ? default_buffer_sweep(s) : options.sweep_buffer_sizes;
  for (int32_t h : bufs) {
    Scenario sh = s;
    sh.deployment.hisparse.device_buffer_size = h;
    sh.deployment.hisparse.validate(fmt::format("plan: --sweep-buffer-sizes value {}", h));
    const MemoryBudget bh = compute_memory_budget(sh, options.seq_lens);
    const StepTimeModel mh(sh, options.cost, true, [&misses, h](int64_t n) { return misses.fraction(h, n); });
    const RowContext ch = make_context(sh, bh, options);
    for (const SeqLenBudget& q : bh.per_seq_len)
      p.sweep_buffer.push_back(sweep_row("device_buffer_size", h, h == H, plan_row(ch, q, KvMode::kHiSparse, mh), bh));
  }
  const std::vector<int32_t> ratios = options.sweep_ratios.empty() ? default_ratio_sweep(s) : options.sweep_ratios;
  for (int32_t rr : ratios) {
    if (rr < 1) throw_error("plan: host_to_device_ratio {} in the sweep (expected >= 1)", rr);
    Scenario sr = s;
    sr.deployment.hisparse.host_to_device_ratio = rr;
    const MemoryBudget br = compute_memory_budget(sr, options.seq_lens);
    const RowContext cr = make_context(sr, br, options);
    for (const SeqLenBudget& q : br.per_seq_len)
      p.sweep_ratio.push_back(sweep_row("host_to_device_ratio", rr, rr == d.hisparse.host_to_device_ratio,
                                        plan_row(cr, q, KvMode::kHiSparse, hs), br));
  }
}

}  // namespace

CapacityPlan compute_capacity_plan(const Scenario& scenario, const PlanOptions& options, const MissCurves& misses) {
  CapacityPlan p;
  p.scenario = scenario;
  p.options = options;
  const Scenario& s = p.scenario;
  const DeploymentSpec& d = s.deployment;
  if (options.seq_lens.empty()) throw_error("plan: no sequence length to plan for");
  for (int64_t n : options.seq_lens)
    if (n < 1) throw_error("plan: sequence length {} (expected >= 1)", n);
  if (!(d.tpot_slo_ms > 0)) throw_error("{}: tpot_slo_ms {} (expected > 0)", s.source, d.tpot_slo_ms);
  if (options.batch_cap < 1) throw_error("plan: batch cap {} (expected >= 1)", options.batch_cap);
  if (s.model.has_sparse_indexer()) d.hisparse.validate(s.source + ": hisparse");
  const ModelFamily& family = family_of(s);
  p.budget = compute_memory_budget(s, options.seq_lens);
  p.layout = rank_layout(s);
  p.hbm.hbm = p.budget.hbm_bytes.value;
  p.hbm.weights = p.budget.weights_per_gpu_bytes.value;
  p.hbm.activation_reserve = p.budget.activation_reserve_bytes.value;
  p.hbm.kv_budget = p.budget.kv_budget_bytes.value;
  p.hbm.outside_static = p.hbm.hbm - p.hbm.weights - p.hbm.activation_reserve - p.hbm.kv_budget;
  p.miss_source = misses.description();
  const SimTime slo = static_cast<SimTime>(std::llround(d.tpot_slo_ms * 1e6));
  const int32_t H = d.hisparse.device_buffer_size;

  const StepTimeModel full(s, options.cost, false, nullptr);
  if (full.pp() > 1) p.warnings.push_back(describe_pipeline(s, full, options.seq_lens.empty() ? 8192 : options.seq_lens.front()));
  const RowContext ctx = make_context(s, p.budget, options);
  p.host_dram_per_gpu = ctx.dram_per_gpu;
  if (!family.offload(s.model).applies) {
    // GQA / MHA (with or without sliding layers): SGLang's MHA or SWA pools, full KV only.
    p.hisparse_not_applicable = fmt::format(
        "not applicable: no sparse indexer ({} has {} attention; HiSparse offloads what DeepSeek Sparse Attention's "
        "indexer selects){}", s.model.name, p.budget.attention,
        p.budget.linear_layer_count > 0
            ? fmt::format("; of its layers only the {} full-attention ones hold KV HiSparse could offload, the {} "
                          "linear-attention ones keep a fixed Mamba state per request",
                          p.budget.full_layers, p.budget.linear_layer_count)
            : std::string());
    for (const SeqLenBudget& q : p.budget.per_seq_len) {
      p.rows.push_back(plan_row(ctx, q, KvMode::kFull, full));
      p.curves.push_back(make_curve(p.rows.back(), full, options, slo, p.layout.ranks));
      p.rows.push_back(not_applicable_row(q.seq_len, p.hisparse_not_applicable));
      if (q.seq_len > d.context_length)
        p.warnings.push_back(fmt::format("seq_len {} exceeds the deployment's context_length {}", q.seq_len, d.context_length));
    }
    if (p.budget.kv_budget_bytes.value <= 0)
      p.warnings.push_back(fmt::format("no HBM left for the KV cache: {}", p.budget.kv_budget_bytes.formula));
    if (options.memory_only)
      p.warnings.push_back(fmt::format("--limits memory: only the max_running_requests cap and the KV pools limit "
                                       "concurrency; the TPOT SLO of {} ms is not applied", d.tpot_slo_ms));
    if (p.budget.linear_layer_count > 0)
      p.warnings.push_back(fmt::format(
          "step cost: the {} linear-attention layers read no KV; each reads and writes back its request's Mamba state "
          "slot every step ({:.2f} MB per request per step, 2 × the budget's slot; modelled, memory-bound), and their "
          "projections are priced as a full-attention layer's",
          p.budget.linear_layer_count, 2 * p.budget.mamba_state_per_request.value * 1e-6));
    if (p.layout.attention_tp > 1)
      p.warnings.push_back(fmt::format(
          "attention TP {} (tp {} / dp_attention {}): each GPU computes {} of the {} query heads and holds {} of the {} "
          "KV heads ({}); the MLP is split over the same GPUs and all-reduced",
          p.layout.attention_tp, d.decode.tp, p.layout.ranks, s.model.attention_heads / p.layout.attention_tp,
          s.model.attention_heads, static_cast<int64_t>(p.budget.kv_heads_per_rank.value), s.model.num_key_value_heads,
          p.budget.kv_heads_per_rank.formula));
    if (d.double_sparsity.enabled)
      p.warnings.push_back(fmt::format(
          "double_sparsity: the label pool ({} B per token) is in the capacity; the step model still prices dense "
          "attention over every token (the label scoring and the attention over the {} heavy tokens are not modelled)",
          formula_number(p.budget.label_bytes_per_token.value), d.double_sparsity.heavy_token_num));
    if (options.strategies.enabled) p.strategies = compute_cache_strategies(p, options.strategies);
    return p;
  }
  const StepTimeModel hs(s, options.cost, true, [&misses, H](int64_t n) { return misses.fraction(H, n); });
  const StepTimeModel dyn(s, options.cost, KvMode::kDynamic, [&misses, H](int64_t n) { return misses.fraction(H, n); },
                          static_cast<int64_t>(p.budget.device_pool_tokens.value));
  p.h2d_rate = hs.h2d_rate();
  p.d2h_rate = hs.d2h_rate();
  for (const SeqLenBudget& q : p.budget.per_seq_len) {
    p.rows.push_back(plan_row(ctx, q, KvMode::kFull, full));
    p.curves.push_back(make_curve(p.rows.back(), full, options, slo, p.layout.ranks));
    p.rows.push_back(plan_row(ctx, q, KvMode::kHiSparse, hs));
    p.curves.push_back(make_curve(p.rows.back(), hs, options, slo, p.layout.ranks));
    // Dynamic residency (DeepSeek-V4 too: its resident requests hold every C4 entry, its demoted ones the buffer).
    if (p.budget.model_family().dynamic_residency()) {
      p.dynamic_rows.push_back(plan_row(ctx, q, KvMode::kDynamic, dyn));
      p.dynamic_rows.back().resident_per_rank = dyn.max_resident_batch(ContextMix::single(q.seq_len), options.batch_cap);
    }
    if (q.seq_len > d.context_length)
      p.warnings.push_back(fmt::format("seq_len {} exceeds the deployment's context_length {}", q.seq_len, d.context_length));
  }

  add_hisparse_warnings(p, misses, hs);
  add_sweeps(p, misses, hs);
  if (options.strategies.enabled) p.strategies = compute_cache_strategies(p, options.strategies);
  return p;
}

}  // namespace hisparse::sim

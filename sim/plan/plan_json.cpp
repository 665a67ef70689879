// @brief plan.json: the issue-6 contract (`rows`, exactly seven keys per row) plus every detail behind each number.
#include "core/io/json_writer.h"
#include "sim/plan/plan_report.h"
#include "sim/plan/plan_table.h"

namespace hisparse::sim {

namespace {

using Layout = JsonWriter::Layout;
constexpr Layout kInline = Layout::kInline;

/// The planner's number style: whole values as integers, others with 10 significant digits, non-finite as null.
void num(JsonWriter& j, std::string_view key, double v) { j.key(key).whole_or_general(v, 10); }

void fig(JsonWriter& j, const Figure& f) {
  j.begin_object(kInline).member("key", f.key).member("label", f.label);
  num(j, "value", f.value);
  j.member("unit", f.unit).member("formula", f.formula).end_object();
}

void transfer(JsonWriter& j, const TransferCost& t) {
  j.begin_object(kInline).member("transfers", t.transfers);
  num(j, "bytes", t.bytes);
  num(j, "bytes_per_s", t.bytes_per_s);
  j.member("ns", t.ns).member("formula", t.formula).end_object();
}

void step(JsonWriter& j, const StepEstimate& e) {
  j.begin_object(kInline);
  for (int i = 0; i < kStepCostFieldCount; ++i) j.member(std::string(kStepCostFields[i]) + "_ns", step_cost_field(e.cost, i));
  j.member("step_ns", e.step_ns);
  num(j, "accepted_tokens", e.accepted_tokens);
  j.member("tpot_ns", e.tpot_ns).member("h2d_transfer_ns", e.h2d_transfer_ns).member("backup_transfer_ns", e.backup_transfer_ns);
  num(j, "misses", e.misses);
  num(j, "h2d_bytes", e.h2d_bytes);
  num(j, "backup_bytes", e.backup_bytes);
  j.end_object();
}

void sweep(JsonWriter& j, const SweepRow& w) {
  j.begin_object(kInline).member(w.param, w.value).member("is_current", w.is_current).member("seq_len", w.seq_len);
  j.member("max_concurrency", w.max_concurrency).member("binding_limit", w.binding_limit);
  num(j, "tpot_ms", w.tpot_ms);
  num(j, "decode_tokens_per_s", w.decode_tokens_per_s);
  num(j, "misses_per_request_step", w.misses_per_request_step);
  num(j, "miss_fraction", w.miss_fraction);
  num(j, "h2d_bytes_per_step", w.h2d_bytes_per_step);
  j.member("device_pool_tokens", w.device_pool_tokens).member("logical_pool_tokens", w.logical_pool_tokens);
  num(j, "device_buffer_bytes", w.device_buffer_bytes);
  num(j, "hbm_bytes_per_request", w.hbm_per_request);
  num(j, "host_pool_bytes_per_node", w.host_pool_bytes_per_node);
  num(j, "host_dram_left_bytes", w.host_dram_left_bytes);
  j.end_object();
}

void sweeps(JsonWriter& j, std::string_view key, const std::vector<SweepRow>& rows) {
  j.key(key).begin_array();
  for (const SweepRow& w : rows) sweep(j, w);
  j.end_array();
}

bool is_dynamic(const PlanTableRow& r) { return r.mode == to_string(KvMode::kDynamic); }

void contract_rows(JsonWriter& j, const std::vector<PlanTableRow>& table) {
  j.key("rows").begin_array();
  for (const PlanTableRow& r : table) {
    if (is_dynamic(r)) continue;  // dynamic residency has its own key (the contract stays full/HiSparse pairs)
    j.begin_object(kInline).member("seq_len", r.seq_len).member("mode", r.mode);
    j.member("max_concurrency", r.max_concurrency).member("binding_limit", r.binding_limit);
    num(j, "decode_tokens_per_s", r.decode_tokens_per_s);
    num(j, "hbm_bytes_per_request", r.hbm_bytes_per_request);
    num(j, "host_bytes_per_request", r.host_bytes_per_request);
    j.end_object();
  }
  j.end_array();
  j.member("schema", "hisparse-plan/1");
  j.key("units").begin_object(kInline)
      .member("max_concurrency", "concurrent decode requests per decode instance (= per rank × ranks)")
      .member("decode_tokens_per_s", "tokens/s per decode instance at max_concurrency")
      .member("hbm_bytes_per_request", "bytes on each GPU that holds the request")
      .member("host_bytes_per_request", "host bytes per GPU that holds the request")
      .end_object();
}

void scenario(JsonWriter& j, const CapacityPlan& p) {
  const Scenario& s = p.scenario;
  const DeploymentSpec& d = s.deployment;
  j.key("scenario").begin_object(kInline).member("name", d.name).member("source", s.source);
  j.member("model", s.model.name).member("hardware", s.hardware.name).member("decode_instances", d.decode.count);
  j.member("gpus_per_instance", p.layout.gpus).member("tp", d.decode.tp).member("dp_attention", d.decode.dp_attention);
  j.member("ep", d.decode.ep).member("ranks_per_instance", p.layout.ranks).member("attention_tp", p.layout.attention_tp);
  j.member("page_size", d.page_size).member("kv_dtype", to_string(d.kv_dtype));
  num(j, "mem_fraction_static", d.mem_fraction_static);
  num(j, "tpot_slo_ms", d.tpot_slo_ms);
  j.member("max_running_requests", d.max_running_requests);
  num(j, "host_dram_bytes", d.host_dram_bytes);
  num(j, "host_reserve_bytes", p.options.host_reserve_bytes);
  j.key("hisparse").begin_object(kInline).member("top_k", d.hisparse.top_k);
  j.member("device_buffer_size", d.hisparse.device_buffer_size);
  j.member("host_to_device_ratio", d.hisparse.host_to_device_ratio).end_object().end_object();
  j.member("attention", p.budget.attention);
  j.same_line().member("hisparse_applicable", p.hisparse_not_applicable.empty());
  j.same_line().member("hisparse_not_applicable", p.hisparse_not_applicable);
  j.member("limits", p.options.memory_only ? "memory" : "all");
  j.member("miss_model", p.miss_source);
}

void cost_and_memory(JsonWriter& j, const CapacityPlan& p) {
  j.key("cost_model").begin_object(kInline).member("overlap", to_string(p.options.cost.overlap));
  j.member("step_overhead_ns", p.options.cost.step_overhead_ns(p.scenario.deployment.decode.dp_attention > 1));
  num(j, "h2d_bytes_per_s", p.h2d_rate);
  num(j, "d2h_bytes_per_s", p.d2h_rate);
  num(j, "host_dram_per_gpu_bytes", p.host_dram_per_gpu);
  j.member("terms_file", p.options.cost.terms_file).key("terms").begin_array();
  for (const TermSource& t : p.options.cost.sources)
    j.begin_object(kInline).member("term", t.term).member("value", t.value).member("kind", t.kind)
        .member("source", t.source).end_object();
  j.end_array().end_object();
  j.key("hbm_per_gpu").begin_object(kInline);
  num(j, "hbm", p.hbm.hbm);
  num(j, "weights", p.hbm.weights);
  num(j, "activation_reserve", p.hbm.activation_reserve);
  num(j, "kv_budget", p.hbm.kv_budget);
  num(j, "outside_static", p.hbm.outside_static);
  j.end_object();
  j.key("pools").begin_array();
  for (const Figure* f : p.budget.figures()) fig(j, *f);
  j.end_array();
}

void detail(JsonWriter& j, const CapacityPlan& p, const PlanRow& r) {
  j.begin_object(kInline).member("seq_len", r.seq_len).member("mode", to_string(r.mode));
  j.member("max_per_rank", r.max_per_rank).member("ranks", p.layout.ranks).member("binding_limit", r.binding_limit);
  num(j, "tpot_ms", r.at_max.tpot_ns * 1e-6);
  num(j, "misses_per_request_step", r.misses_per_request_step);
  num(j, "miss_fraction", r.miss_fraction);
  j.member("slo_note", r.slo_note);
  j.new_line().key("per_request").begin_array(kInline);
  for (const Figure* f : {&r.hbm_per_request, &r.host_per_request, &r.gpu_latent_per_request, &r.gpu_indexer_per_request})
    fig(j, *f);
  j.end_array();
  j.new_line().key("hbm_use").begin_object(kInline);
  num(j, "latent_pool", r.latent_pool_bytes);
  num(j, "indexer_pool", r.indexer_pool_bytes);
  num(j, "latent_used", r.latent_used_bytes);
  num(j, "indexer_used", r.indexer_used_bytes);
  j.end_object();
  num(j, "host_used_bytes_per_gpu", r.host_used_bytes_per_gpu);
  j.new_line().key("step_at_max");
  step(j, r.at_max);
  j.new_line().key("transfers").begin_object(kInline).key("decode_per_layer");
  transfer(j, r.decode_transfer);
  j.key("prefill_offload");
  transfer(j, r.prefill_offload);
  j.end_object();
  j.new_line().key("limits").begin_array();
  for (const PlanLimit& l : r.limits) {
    j.begin_object(kInline).member("key", l.key).member("label", l.label).key("per_rank");
    if (l.per_rank < 0) j.null(); else j.number(l.per_rank);
    j.member("formula", l.formula).end_object();
  }
  j.end_array().end_object();
}

void gains_and_residency(JsonWriter& j, const CapacityPlan& p, const std::vector<PlanTableRow>& table) {
  // Dynamic residency beside the issue-6 `rows` contract (which stays full/HiSparse pairs).
  j.key("dynamic_residency").begin_array();
  for (const PlanTableRow& r : table) {
    if (!is_dynamic(r)) continue;
    j.begin_object(kInline).member("seq_len", r.seq_len).member("max_concurrency", r.max_concurrency);
    j.member("binding_limit", r.binding_limit);
    num(j, "decode_tokens_per_s", r.decode_tokens_per_s);
    num(j, "tpot_ms", r.tpot_ms);
    j.member("resident_per_rank", r.resident_per_rank).end_object();
  }
  j.end_array().key("gains").begin_array();
  for (size_t i = 0; i + 1 < p.rows.size(); i += 2) {
    const PlanRow &f = p.rows[i], &h = p.rows[i + 1];
    const bool na = h.binding_limit == kNotApplicable;
    j.begin_object(kInline).member("seq_len", f.seq_len).key("concurrency_gain");
    if (!na && f.max_concurrency > 0) j.whole_or_general(static_cast<double>(h.max_concurrency) / f.max_concurrency, 10);
    else j.null();
    j.key("throughput_gain");
    if (!na && f.decode_tokens_per_s > 0) j.whole_or_general(h.decode_tokens_per_s / f.decode_tokens_per_s, 10);
    else j.null();
    j.end_object();
  }
  j.end_array();
}

void curves(JsonWriter& j, const CapacityPlan& p) {
  j.key("curves").begin_array();
  for (const ThroughputCurve& c : p.curves) {
    j.begin_object(kInline).member("seq_len", c.seq_len).member("mode", to_string(c.mode));
    j.member("memory_limit_per_rank", c.memory_limit_per_rank).key("points").begin_array(kInline);
    for (const CurvePoint& q : c.points) {
      j.begin_object(kInline).member("batch", q.batch).member("batch_per_rank", q.batch_per_rank);
      num(j, "tpot_ms", q.tpot_ms);
      num(j, "tokens_per_s", q.tokens_per_s);
      num(j, "h2d_ms", q.h2d_ms);
      j.member("within_slo", q.within_slo).end_object();
    }
    j.end_array().end_object();
  }
  j.end_array();
}

}  // namespace

std::string plan_to_json(const CapacityPlan& p, const PlanRunInfo& info) {
  const std::vector<PlanTableRow> table = plan_table(p);
  JsonWriter j(2);
  j.begin_object();
  contract_rows(j, table);
  scenario(j, p);
  cost_and_memory(j, p);
  j.key("details").begin_array();
  for (const PlanRow& r : p.rows) detail(j, p, r);
  j.end_array();
  gains_and_residency(j, p, table);
  curves(j, p);
  j.key("sweeps").begin_object();
  sweeps(j, "device_buffer_size", p.sweep_buffer);
  sweeps(j, "host_to_device_ratio", p.sweep_ratio);
  j.end_object();
  if (p.options.strategies.enabled) {
    j.key("strategies");
    strategies_to_json(j, p.strategies);
  }
  j.key("warnings").begin_array();
  for (const std::string& w : p.warnings) j.string(w);
  j.end_array();
  j.key("run").begin_object(kInline).member("command", info.command_line).member("calibration", info.calibration);
  j.member("workload", info.workload);
  num(j, "plan_seconds", info.plan_seconds);
  j.end_object().end_object();
  return j.str() + "\n";
}

}  // namespace hisparse::sim

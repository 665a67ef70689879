// @brief plan.json: the issue-6 contract (`rows`, exactly seven keys per row) plus every detail behind each number.
#include <cmath>

#include <fmt/format.h>

#include "core/io/output_file.h"
#include "sim/plan/plan_report.h"

namespace hisparse::sim {

namespace {

std::string esc(const std::string& s) { return json_quote(s); }

std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == std::floor(v) && std::fabs(v) < 9e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{:.10g}", v);
}

std::string jlimit(int64_t v) { return v < 0 ? "null" : fmt::format("{}", v); }

std::string jfig(const Figure& f) {
  return fmt::format("{{\"key\": {}, \"label\": {}, \"value\": {}, \"unit\": {}, \"formula\": {}}}", esc(f.key),
                     esc(f.label), jnum(f.value), esc(f.unit), esc(f.formula));
}

std::string jtransfer(const TransferCost& t) {
  return fmt::format("{{\"transfers\": {}, \"bytes\": {}, \"bytes_per_s\": {}, \"ns\": {}, \"formula\": {}}}", t.transfers,
                     jnum(t.bytes), jnum(t.bytes_per_s), t.ns, esc(t.formula));
}

std::string jstep(const StepEstimate& e) {
  std::string out = "{";
  for (int i = 0; i < kStepCostFieldCount; ++i)
    out += fmt::format("\"{}_ns\": {}, ", kStepCostFields[i], step_cost_field(e.cost, i));
  return out + fmt::format("\"step_ns\": {}, \"accepted_tokens\": {}, \"tpot_ns\": {}, \"h2d_transfer_ns\": {}, "
                           "\"backup_transfer_ns\": {}, \"misses\": {}, \"h2d_bytes\": {}, \"backup_bytes\": {}}}",
                           e.step_ns, jnum(e.accepted_tokens), e.tpot_ns, e.h2d_transfer_ns, e.backup_transfer_ns, jnum(e.misses), jnum(e.h2d_bytes),
                           jnum(e.backup_bytes));
}

template <class T, class F>
std::string jarray(const std::vector<T>& v, const F& f, const char* indent) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += fmt::format("{}\n{}{}", i ? "," : "", indent, f(v[i]));
  return out + (v.empty() ? "]" : fmt::format("\n{}]", std::string(indent).substr(2)));
}

std::string jsweep(const SweepRow& w) {
  return fmt::format(
      "{{\"{}\": {}, \"is_current\": {}, \"seq_len\": {}, \"max_concurrency\": {}, \"binding_limit\": {}, "
      "\"tpot_ms\": {}, \"decode_tokens_per_s\": {}, \"misses_per_request_step\": {}, \"miss_fraction\": {}, "
      "\"h2d_bytes_per_step\": {}, \"device_pool_tokens\": {}, \"logical_pool_tokens\": {}, \"device_buffer_bytes\": {}, "
      "\"hbm_bytes_per_request\": {}, \"host_pool_bytes_per_node\": {}, \"host_dram_left_bytes\": {}}}",
      w.param, w.value, w.is_current ? "true" : "false", w.seq_len, w.max_concurrency, esc(w.binding_limit),
      jnum(w.tpot_ms), jnum(w.decode_tokens_per_s), jnum(w.misses_per_request_step), jnum(w.miss_fraction),
      jnum(w.h2d_bytes_per_step), w.device_pool_tokens, w.logical_pool_tokens, jnum(w.device_buffer_bytes),
      jnum(w.hbm_per_request), jnum(w.host_pool_bytes_per_node), jnum(w.host_dram_left_bytes));
}

}  // namespace

std::string plan_to_json(const CapacityPlan& p, const PlanRunInfo& info) {
  const Scenario& s = p.scenario;
  const DeploymentSpec& d = s.deployment;
  std::string o = "{\n";
  o += "  \"rows\": " + jarray(p.rows, [](const PlanRow& r) {
         return fmt::format("{{\"seq_len\": {}, \"mode\": \"{}\", \"max_concurrency\": {}, \"binding_limit\": {}, "
                            "\"decode_tokens_per_s\": {}, \"hbm_bytes_per_request\": {}, \"host_bytes_per_request\": {}}}",
                            r.seq_len, to_string(r.mode), r.max_concurrency, esc(r.binding_limit),
                            jnum(r.decode_tokens_per_s), jnum(r.hbm_per_request.value), jnum(r.host_per_request.value));
       }, "    ") + ",\n";
  o += "  \"schema\": \"hisparse-plan/1\",\n";
  o += "  \"units\": {\"max_concurrency\": \"concurrent decode requests per decode instance (= per rank × ranks)\", "
       "\"decode_tokens_per_s\": \"tokens/s per decode instance at max_concurrency\", "
       "\"hbm_bytes_per_request\": \"bytes on each GPU that holds the request\", "
       "\"host_bytes_per_request\": \"host bytes per GPU that holds the request\"},\n";
  o += fmt::format(
      "  \"scenario\": {{\"name\": {}, \"source\": {}, \"model\": {}, \"hardware\": {}, \"decode_instances\": {}, "
      "\"gpus_per_instance\": {}, \"tp\": {}, \"dp_attention\": {}, \"ep\": {}, \"ranks_per_instance\": {}, "
      "\"attention_tp\": {}, \"page_size\": {}, \"kv_dtype\": \"{}\", \"mem_fraction_static\": {}, \"tpot_slo_ms\": {}, "
      "\"max_running_requests\": {}, \"host_dram_bytes\": {}, \"host_reserve_bytes\": {}, "
      "\"hisparse\": {{\"top_k\": {}, \"device_buffer_size\": {}, \"host_to_device_ratio\": {}}}}},\n",
      esc(d.name), esc(s.source), esc(s.model.name), esc(s.hardware.name), d.decode.count, p.layout.gpus, d.decode.tp,
      d.decode.dp_attention, d.decode.ep, p.layout.ranks, p.layout.attention_tp, d.page_size,
      to_string(d.kv_dtype), jnum(d.mem_fraction_static), jnum(d.tpot_slo_ms),
      d.max_running_requests, jnum(d.host_dram_bytes), jnum(p.options.host_reserve_bytes), d.hisparse.top_k,
      d.hisparse.device_buffer_size, d.hisparse.host_to_device_ratio);
  o += fmt::format("  \"attention\": {}, \"hisparse_applicable\": {}, \"hisparse_not_applicable\": {},\n",
                   esc(p.budget.attention), p.hisparse_not_applicable.empty() ? "true" : "false",
                   esc(p.hisparse_not_applicable));
  o += fmt::format("  \"limits\": \"{}\",\n", p.options.memory_only ? "memory" : "all");
  o += fmt::format("  \"miss_model\": {},\n", esc(p.miss_source));
  const std::string terms = jarray(p.options.cost.sources, [](const TermSource& t) {
    return fmt::format("{{\"term\": {}, \"value\": {}, \"kind\": {}, \"source\": {}}}", esc(t.term), esc(t.value),
                       esc(t.kind), esc(t.source));
  }, "      ");
  o += fmt::format("  \"cost_model\": {{\"overlap\": \"{}\", \"step_overhead_ns\": {}, \"h2d_bytes_per_s\": {}, "
                   "\"d2h_bytes_per_s\": {}, \"host_dram_per_gpu_bytes\": {}, \"terms_file\": {}, \"terms\": {}}},\n",
                   to_string(p.options.cost.overlap),
                   p.options.cost.step_overhead_ns(p.scenario.deployment.decode.dp_attention > 1), jnum(p.h2d_rate), jnum(p.d2h_rate),
                   jnum(p.host_dram_per_gpu), esc(p.options.cost.terms_file), terms);
  o += fmt::format("  \"hbm_per_gpu\": {{\"hbm\": {}, \"weights\": {}, \"activation_reserve\": {}, \"kv_budget\": {}, "
                   "\"outside_static\": {}}},\n",
                   jnum(p.hbm.hbm), jnum(p.hbm.weights), jnum(p.hbm.activation_reserve), jnum(p.hbm.kv_budget),
                   jnum(p.hbm.outside_static));
  o += "  \"pools\": " + jarray(p.budget.figures(), [](const Figure* f) { return jfig(*f); }, "    ") + ",\n";
  o += "  \"details\": " + jarray(p.rows, [&](const PlanRow& r) {
         std::string lim = jarray(r.limits, [](const PlanLimit& l) {
           return fmt::format("{{\"key\": {}, \"label\": {}, \"per_rank\": {}, \"formula\": {}}}", esc(l.key), esc(l.label),
                              jlimit(l.per_rank), esc(l.formula));
         }, "        ");
         return fmt::format(
             "{{\"seq_len\": {}, \"mode\": \"{}\", \"max_per_rank\": {}, \"ranks\": {}, \"binding_limit\": {}, "
             "\"tpot_ms\": {}, \"misses_per_request_step\": {}, \"miss_fraction\": {}, \"slo_note\": {},\n"
             "      \"per_request\": [{}, {}, {}, {}],\n      \"hbm_use\": {{\"latent_pool\": {}, \"indexer_pool\": {}, "
             "\"latent_used\": {}, \"indexer_used\": {}}}, \"host_used_bytes_per_gpu\": {},\n      \"step_at_max\": {},\n"
             "      \"transfers\": {{\"decode_per_layer\": {}, \"prefill_offload\": {}}},\n      \"limits\": {}}}",
             r.seq_len, to_string(r.mode), r.max_per_rank, p.layout.ranks, esc(r.binding_limit), jnum(r.at_max.tpot_ns * 1e-6),
             jnum(r.misses_per_request_step), jnum(r.miss_fraction), esc(r.slo_note), jfig(r.hbm_per_request),
             jfig(r.host_per_request), jfig(r.gpu_latent_per_request), jfig(r.gpu_indexer_per_request),
             jnum(r.latent_pool_bytes), jnum(r.indexer_pool_bytes), jnum(r.latent_used_bytes), jnum(r.indexer_used_bytes),
             jnum(r.host_used_bytes_per_gpu), jstep(r.at_max), jtransfer(r.decode_transfer), jtransfer(r.prefill_offload),
             lim);
       }, "    ") + ",\n";
  std::vector<std::string> gains;
  for (size_t i = 0; i + 1 < p.rows.size(); i += 2) {
    const PlanRow &f = p.rows[i], &h = p.rows[i + 1];
    const bool na = h.binding_limit == kNotApplicable;
    gains.push_back(fmt::format("{{\"seq_len\": {}, \"concurrency_gain\": {}, \"throughput_gain\": {}}}", f.seq_len,
                                na ? "null" : f.max_concurrency > 0 ? jnum(static_cast<double>(h.max_concurrency) / f.max_concurrency) : "null",
                                !na && f.decode_tokens_per_s > 0 ? jnum(h.decode_tokens_per_s / f.decode_tokens_per_s) : "null"));
  }
  // Dynamic residency beside the issue-6 `rows` contract (which stays full/HiSparse pairs).
  o += "  \"dynamic_residency\": " + jarray(p.dynamic_rows, [](const PlanRow& r) {
         return fmt::format("{{\"seq_len\": {}, \"max_concurrency\": {}, \"binding_limit\": {}, \"decode_tokens_per_s\": {}, "
                            "\"tpot_ms\": {}, \"resident_per_rank\": {}}}",
                            r.seq_len, r.max_concurrency, esc(r.binding_limit), jnum(r.decode_tokens_per_s),
                            jnum(static_cast<double>(r.at_max.step_ns) * 1e-6), r.resident_per_rank);
       }, "    ") + ",\n";
  o += "  \"gains\": " + jarray(gains, [](const std::string& g) { return g; }, "    ") + ",\n";
  o += "  \"curves\": " + jarray(p.curves, [](const ThroughputCurve& c) {
         std::string pts = "[";
         for (size_t i = 0; i < c.points.size(); ++i) {
           const CurvePoint& q = c.points[i];
           pts += fmt::format("{}{{\"batch\": {}, \"batch_per_rank\": {}, \"tpot_ms\": {}, \"tokens_per_s\": {}, "
                              "\"h2d_ms\": {}, \"within_slo\": {}}}",
                              i ? ", " : "", q.batch, q.batch_per_rank, jnum(q.tpot_ms), jnum(q.tokens_per_s), jnum(q.h2d_ms),
                              q.within_slo ? "true" : "false");
         }
         return fmt::format("{{\"seq_len\": {}, \"mode\": \"{}\", \"memory_limit_per_rank\": {}, \"points\": {}]}}",
                            c.seq_len, to_string(c.mode), c.memory_limit_per_rank, pts);
       }, "    ") + ",\n";
  o += "  \"sweeps\": {\n    \"device_buffer_size\": " + jarray(p.sweep_buffer, jsweep, "      ") + ",\n";
  o += "    \"host_to_device_ratio\": " + jarray(p.sweep_ratio, jsweep, "      ") + "\n  },\n";
  if (p.options.strategies.enabled) o += "  \"strategies\": " + strategies_to_json(p.strategies) + ",\n";
  o += "  \"warnings\": " + jarray(p.warnings, esc, "    ") + ",\n";
  o += fmt::format("  \"run\": {{\"command\": {}, \"calibration\": {}, \"workload\": {}, \"plan_seconds\": {}}}\n}}\n",
                   esc(info.command_line), esc(info.calibration),
                   esc(info.workload), jnum(info.plan_seconds));
  return o;
}

}  // namespace hisparse::sim

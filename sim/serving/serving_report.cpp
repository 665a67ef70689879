// @brief Summary arithmetic and the JSON/CSV text of a serving run.
#include "sim/serving/serving_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/io/output_file.h"

namespace hisparse::sim {
namespace {

bool has_suffix(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

double link_util(const ServingResult& r, const char* suffix) {
  double bytes = 0, cap = 0;
  for (const auto& l : r.links)
    if (has_suffix(l.name, suffix) || (suffix[0] == '*' && l.name.find(suffix + 1) != std::string::npos)) {
      bytes += l.bytes;
      cap += l.capacity;
    }
  const double t = ns_to_seconds(r.makespan);
  return cap > 0 && t > 0 ? bytes / (cap * t) : 0;
}

std::string pct_json(const Percentiles& p) {
  return fmt::format("{{\"p50\": {:.6g}, \"p90\": {:.6g}, \"p99\": {:.6g}, \"mean\": {:.6g}, \"max\": {:.6g}, \"count\": {}}}",
                     p.p50, p.p90, p.p99, p.mean, p.max, p.count);
}

}  // namespace

SimTime tpot_origin(const RequestOutcome& o) { return o.first_token >= 0 ? o.first_token : o.ready; }

double tokens_per_request_step(const ServingResult& r) {
  return r.request_steps > 0 ? static_cast<double>(r.decode_tokens) / static_cast<double>(r.request_steps) : 0;
}

bool ttft_modelled(const ServingResult& r) { return r.prefill_mode != "pd-external"; }

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.count = static_cast<int64_t>(v.size());
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) { return v[static_cast<size_t>(std::max(0.0, std::ceil(q * static_cast<double>(v.size())) - 1))]; };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  p.max = v.back();
  double s = 0;
  for (double x : v) s += x;
  p.mean = s / static_cast<double>(v.size());
  return p;
}

ServingSummary summarize(const ServingResult& r, const Scenario& sc) {
  ServingSummary s;
  std::vector<double> ttft, tpot, wait, step, batch;
  int64_t slo_ok = 0;
  for (const auto& o : r.requests) {
    if (o.first_token >= 0) ttft.push_back(static_cast<double>(o.first_token - o.arrival) * 1e-6);
    if (o.ready >= 0) wait.push_back(static_cast<double>(o.ready - o.arrival) * 1e-6);
    if (o.finish >= 0 && o.output_tokens > 1 && tpot_origin(o) >= 0) {
      const double t = static_cast<double>(o.finish - tpot_origin(o)) * 1e-6 / (o.output_tokens - 1);
      tpot.push_back(t);
      slo_ok += t <= sc.deployment.tpot_slo_ms;
    }
  }
  const int ranks_per_instance = std::max(1, r.ranks / std::max(1, r.decode_instances));
  for (const auto& st : r.steps) {
    step.push_back(static_cast<double>(st.end - st.start) * 1e-6);
    if (st.requests > 0) batch.push_back(static_cast<double>(st.requests) / ranks_per_instance);
  }
  s.ttft_ms = percentiles(ttft);
  s.tpot_ms = percentiles(tpot);
  s.wait_ms = percentiles(wait);
  s.step_ms = percentiles(step);
  s.batch_per_gpu = percentiles(batch);
  s.decode_tokens_per_s = percentiles(r.step_tokens_per_s);
  s.tpot_slo_attainment = tpot.empty() ? 0 : static_cast<double>(slo_ok) / static_cast<double>(tpot.size());
  const double t = ns_to_seconds(r.makespan);
  if (t > 0) {
    const auto useful = static_cast<double>(r.decode_tokens - r.wasted_decode_tokens);
    s.tokens_per_s = useful / t;
    s.tokens_per_s_per_gpu = useful / t / std::max(1, r.decode_gpus);
    s.tokens_per_s_per_instance = useful / t / std::max(1, r.decode_instances);
  }
  s.hit_rate = r.selected > 0 ? 1.0 - static_cast<double>(r.misses) / static_cast<double>(r.selected) : 1.0;
  s.pcie_h2d_util = link_util(r, ".h2d");
  s.pcie_d2h_util = link_util(r, ".d2h");
  s.host_dram_util = link_util(r, "*.dram");
  s.rdma_util = link_util(r, "*.nic");
  const StepCost& c = r.gpu_cost_total;
  s.io_stall_s = ns_to_seconds(c.h2d + c.stall);
  const double busy = ns_to_seconds(c.critical_path());
  s.io_stall_fraction = busy > 0 ? s.io_stall_s / busy : 0;
  if (r.gpu_steps_busy > 0) {
    const int64_t n = r.gpu_steps_busy;
    s.mean_step = StepCost{c.indexer / n, c.topk / n, c.swap_in / n, c.h2d / n, c.attention / n,
                           c.moe / n, c.backup / n, c.stall / n, c.sync / n, c.draft / n, c.prefetch_hidden / n};
  }
  return s;
}

std::string summary_json(const ServingResult& r, const Scenario& sc) {
  const ServingSummary s = summarize(r, sc);
  int64_t retried = 0;
  for (const auto& q : r.requests) retried += q.retries > 0;
  std::string o = "{\n";
  o += fmt::format("  \"scenario\": {},\n  \"workload\": {},\n  \"mode\": \"{}\",\n  \"overlap\": \"{}\",\n  \"link_model\": {},\n",
                   json_quote(r.scenario), json_quote(r.workload), to_string(r.mode), to_string(r.overlap), json_quote(r.link_model));
  o += fmt::format("  \"miss_model\": {},\n", json_quote(r.miss_model));
  o += "  \"figures_kind\": \"modelled: a discrete-event simulation over the cost model, whose terms are measured, calibrated, "
       "modelled or assumed as the run's cost-model line says\",\n";
  o += fmt::format("  \"prefill_mode\": \"{}\", \"ttft_modelled\": {}, \"admission_check\": \"{}\", \"clients\": {},\n", r.prefill_mode,
                   ttft_modelled(r) ? "true" : "false", to_string(r.admission), r.clients);
  o += fmt::format("  \"decode_gpus\": {}, \"decode_instances\": {}, \"prefill_instances\": {},\n", r.decode_gpus,
                   r.decode_instances, r.prefill_instances);
  o += fmt::format("  \"ranks\": {}, \"gpus_per_rank\": {}, \"collective_link\": {},\n", r.ranks, r.gpus_per_rank,
                   json_quote(r.collective_link));
  o += fmt::format("  \"pool_tokens_per_rank\": {{\"device\": {}, \"logical\": {}, \"host\": {}}},\n", r.device_pool_tokens,
                   r.logical_pool_tokens, r.host_pool_tokens);
  o += fmt::format("  \"requests\": {{\"arrivals\": {}, \"admitted\": {}, \"finished\": {}, \"rejected\": {}, \"retried\": {}, "
                   "\"host_alloc_failures\": {}}},\n", r.arrivals, r.admitted, r.finished, r.rejected, retried, r.aborts);
  o += fmt::format("  \"first_host_alloc_failure\": {},\n", json_quote(r.first_abort));
  o += fmt::format("  \"time_s\": {{\"last_arrival\": {:.6f}, \"makespan\": {:.6f}}},\n", ns_to_seconds(r.last_arrival), ns_to_seconds(r.makespan));
  o += fmt::format("  \"events\": {}, \"decode_steps\": {},\n", r.events, r.steps.size());
  o += fmt::format("  \"ttft_ms\": {},\n  \"tpot_ms\": {},\n  \"wait_ms\": {},\n  \"step_ms\": {},\n  \"batch_per_rank\": {},\n",
                   ttft_modelled(r) ? pct_json(s.ttft_ms) : std::string("\"not modelled: PD without a prefill section\""),
                   pct_json(s.tpot_ms), pct_json(s.wait_ms), pct_json(s.step_ms), pct_json(s.batch_per_gpu));
  o += "  \"tpot_meaning\": \"per request, decode time per output token from its first token (PD without a prefill section: "
       "from when its KV has arrived), queueing apart\", \"wait_meaning\": \"per request, arrival until it joins decode "
       "(admission queue, prefill, KV transfer)\",\n";
  o += fmt::format("  \"tpot_slo_ms\": {:.6g}, \"tpot_slo_attainment\": {:.6g},\n", sc.deployment.tpot_slo_ms, s.tpot_slo_attainment);
  o += fmt::format("  \"prefill_tokens_on_decode\": {}, \"wasted_decode_tokens\": {},\n", r.prefill_tokens, r.wasted_decode_tokens);
  o += fmt::format("  \"mtp_draft_tokens\": {}, \"mtp_acceptance\": {:.6g}, \"tokens_per_request_step\": {:.6g},\n",
                   sc.deployment.mtp_draft_tokens, sc.deployment.mtp_acceptance, tokens_per_request_step(r));
  o += fmt::format("  \"decode_tokens\": {}, \"tokens_per_s\": {:.6g}, \"tokens_per_s_per_gpu\": {:.6g}, \"tokens_per_s_per_instance\": {:.6g},\n",
                   r.decode_tokens, s.tokens_per_s, s.tokens_per_s_per_gpu, s.tokens_per_s_per_instance);
  o += fmt::format("  \"decode_tokens_per_s_per_instance\": {},\n  \"decode_tokens_per_s_meaning\": \"per instance step that "
                   "decoded, its requests / its length (decode-side throughput, no refill gaps); p50 = steady\",\n",
                   pct_json(s.decode_tokens_per_s));
  o += fmt::format("  \"hit_rate\": {:.6g}, \"selected\": {}, \"misses\": {},\n", s.hit_rate, r.selected, r.misses);
  o += fmt::format("  \"utilisation\": {{\"pcie_h2d\": {:.6g}, \"pcie_d2h\": {:.6g}, \"host_dram\": {:.6g}, \"rdma\": {:.6g}}},\n",
                   s.pcie_h2d_util, s.pcie_d2h_util, s.host_dram_util, s.rdma_util);
  o += fmt::format("  \"io_stall_s\": {:.6g}, \"io_stall_fraction\": {:.6g},\n", s.io_stall_s, s.io_stall_fraction);
  o += "  \"mean_step_ms\": {";
  for (int i = 0; i < kStepCostFieldCount; ++i)
    o += fmt::format("{}\"{}\": {:.6g}", i ? ", " : "", kStepCostFields[i], static_cast<double>(step_cost_field(s.mean_step, i)) * 1e-6);
  o += "},\n  \"total_gpu_s\": {";
  for (int i = 0; i < kStepCostFieldCount; ++i)
    o += fmt::format("{}\"{}\": {:.6g}", i ? ", " : "", kStepCostFields[i], ns_to_seconds(step_cost_field(r.gpu_cost_total, i)));
  o += "},\n";
  if (r.mode == KvMode::kDynamic)
    o += fmt::format("  \"dynamic_residency\": {{\"demotions\": {}, \"demoted_tokens\": {}, \"resident_graph_rank_steps\": {}, "
                     "\"swap_graph_rank_steps\": {}, \"requests_demoted\": {}}},\n", r.demotions, r.demoted_tokens,
                     r.resident_graph_steps, r.swap_graph_steps,
                     std::count_if(r.requests.begin(), r.requests.end(), [](const RequestOutcome& q) { return q.demoted_at_step >= 0; }));
  if (r.retraction != "none")
    o += fmt::format("  \"retraction\": {{\"rule\": \"{}\", \"retractions\": {}, \"requests_retracted\": {}, "
                     "\"retracted_tokens\": {}, \"recomputed_tokens\": {}, \"recompute_gpu_s\": {:.6g}, \"label\": \"modelled\"}},\n",
                     r.retraction, r.retractions,
                     std::count_if(r.requests.begin(), r.requests.end(), [](const RequestOutcome& q) { return q.retractions > 0; }),
                     r.retracted_tokens, r.recomputed_tokens, ns_to_seconds(r.recompute_ns));
  o += fmt::format("  \"bytes\": {{\"miss_h2d\": {:.17g}, \"admission_h2d\": {:.17g}, \"backup_d2h\": {:.17g}, \"staging_d2h\": {:.17g}, "
                   "\"rdma\": {:.17g}, \"row_bytes\": {:.17g}}},\n",
                   r.miss_flow_bytes, r.admission_h2d_bytes, r.backup_bytes, r.staging_bytes, r.rdma_bytes, r.row_bytes);
  o += fmt::format("  \"transfers\": {{\"miss_per_layer_h2d\": {}, \"staging_all_layer_d2h\": {}}},\n", r.miss_transfers,
                   r.staging_copies);
  o += fmt::format("  \"conservation\": {{\"ok\": true, \"miss_bytes_equal_misses_times_row_bytes_times_gpus_per_rank\": true, "
                   "\"admitted_equals_finished\": {}, \"no_page_leaked\": true, \"time_monotone\": true}}\n}}",
                   r.admitted == r.finished ? "true" : "false");
  return o;
}

std::string requests_csv(const ServingResult& r) {
  // Dynamic residency adds the state each request last decoded in and its step when demoted (-1: never).
  const bool dynamic = r.mode == KvMode::kDynamic;
  std::string o = "id,arrival_s,input_tokens,output_tokens,rank,ttft_ms,tpot_ms,e2e_s,queue_ms,transfer_ms,wait_ms,selected,misses,retries,rejected";
  o += dynamic ? ",residency,demoted_at_step\n" : "\n";
  for (const auto& q : r.requests) {
    const double ttft = q.first_token >= 0 ? static_cast<double>(q.first_token - q.arrival) * 1e-6 : -1;
    const double tpot = q.finish >= 0 && q.output_tokens > 1 && tpot_origin(q) >= 0 ? static_cast<double>(q.finish - tpot_origin(q)) * 1e-6 / (q.output_tokens - 1) : -1;
    const double e2e = q.finish >= 0 ? ns_to_seconds(q.finish - q.arrival) : -1;
    // Queue: until its prefill starts (PD without a prefill section: until it is admitted, its KV then sent);
    // transfer: from its first token (or admission) until it joins decode; wait: arrival until it joins decode.
    const SimTime served = q.prefill_start >= 0 ? q.prefill_start : q.admitted;
    const double queue = served >= 0 ? static_cast<double>(served - q.arrival) * 1e-6 : -1;
    const SimTime sent = q.first_token >= 0 ? q.first_token : q.admitted;
    const double xfer = q.ready >= 0 && sent >= 0 ? static_cast<double>(q.ready - sent) * 1e-6 : -1;
    const double wait = q.ready >= 0 ? static_cast<double>(q.ready - q.arrival) * 1e-6 : -1;
    o += fmt::format("{},{:.9f},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{},{},{},{}", q.id, ns_to_seconds(q.arrival),
                     q.input_tokens, q.output_tokens, q.gpu, ttft, tpot, e2e, queue, xfer, wait, q.selected, q.misses, q.retries,
                     q.rejected ? 1 : 0);
    if (dynamic) o += fmt::format(",{},{}", to_string(q.residency), q.demoted_at_step);
    o += "\n";
  }
  return o;
}

std::string steps_csv(const ServingResult& r) {
  std::string o = "instance,step,start_s,duration_ms,requests,in_flight,prefill_ms,prefill_tokens,selected,misses,h2d_bytes,backup_bytes";
  for (int i = 0; i < kStepCostFieldCount; ++i) o += fmt::format(",{}_ms", kStepCostFields[i]);
  // Dynamic residency: requests in swap mode, demotions made for the step, ranks on the swap graph.
  const bool dynamic = r.mode == KvMode::kDynamic;
  o += dynamic ? ",swap_requests,demotions,swap_graph_ranks\n" : "\n";
  for (const auto& s : r.steps) {
    o += fmt::format("{},{},{:.9f},{:.6f},{},{},{:.6f},{},{},{},{:.0f},{:.0f}", s.instance, s.index, ns_to_seconds(s.start),
                     static_cast<double>(s.end - s.start) * 1e-6, s.requests, s.in_flight, static_cast<double>(s.prefill) * 1e-6,
                     s.prefill_tokens, s.selected, s.misses, s.h2d_bytes, s.backup_bytes);
    for (int i = 0; i < kStepCostFieldCount; ++i) o += fmt::format(",{:.6f}", static_cast<double>(step_cost_field(s.slowest, i)) * 1e-6);
    if (dynamic) o += fmt::format(",{},{},{}", s.swap_requests, s.demotions, s.swap_graph_ranks);
    o += "\n";
  }
  return o;
}

}  // namespace hisparse::sim

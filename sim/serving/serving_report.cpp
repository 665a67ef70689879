// @brief Summary arithmetic and the JSON/CSV text of a serving run.
#include "sim/serving/serving_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/io/json_writer.h"
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

constexpr JsonWriter::Layout kInline = JsonWriter::Layout::kInline;

void pct_json(JsonWriter& j, const Percentiles& p) {
  j.begin_object(kInline).key("p50").general(p.p50, 6).key("p90").general(p.p90, 6).key("p99").general(p.p99, 6);
  j.key("mean").general(p.mean, 6).key("max").general(p.max, 6).member("count", p.count).end_object();
}

}  // namespace

SimTime tpot_origin(const RequestOutcome& o) { return o.first_token >= 0 ? o.first_token : o.ready; }

double tokens_per_request_step(const ServingResult& r) {
  return r.request_steps > 0 ? static_cast<double>(r.decode_tokens) / static_cast<double>(r.request_steps) : 0;
}

bool ttft_modelled(const ServingResult& r) { return r.prefill_mode != "pd-external"; }

double prefix_hit_rate(const ServingResult& r) {
  return r.prefix_input_tokens > 0 ? static_cast<double>(r.prefix_hit_tokens) / static_cast<double>(r.prefix_input_tokens) : 0;
}

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

namespace {

/// summary.json's head: what ran (scenario, workload, mode, layout) and how many requests went where.
void summary_head(JsonWriter& j, const ServingResult& r) {
  int64_t retried = 0;
  for (const auto& q : r.requests) retried += q.retries > 0;
  j.member("scenario", r.scenario).member("workload", r.workload).member("mode", to_string(r.mode));
  j.member("overlap", to_string(r.overlap)).member("link_model", r.link_model).member("miss_model", r.miss_model);
  j.member("figures_kind", "modelled: a discrete-event simulation over the cost model, whose terms are measured, "
                           "calibrated, modelled or assumed as the run's cost-model line says");
  j.member("prefill_mode", r.prefill_mode).same_line().member("ttft_modelled", ttft_modelled(r));
  j.same_line().member("admission_check", to_string(r.admission)).same_line().member("clients", r.clients);
  j.member("decode_gpus", r.decode_gpus).same_line().member("decode_instances", r.decode_instances);
  j.same_line().member("prefill_instances", r.prefill_instances);
  j.member("ranks", r.ranks).same_line().member("gpus_per_rank", r.gpus_per_rank);
  j.same_line().member("collective_link", r.collective_link);
  j.key("pool_tokens_per_rank").begin_object(kInline).member("device", r.device_pool_tokens);
  j.member("logical", r.logical_pool_tokens).member("host", r.host_pool_tokens).end_object();
  j.key("requests").begin_object(kInline).member("arrivals", r.arrivals).member("admitted", r.admitted);
  j.member("finished", r.finished).member("rejected", r.rejected).member("retried", retried);
  j.member("host_alloc_failures", r.aborts).end_object().member("first_host_alloc_failure", r.first_abort);
  j.key("time_s").begin_object(kInline).key("last_arrival").fixed(ns_to_seconds(r.last_arrival), 6);
  j.key("makespan").fixed(ns_to_seconds(r.makespan), 6).end_object();
  j.member("events", r.events).same_line().member("decode_steps", static_cast<uint64_t>(r.steps.size()));
}

/// summary.json's figures: latency percentiles, throughput, hit rate, utilisation and the step-cost means.
void summary_figures(JsonWriter& j, const ServingResult& r, const Scenario& sc, const ServingSummary& s) {
  j.key("ttft_ms");
  if (ttft_modelled(r)) pct_json(j, s.ttft_ms); else j.string("not modelled: PD without a prefill section");
  for (const auto& [key, p] : {std::pair<const char*, const Percentiles*>{"tpot_ms", &s.tpot_ms}, {"wait_ms", &s.wait_ms},
                               {"step_ms", &s.step_ms}, {"batch_per_rank", &s.batch_per_gpu}}) {
    j.key(key);
    pct_json(j, *p);
  }
  j.member("tpot_meaning", "per request, decode time per output token from its first token (PD without a prefill "
                           "section: from when its KV has arrived), queueing apart");
  j.same_line().member("wait_meaning", "per request, arrival until it joins decode (admission queue, prefill, KV transfer)");
  j.key("tpot_slo_ms").general(sc.deployment.tpot_slo_ms, 6);
  j.same_line().key("tpot_slo_attainment").general(s.tpot_slo_attainment, 6);
  j.member("prefill_tokens_on_decode", r.prefill_tokens).same_line().member("wasted_decode_tokens", r.wasted_decode_tokens);
  j.member("mtp_draft_tokens", sc.deployment.mtp_draft_tokens);
  j.same_line().key("mtp_acceptance").general(sc.deployment.mtp_acceptance, 6);
  j.same_line().key("tokens_per_request_step").general(tokens_per_request_step(r), 6);
  j.member("decode_tokens", r.decode_tokens).same_line().key("tokens_per_s").general(s.tokens_per_s, 6);
  j.same_line().key("tokens_per_s_per_gpu").general(s.tokens_per_s_per_gpu, 6);
  j.same_line().key("tokens_per_s_per_instance").general(s.tokens_per_s_per_instance, 6);
  j.key("decode_tokens_per_s_per_instance");
  pct_json(j, s.decode_tokens_per_s);
  j.member("decode_tokens_per_s_meaning", "per instance step that decoded, its requests / its length (decode-side "
                                          "throughput, no refill gaps); p50 = steady");
  j.key("hit_rate").general(s.hit_rate, 6).same_line().member("selected", r.selected);
  j.same_line().member("misses", r.misses);
  j.key("utilisation").begin_object(kInline).key("pcie_h2d").general(s.pcie_h2d_util, 6);
  j.key("pcie_d2h").general(s.pcie_d2h_util, 6).key("host_dram").general(s.host_dram_util, 6);
  j.key("rdma").general(s.rdma_util, 6).end_object();
  j.key("io_stall_s").general(s.io_stall_s, 6).same_line().key("io_stall_fraction").general(s.io_stall_fraction, 6);
  j.key("mean_step_ms").begin_object(kInline);
  for (int i = 0; i < kStepCostFieldCount; ++i)
    j.key(kStepCostFields[i]).general(static_cast<double>(step_cost_field(s.mean_step, i)) * 1e-6, 6);
  j.end_object().key("total_gpu_s").begin_object(kInline);
  for (int i = 0; i < kStepCostFieldCount; ++i)
    j.key(kStepCostFields[i]).general(ns_to_seconds(step_cost_field(r.gpu_cost_total, i)), 6);
  j.end_object();
}

/// summary.json's tail: dynamic residency and retraction when they ran, the bytes moved and the conservation checks.
void summary_tail(JsonWriter& j, const ServingResult& r) {
  if (r.mode == KvMode::kDynamic) {
    j.key("dynamic_residency").begin_object(kInline).member("demotions", r.demotions);
    j.member("demoted_tokens", r.demoted_tokens).member("resident_graph_rank_steps", r.resident_graph_steps);
    j.member("swap_graph_rank_steps", r.swap_graph_steps);
    j.member("requests_demoted", static_cast<int64_t>(std::count_if(r.requests.begin(), r.requests.end(),
                                                                    [](const RequestOutcome& q) { return q.demoted_at_step >= 0; })));
    j.end_object();
  }
  if (r.v2_coordinator == "current") {
    // admit_request's outcomes (cpu_ref::V2Admit order), re-admissions after a retraction included.
    const auto& a = r.v2_admissions;
    j.key("v2_admission").begin_object(kInline).member("coordinator", r.v2_coordinator).member("v2", a[0]);
    j.member("standard_no_whole_page", a[1]).member("standard_shorter_than_buffer", a[2]);
    j.member("standard_host_capacity", a[3]).member("standard_indexer_pages", a[4]).member("standard_temp_buffer", a[5]);
    if (r.v2_partial_eviction)  // leaf-first eviction of the prefixes staging left in device rows (colocated prefill)
      j.member("evictions", r.v2_evictions).member("evicted_tokens", r.v2_evicted_tokens)
          .member("evicted_share_mean", r.v2_evicted_share_mean);
    j.end_object();
  }
  if (r.retraction != "none") {
    j.key("retraction").begin_object(kInline).member("rule", r.retraction).member("retractions", r.retractions);
    j.member("requests_retracted", static_cast<int64_t>(std::count_if(r.requests.begin(), r.requests.end(),
                                                                      [](const RequestOutcome& q) { return q.retractions > 0; })));
    j.member("retracted_tokens", r.retracted_tokens).member("recomputed_tokens", r.recomputed_tokens);
    j.key("recompute_gpu_s").general(ns_to_seconds(r.recompute_ns), 6).member("label", "modelled").end_object();
  }
  if (r.prefix_cache) {
    j.key("prefix_cache").begin_object(kInline).member("pool", r.prefix_cache_pool);
    j.member("input_tokens", r.prefix_input_tokens).member("hit_tokens", r.prefix_hit_tokens);
    j.key("hit_rate").general(prefix_hit_rate(r), 6).member("prefill_tokens_saved", r.prefix_hit_tokens);
    j.member("inserted_pages", r.prefix_inserted_pages).member("evicted_pages", r.prefix_evicted_pages);
    j.member("peak_tokens_per_rank", r.prefix_peak_tokens_per_rank);
    j.key("mean_tokens_per_rank").general(r.prefix_mean_tokens_per_rank, 6);
    j.key("peak_bytes_per_rank").general(static_cast<double>(r.prefix_peak_tokens_per_rank) * r.prefix_bytes_per_token, 6);
    j.key("mean_bytes_per_rank").general(r.prefix_mean_tokens_per_rank * r.prefix_bytes_per_token, 6);
    j.member("label", "modelled: hits from the workload's prefix blocks; bytes = tokens x the pool's bytes per token")
        .end_object();
  }
  if (r.sessions > 0)
    j.key("sessions").begin_object(kInline).member("sessions", r.sessions).member("held_turns", r.held_turns).end_object();
  // Byte totals at 17 significant digits: they read back exactly.
  j.key("bytes").begin_object(kInline).key("miss_h2d").general(r.miss_flow_bytes, 17);
  j.key("admission_h2d").general(r.admission_h2d_bytes, 17).key("backup_d2h").general(r.backup_bytes, 17);
  j.key("staging_d2h").general(r.staging_bytes, 17).key("rdma").general(r.rdma_bytes, 17);
  j.key("row_bytes").general(r.row_bytes, 17).end_object();
  j.key("transfers").begin_object(kInline).member("miss_per_layer_h2d", r.miss_transfers);
  j.member("staging_all_layer_d2h", r.staging_copies).end_object();
  j.key("conservation").begin_object(kInline).member("ok", true);
  j.member("miss_bytes_equal_misses_times_row_bytes_times_gpus_per_rank", true);
  j.member("admitted_equals_finished", r.admitted == r.finished).member("no_page_leaked", true);
  j.member("time_monotone", true).end_object();
}

}  // namespace

std::string summary_json(const ServingResult& r, const Scenario& sc) {
  const ServingSummary s = summarize(r, sc);
  JsonWriter j(2);
  j.begin_object();
  summary_head(j, r);
  summary_figures(j, r, sc, s);
  summary_tail(j, r);
  j.end_object();
  return j.str();
}

std::string requests_csv(const ServingResult& r) {
  // Dynamic residency adds the state each request last decoded in and its step when demoted (-1: never).
  const bool dynamic = r.mode == KvMode::kDynamic;
  std::string o = "id,arrival_s,input_tokens,output_tokens,rank,ttft_ms,tpot_ms,e2e_s,queue_ms,transfer_ms,wait_ms,selected,misses,retries,rejected";
  o += dynamic ? ",residency,demoted_at_step" : "";
  o += r.prefix_cache ? ",cached_tokens\n" : "\n";  // the prefix cache: prompt tokens found cached, not prefilled
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
    if (r.prefix_cache) o += fmt::format(",{}", q.cached_tokens);
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

// @brief The serving engine's construction, topology and event dispatch (the concepts live in sim/serving/*.cpp,
// listed in sim/serving/engine.h): arrivals → admission (the rank's cpu_ref pools, max_running_requests) → prefill
// (PD + RDMA, or colocated chunks + staging) → lockstep decode steps → completion → conservation.
#include "sim/serving/serving_simulation.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/pipeline_stages.h"
#include "sim/capacity/admission_pools.h"
#include "sim/network/link_model.h"
#include "sim/miss/miss_surface.h"
#include "sim/serving/engine.h"

namespace hisparse::sim {

const char* to_string(AdmissionCheck c) {
  switch (c) {
    case AdmissionCheck::kPools: return "pools";
    case AdmissionCheck::kLogicalOnly: return "logical";
    case AdmissionCheck::kV2: return "v2";
  }
  return "?";
}

AdmissionCheck parse_admission_check(const std::string& text, const std::string& where) {
  if (text == "pools") return AdmissionCheck::kPools;
  if (text == "logical") return AdmissionCheck::kLogicalOnly;
  if (text == "v2") return AdmissionCheck::kV2;
  throw_error("{}: admission check '{}' is unknown (expected pools, logical or v2)", where, text);
}

StatisticalMissParams default_miss_params(const Scenario& s) {
  // Measured on real top-k traces (default_miss_surface: by the scenario's top_k), sglang-lru at its H/K.
  return miss_params_from_surface(s, load_miss_surface(default_miss_surface(s.deployment.hisparse.top_k)),
                                  "sglang-lru");
}

namespace serving {

namespace {

Scenario prefill_on_decode(const Scenario& s) {
  // Colocated: the decode instance's GPUs run the prefill pass (DecodeCostModel::prefill_time divides by prefill.gpus).
  Scenario out = s;
  out.deployment.prefill = s.deployment.decode;
  out.deployment.prefill.count = 0;
  return out;
}

}  // namespace

Engine::Engine(const Scenario& sc, const Workload& w, const ServingOptions& opt, ChromeTrace* trace)
    : sc_(sc), w_(w), opt_(opt), trace_(trace), hisparse_(uses_host_pool(opt.mode)),
      dynamic_(opt.mode == KvMode::kDynamic),
      layout_(serving_ranks(sc)), step_(pipeline_stage_scenario(sc), opt.cost, opt.mode),
      cost_(step_.cost()),
      prefill_scenario_(prefill_on_decode(sc)), prefill_cost_(prefill_scenario_, opt.cost, hisparse_),
      net_(sim_, make_link_model(opt.cost.link_model)) {
  handler_ = sim_.add_handler(this);
  const DeploymentSpec& d = sc.deployment;
  pp_ = std::max(1, d.decode.pp);
  if (pp_ > 1) stage_link_ = stage_link(sc, opt.cost);
  if (hisparse_) {
    if (opt.miss_model) miss_ = opt.miss_model;
    else { own_miss_ = make_statistical_miss_model(default_miss_params(sc)); miss_ = own_miss_.get(); }
  }
  if (!d.pd_disaggregation) prefill_mode_ = PrefillMode::kColocated;
  else prefill_mode_ = d.prefill.count > 0 ? PrefillMode::kPd : PrefillMode::kPdExternal;
  if (d.engine == "vllm") retraction_ = Retraction::kVllm;
  else if (d.decode_reserve_ratio < 1) retraction_ = Retraction::kSglang;
  // HiSparse retracts under the current V2 coordinator's admission only: a retracted V2 request comes back through
  // admit_request with its prefix recomputed and an empty buffer (sim/serving/admission_v2_coordinator.cpp).
  const bool v2_current = opt.admission == AdmissionCheck::kV2 && opt.v2_coordinator == V2Coordinator::kCurrent;
  const bool retract_ok = !hisparse_ || (v2_current && !dynamic_ && retraction_ == Retraction::kSglang);
  if (retraction_ != Retraction::kNone && (!retract_ok || prefill_mode_ != PrefillMode::kColocated))
    throw_error("{}: {} is modelled in full-KV mode, or HiSparse mode under --admission v2 --v2-coordinator current, "
                "with colocated prefill only (mode {}, pd_disaggregation {}); expected --mode full (or hisparse with "
                "--admission v2) and pd_disaggregation: false", sc.source,
                retraction_ == Retraction::kVllm ? "engine: vllm (recompute preemption)"
                                                 : fmt::format("decode_reserve_ratio {} (decode retraction)", d.decode_reserve_ratio),
                to_string(opt.mode), d.pd_disaggregation);
  K_ = hisparse_ ? d.hisparse.top_k : sc.model.top_k;
  // DeepSeek-V4 (core/dsv4_pool_budget.h): the pools count C4 entries, one per 4 tokens; the engine's token pools hold
  // 4 tokens per entry, so its buffer is 4 × H tokens (H + page / 4 entries with the page).
  const int c4 = cost_.compress_ratio();
  H_ = d.hisparse.device_buffer_size * c4;
  page_ = std::max(1, d.page_size);
  row_ = cost_.kv_row_bytes();
  idx_ = cost_.indexer_key_bytes();
  kv_layers_ = cost_.kv_layers();
  idx_layers_ = sc.model.indexer_key_layers();
  if (sc.model.is_compressed()) {
    offload_bytes_per_token_ = cost_.offload_layers() * row_ / 4;
    kv_bytes_per_token_ = offload_bytes_per_token_ + sc.model.compressed_layer_count(128) * row_ / 128;
    idx_bytes_per_token_ = cost_.offload_layers() * idx_ / 4;
  } else {
    kv_bytes_per_token_ = offload_bytes_per_token_ = kv_layers_ * row_;
    idx_bytes_per_token_ = idx_layers_ * idx_;
  }
  gpr_ = layout_.gpus_per_rank;
  // Admission sizing: the capacity model's pools (sim/capacity/admission_pools.h).
  const AdmissionPools pools = admission_pools(compute_memory_budget(sc, {}), hisparse_, c4);
  pool_sizes_.page = page_;
  pool_sizes_.device = pools.device;
  pool_sizes_.logical = pools.logical;
  pool_sizes_.host = pools.host;
  pool_sizes_.dsv4 = dsv4_admission_pools(sc, hisparse_);  // DeepSeek-V4's other pools (none for other models)
  const int64_t dev = hisparse_ ? pool_sizes_.device : pool_sizes_.logical;
  if (dev < page_)
    throw_error("{}: no HBM left for KV ({} tokens per rank in {} mode, memory.{}_pool_tokens)", sc.source, dev,
                to_string(opt.mode), hisparse_ ? "device" : "full");
  if (hisparse_ && pool_sizes_.host < page_)
    throw_error("{}: host pool of {} tokens per rank holds no page of {} (memory.host_pool_tokens)", sc.source,
                pool_sizes_.host, page_);
  if (opt.clients.concurrency < 0) throw_error("closed-loop clients: concurrency {} must be >= 0", opt.clients.concurrency);
  if (opt.clients.think_time < 0) throw_error("closed-loop clients: think time {} ns must be >= 0", opt.clients.think_time);
  if (opt.max_retries < 0) throw_error("max_retries {} must be >= 0", opt.max_retries);
  admission_ = make_admission_policy(opt.admission, hisparse_, opt.v2_coordinator);
  build_topology();
  enable_prefix_caches();
  if (opt.clients.concurrency > 0) {
    if (w.requests.empty()) throw_error("workload {}: closed-loop clients need at least one request for the mix", w.name);
    to_send_ = opt.clients.requests > 0 ? opt.clients.requests : static_cast<int64_t>(w.requests.size());
    specs_.reserve(static_cast<size_t>(to_send_));
    outcomes_.reserve(static_cast<size_t>(to_send_));
    rt_.reserve(static_cast<size_t>(to_send_));
    link_closed_loop_sessions();
  } else {
    specs_ = w.requests;
    outcomes_.resize(specs_.size());
    rt_.resize(specs_.size());
    for (size_t i = 0; i < specs_.size(); ++i) {
      const auto& r = specs_[i];
      auto& o = outcomes_[i];
      o.id = r.id; o.input_tokens = r.input_tokens; o.output_tokens = r.output_tokens; o.arrival = r.arrival;
    }
    link_sessions();
  }
}

ServingResult Engine::run() {
  if (opt_.clients.concurrency > 0) {
    for (int32_t c = 0; c < opt_.clients.concurrency && to_send_ > 0; ++c) issue(0, c);
  } else if (!specs_.empty()) {
    sim_.schedule(specs_[0].arrival, handler_, kArrival, 0);
  }
  sim_.run(opt_.stop_after);
  return finish();
}

void Engine::on_event(Simulator& sim, const Event& e) {
  const SimTime now = sim.now();
  switch (e.kind) {
    case kArrival: arrive(e.arg); break;
    case kPrefillDone: prefill_done(static_cast<int32_t>(e.arg)); break;
    case kPhaseA:
    case kIoStart: {
      Rank& g = ranks_[static_cast<size_t>(e.arg)];
      g.step.a_end = now;
      if (g.step.work.resident) {
        // The resident graph copies nothing in and does not wait for the backup before its forward.
        g.step.io_start = g.step.io_end = now;
        g.step.io_done = true;
        maybe_done(static_cast<int32_t>(e.arg));
      } else if (g.step.backup_pending > 0) {
        g.step.waiting_backup = true;
      } else {
        begin_io(g, static_cast<int32_t>(e.arg));
      }
      break;
    }
    case kComputeDone: {
      Rank& g = ranks_[static_cast<size_t>(e.arg)];
      g.step.compute_done = true;
      g.step.compute_end = now;
      if (overlap() == OverlapMode::kNone) rank_finished(static_cast<int32_t>(e.arg));
      else maybe_done(static_cast<int32_t>(e.arg));
      break;
    }
    case kGpuDone: rank_finished(static_cast<int32_t>(e.arg)); break;
    case kStepEnd: step_end(static_cast<int32_t>(e.arg)); break;
    case kDecodeStart: start_decode(static_cast<int32_t>(e.arg)); break;
    case kRelease: enter(e.arg); break;
    default: throw_error("serving engine: unknown event kind {}", e.kind);
  }
}

void Engine::on_flow_done(Simulator& sim, int64_t c, const FlowDone& d) {
  const SimTime now = sim.now();
  const int64_t idx = c & ((int64_t{1} << 56) - 1);
  switch (static_cast<FlowType>(c >> 56)) {
    case kRdma: {
      result_.rdma_bytes += d.bytes;
      Rank& g = rank_of(idx);
      if (trace_) trace_->span(fmt::format("rdma r{}", idx), "rdma", 200 + g.instance(), g.links.nic.empty() ? 0 : g.links.nic[0], d.start, now);
      if (rt_[static_cast<size_t>(idx)].flow_done()) rdma_done(idx);
      break;
    }
    case kAdmitH2d:
      result_.admission_h2d_bytes += d.bytes;
      if (rt_[static_cast<size_t>(idx)].flow_done()) make_ready(idx);
      break;
    case kStaging:
      result_.staging_bytes += d.bytes;
      if (rt_[static_cast<size_t>(idx)].flow_done()) staging_done(idx);
      break;
    case kMissFlow: {
      result_.miss_flow_bytes += d.bytes;
      Rank& g = ranks_[static_cast<size_t>(idx)];
      if (--g.step.io_pending > 0) break;
      g.step.io_end = now;
      g.step.io_done = true;
      maybe_done(static_cast<int32_t>(idx));
      break;
    }
    case kBackup: {
      result_.backup_bytes += d.bytes;
      Rank& g = ranks_[static_cast<size_t>(idx)];
      if (--g.step.backup_pending > 0) break;
      g.step.backup_end = now;
      g.step.cost.backup = now - g.step.start;
      if (!g.step.waiting_backup) break;
      g.step.waiting_backup = false;
      if (g.step.work.resident) maybe_done(static_cast<int32_t>(idx));
      else begin_io(g, static_cast<int32_t>(idx));
      break;
    }
    default: throw_error("serving engine: unknown flow cookie {}", c);
  }
}

void Engine::start_rank_flows(const Rank& r, double bytes, SimTime latency, double max_rate, bool h2d, bool d2h,
                              bool dram, bool nic, int64_t cookie_value) {
  for (int32_t k = 0; k < gpr_; ++k) {
    FlowSpec f;
    f.bytes = bytes;
    f.latency = latency;
    if (max_rate > 0) f.max_rate = max_rate;
    if (nic && !r.links.nic.empty()) f.add_link(r.links.nic[static_cast<size_t>(k)]);
    if (h2d) f.add_link(r.links.h2d[static_cast<size_t>(k)]);
    if (d2h) f.add_link(r.links.d2h[static_cast<size_t>(k)]);
    if (dram) f.add_link(r.links.dram[static_cast<size_t>(k)]);
    if (f.num_links == 0 && !(f.max_rate > 0)) f.max_rate = sc_.hardware.pcie.h2d_bulk_bytes_per_s;
    net_.start(f, this, cookie_value);
  }
}

void Engine::build_topology() {
  const DeploymentSpec& d = sc_.deployment;
  const HardwareSpec& hw = sc_.hardware;
  LinkModel& m = net_.model();
  const int32_t per = layout_.layout.gpus;
  const int32_t per_node = std::max(1, std::min(per, hw.gpus_per_node));
  const int32_t numa = std::max(1, hw.numa_nodes);
  const int32_t nics = hw.nic.count;
  if (prefill_mode_ != PrefillMode::kColocated && (nics <= 0 || !(hw.nic.bits_per_s > 0)))
    throw_error("{}: pd_disaggregation needs hardware nic.count and nic.bits_per_s > 0 (the KV arrives by RDMA)", sc_.source);
  if (!(hw.pcie.h2d_bulk_bytes_per_s > 0) || !(hw.pcie.d2h_bulk_bytes_per_s > 0))
    throw_error("{}: hardware pcie h2d/d2h_bulk_bytes_per_s must be > 0", sc_.source);
  if (!(hw.host_dram_bytes_per_s_per_numa > 0)) throw_error("{}: hardware host_dram_bytes_per_s_per_numa must be > 0", sc_.source);
  for (int32_t i = 0; i < std::max(1, d.decode.count); ++i) {
    Instance inst;
    inst.first_rank = static_cast<int32_t>(ranks_.size());
    inst.ranks = layout_.layout.ranks;
    // Per node of the instance: its NUMA nodes' DRAM and its NICs; per GPU: its PCIe links. A host pool on the other
    // socket (host_pool_numa: remote) reaches its GPUs at cross_node_factor of the node's DRAM rate, as the closed
    // form's host path (sim/cost/terms/transfer_granularity.h).
    const double dram_rate =
        hw.host_dram_bytes_per_s_per_numa * (d.host_pool_remote_numa ? hw.numa_cross_node_factor : 1.0);
    std::vector<int32_t> dram, nic;
    for (int32_t nd = 0; nd < layout_.nodes; ++nd) {
      for (int32_t k = 0; k < numa; ++k)
        dram.push_back(m.add_link(layout_.nodes > 1 ? fmt::format("d{}.n{}.dram{}", i, nd, k) : fmt::format("d{}.dram{}", i, k),
                                  dram_rate));
      for (int32_t k = 0; k < nics; ++k)
        nic.push_back(m.add_link(layout_.nodes > 1 ? fmt::format("d{}.n{}.nic{}", i, nd, k) : fmt::format("d{}.nic{}", i, k),
                                 hw.nic.bits_per_s / 8));
    }
    for (int32_t rk = 0; rk < inst.ranks; ++rk) {
      std::unique_ptr<AdmissionLedger> ledger;
      std::unique_ptr<cpu_ref::HiSparseV2Admission> v2;
      if (hisparse_ && opt_.admission == AdmissionCheck::kV2 && opt_.v2_coordinator == V2Coordinator::kCurrent) {
        // admit_request's quotas: the host pool for reserved prefixes, the expanded indexer pages (unbounded unless
        // the caller sizes them: the capacity model does not), the H-token temp buffer.
        const int64_t indexer = opt_.v2_indexer_pages < 0 ? (int64_t{1} << 40) : opt_.v2_indexer_pages;
        v2 = std::make_unique<cpu_ref::HiSparseV2Admission>(cpu_ref::V2AdmissionSizes{
            static_cast<int32_t>(page_), H_, pool_sizes_.host, indexer, V2Coordinator::kCurrent});
      } else if (hisparse_ && opt_.admission == AdmissionCheck::kV2) {
        // Colocated prefill writes a chunk before its request is admitted to HiSparse; PD lands the prompt whole.
        const int64_t chunk = prefill_mode_ == PrefillMode::kColocated ? std::max(1, opt_.cost.prefill_chunk_tokens) : 0;
        ledger = std::make_unique<AdmissionLedger>(
            LedgerSizes{pool_sizes_.host, pool_sizes_.device, int64_t{H_} + page_, page_, chunk});
      }
      Rank r(i, rk, std::make_unique<RankPools>(pool_sizes_), std::move(ledger));
      // Colocated prefill under static residency: staging leaves the prefix in device rows, HiCache evicts it leaf
      // first when the pool is short (PD lands the prompt in the host pool; dynamic residency keeps rows anyway).
      if (v2 && prefill_mode_ == PrefillMode::kColocated && !dynamic_)
        r.set_v2_prefixes(std::make_unique<V2PrefixEviction>(std::max(1, opt_.cost.prefill_chunk_tokens), page_));
      r.set_v2(std::move(v2));
      for (int32_t k = 0; k < gpr_; ++k) {
        const int32_t g = rk * gpr_ + k;                  // GPU within the instance
        const int32_t node = g / per_node, in_node = g % per_node;
        r.links.h2d.push_back(m.add_link(fmt::format("d{}.gpu{}.h2d", i, g), hw.pcie.h2d_bulk_bytes_per_s));
        r.links.d2h.push_back(m.add_link(fmt::format("d{}.gpu{}.d2h", i, g), hw.pcie.d2h_bulk_bytes_per_s));
        r.links.dram.push_back(dram[static_cast<size_t>(node * numa + in_node * numa / per_node)]);
        if (nics > 0) r.links.nic.push_back(nic[static_cast<size_t>(node * nics + in_node * nics / per_node)]);
      }
      if (trace_) {
        trace_->name_thread(1 + i, rk * 10 + 0, fmt::format("rank{} compute", rk));
        trace_->name_thread(1 + i, rk * 10 + 1, fmt::format("rank{} pcie h2d", rk));
        trace_->name_thread(1 + i, rk * 10 + 2, fmt::format("rank{} pcie d2h (backup)", rk));
      }
      ranks_.push_back(std::move(r));
    }
    if (trace_) {
      trace_->name_process(1 + i, fmt::format("decode instance {} ({})", i, to_string(opt_.mode)));
      trace_->name_process(200 + i, fmt::format("decode instance {} RDMA in", i));
    }
    instances_.push_back(inst);
  }
  if (prefill_mode_ == PrefillMode::kPd) {
    prefill_.resize(static_cast<size_t>(d.prefill.count));
    if (trace_)
      for (size_t p = 0; p < prefill_.size(); ++p) trace_->name_process(100 + static_cast<int>(p), fmt::format("prefill instance {}", p));
  }
}

}  // namespace serving

ServingResult run_serving(const Scenario& scenario, const Workload& workload, const ServingOptions& options,
                          ChromeTrace* trace) {
  serving::Engine e(scenario, workload, options, trace);
  return e.run();
}

}  // namespace hisparse::sim

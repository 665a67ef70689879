// @brief Lockstep decode steps of an instance's ranks: [colocated prefill pass] → per rank phase A, miss copy,
// attention (+ the attention-TP all-reduce) → barrier → MoE + all-to-all + LM head → step end. Every duration comes
// from the one step model (sim/cost/step/step_estimate.h); this file only times its copies as flows on shared links.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/serving/engine.h"

namespace hisparse::sim::serving {

void Engine::start_step(int32_t ii) {
  Instance& inst = instances_[static_cast<size_t>(ii)];
  const SimTime now = sim_.now();
  bool any = false;
  for (int32_t k = 0; k < inst.ranks; ++k) {
    Rank& g = ranks_[static_cast<size_t>(inst.first_rank + k)];
    any = g.merge_joining() || any;
  }
  const SimTime pass = prefill_mode_ == PrefillMode::kColocated ? plan_prefill(inst) : 0;
  inst.stepping = any || pass > 0;
  if (!inst.stepping) return;
  inst.step_start = now;
  inst.prefill = pass;
  inst.in_flight = static_cast<int32_t>(in_flight_);
  if (pass > 0) sim_.schedule(now + pass, handler_, kDecodeStart, ii);
  else start_decode(ii);
}

void Engine::start_decode(int32_t ii) {
  Instance& inst = instances_[static_cast<size_t>(ii)];
  const SimTime now = sim_.now();
  if (inst.prefill > 0) prefill_chunks_done(inst);
  inst.decode_start = now;
  inst.outstanding = 0;
  for (int32_t k = 0; k < inst.ranks; ++k) {
    const int32_t gi = inst.first_rank + k;
    Rank& g = ranks_[static_cast<size_t>(gi)];
    if (retraction_ != Retraction::kNone) grow_or_retract(g);  // the step's new pages, or retraction
    if (hisparse_ && admission_->lands_in_decode()) {
      // The eager backup of token n − 2 needs a host row: a new host page every page_size tokens, which can fail.
      const std::vector<int64_t> running = g.running();
      for (int64_t i : running) {
        const RequestState& rt = rt_[static_cast<size_t>(i)];
        if (rt.step() > 0) host_alloc(i, rt.n() - 1, "decode backup");
      }
    }
    g.step.active = !g.running().empty();
    if (!g.step.active) continue;
    ++inst.outstanding;
    plan_rank(g);
    g.step.begin(now);
    if (g.step.backup_bytes > 0) {
      const CopyCall backup = step_.backup(g.step.backups);
      g.step.backup_pending = gpr_;
      start_rank_flows(g, backup.bytes, backup.latency, backup.max_rate, false, true, true, false, cookie(kBackup, gi));
    }
    if (overlap() == OverlapMode::kNone) {
      sim_.schedule(now + g.step.work.io_ready, handler_, kPhaseA, gi);
    } else {
      sim_.schedule(now + g.step.work.io_ready, handler_, kIoStart, gi);
      sim_.schedule(now + g.step.work.compute, handler_, kComputeDone, gi);
    }
  }
  if (inst.outstanding == 0) {
    // A step of prefill only: no rank decodes.
    inst.barrier = now;
    inst.moe_time = inst.draft_time = 0;
    sim_.schedule(now, handler_, kStepEnd, ii);
  }
}

void Engine::plan_rank(Rank& g) {
  GpuBatch b;
  g.step.selected = g.step.misses = g.step.backups = 0;
  g.step.demotions = g.step.swap_requests = 0;
  if (dynamic_) grow_residents(g);
  // MTP: each of a request's 1 + d positions selects and misses as a decode step (sim/cost/step/speculative.h).
  const int64_t pos = step_.positions();
  // Pipeline parallelism: a stage prices the largest micro-batch (SGLang's pp micro-batches, sim/cost/step/pipeline_step.h).
  g.step.micro_batch = micro_batch_size(pp_, static_cast<int64_t>(g.running().size()));
  g.step.micro_batches = std::min<int64_t>(pp_, static_cast<int64_t>(g.running().size()));
  g.step.micro_misses = 0;
  int64_t j = 0;
  for (int64_t i : g.running()) {
    const bool in_micro = j++ < g.step.micro_batch;
    RequestState& rt = rt_[static_cast<size_t>(i)];
    auto& o = outcomes_[static_cast<size_t>(i)];
    // Dynamic residency: a resident request hits its full KV (no misses); a demoted one restarts its warm-up.
    // Under v2 current, a request admit_request ran as standard is resident too (its whole KV in device rows).
    const bool swap = (!dynamic_ || rt.residency() == Residency::kSwap) && !admission_->all_resident(g, i);
    if (in_micro) step_.add_request(b, rt.n(), swap);
    if (swap && dynamic_) ++g.step.swap_requests;
    if (hisparse_) {
      // The offloaded cache's entries: n, or DeepSeek-V4's n / 4 C4 entries over its C4 layers.
      const auto e = static_cast<int32_t>(step_.entries(rt.n()));
      const MissQuery q = dynamic_ ? MissQuery{i, swap ? rt.step() - rt.swap_since() + 1 : 0, e, false}
                                   : MissQuery{i, rt.step(), e, rt.empty_start()};
      MissResult m = swap ? miss_->step(q, rt.carry())
                          : MissResult{static_cast<int64_t>(std::min(e, K_)) * cost_.offload_layers(), 0};
      if (swap) m.misses = v2_resident_head_misses(g, i, rt.n(), m.misses);
      g.step.selected += m.selected * pos;
      g.step.misses += m.misses * pos;
      if (in_micro) {
        g.step.micro_misses += m.misses * pos;
        micro_misses_ += m.misses * pos;
      }
      o.selected += m.selected * pos;
      o.misses += m.misses * pos;
      // The previous step's token is backed up at the start of every step but the first (docs/swap_in.md).
      if (rt.step() > 0 && in_micro && !admission_->all_resident(g, i)) ++g.step.backups;
    } else {
      const int64_t sel = static_cast<int64_t>(std::min(static_cast<int32_t>(step_.entries(rt.n())), K_)) *
                          cost_.offload_layers() * pos;
      g.step.selected += sel;
      o.selected += sel;
    }
    rt.stepped();
  }
  g.step.miss_bytes = static_cast<double>(g.step.micro_misses) * row_;  // per GPU of the rank, one stage step
  g.step.backup_bytes = hisparse_ ? step_.backup(g.step.backups).bytes : 0;
  result_.selected += g.step.selected;
  result_.misses += g.step.misses;
  g.step.work = step_.rank_compute(b);
  g.step.batch = b;
}

void Engine::begin_io(Rank& g, int32_t gi) {
  const SimTime now = sim_.now();
  g.step.io_start = now;
  if (g.step.miss_bytes > 0) {
    // The copy's fixed part (per-layer calls, calibrated latency rounds) is the flow's latency; its bytes share the
    // GPU's PCIe link and its NUMA node's DRAM with the other flows.
    const CopyCall c = step_.miss_copy(g.step.micro_batch, static_cast<double>(g.step.micro_misses));
    g.step.io_pending = gpr_;
    result_.miss_transfers +=
        step_.decode_transfer(static_cast<double>(g.step.micro_misses)).transfers * g.step.micro_batches;
    start_rank_flows(g, c.bytes, c.latency, c.max_rate, true, false, true, false, cookie(kMissFlow, gi));
    return;
  }
  g.step.io_end = now;
  g.step.io_done = true;
  maybe_done(gi);
}

void Engine::maybe_done(int32_t gi) {
  Rank& g = ranks_[static_cast<size_t>(gi)];
  const bool serial = overlap() == OverlapMode::kNone;
  if (!g.step.io_done || (!serial && !g.step.compute_done)) return;
  if (g.step.work.resident && g.step.backup_pending > 0) { g.step.waiting_backup = true; return; }
  const RankEnd end = g.step.work.resident ? step_.resident_end(g.step.work, g.step.backup_end - g.step.start)
                                      : step_.rank_end(g.step.work, g.step.io_start - g.step.start, g.step.io_end - g.step.start, g.step.miss_bytes > 0);
  g.step.cost.stall = end.stall;
  g.step.cost.h2d = end.h2d;
  g.step.cost.prefetch_hidden = end.prefetch_hidden;
  const SimTime done = g.step.start + end.done;
  // Serial: attention follows the copy, and its end is the rank's.
  if (serial) sim_.schedule(done, handler_, kComputeDone, gi);
  else if (done > sim_.now()) sim_.schedule(done, handler_, kGpuDone, gi);
  else rank_finished(gi);
}

void Engine::rank_finished(int32_t gi) {
  Rank& g = ranks_[static_cast<size_t>(gi)];
  g.step.done = sim_.now();
  if (overlap() == OverlapMode::kNone) g.step.compute_end = g.step.done;
  Instance& inst = instances_[static_cast<size_t>(g.instance())];
  if (--inst.outstanding > 0) return;
  // Every data-parallel rank has reached the expert all-to-all.
  inst.barrier = sim_.now();
  double T = 0, bmax = 0;
  const GpuBatch* busiest = nullptr;
  for (int32_t k = 0; k < inst.ranks; ++k) {
    const Rank& r = ranks_[static_cast<size_t>(inst.first_rank + k)];
    const double b = static_cast<double>(r.running().size());
    T += b;
    if (r.step.active && (!busiest || b > bmax)) busiest = &r.step.batch;
    bmax = std::max(bmax, b);
  }
  // Pipeline parallelism: a stage step runs each rank's largest micro-batch (the planner's stage step, the same tokens).
  double Ts = T, bs = bmax;
  if (pp_ > 1) {
    Ts = 0;
    for (int32_t k = 0; k < inst.ranks; ++k)
      Ts += static_cast<double>(ranks_[static_cast<size_t>(inst.first_rank + k)].step.micro_batch);
    bs = static_cast<double>(micro_batch_size(pp_, static_cast<int64_t>(bmax)));
  }
  inst.moe_time = step_.moe_ns(Ts, step_.max_gpu_tokens(bs));
  inst.draft_time = busiest ? step_.draft_ns(*busiest, Ts, step_.max_gpu_tokens(bs)) : 0;
  inst.pipeline_time = 0;
  if (pp_ > 1) {
    // One stage's step on the largest micro-batch is done; the cycle adds the other stages and the hops.
    const SimTime stage = inst.barrier + inst.moe_time + inst.draft_time - inst.step_start - inst.prefill;
    const int64_t mb = micro_batch_size(pp_, static_cast<int64_t>(bmax));
    const int tp = std::max(1, step_.rank_scenario().deployment.decode.tp);
    const PipelineCycle c =
        pipeline_cycle(pp_, static_cast<int64_t>(bmax), stage,
                       stage_hop_ns(stage_link_, stage_activation_bytes(step_.rank_scenario().model, mb), tp),
                       stage_hop_ns(stage_link_, static_cast<double>(mb) * 8.0, 1));
    inst.pipeline_time = c.cycle_ns - stage;
  }
  sim_.schedule(inst.barrier + inst.moe_time + inst.draft_time + inst.pipeline_time, handler_, kStepEnd, g.instance());
}

void Engine::step_end(int32_t ii) {
  Instance& inst = instances_[static_cast<size_t>(ii)];
  const SimTime now = sim_.now();
  StepRow row;
  row.instance = ii;
  row.index = inst.index++;
  row.start = inst.step_start;
  row.end = now;
  row.in_flight = inst.in_flight;
  row.prefill = inst.prefill;
  row.prefill_tokens = inst.prefill > 0 ? inst.prefill_tokens : 0;
  SimTime slowest_done = -1;
  for (int32_t k = 0; k < inst.ranks; ++k) {
    Rank& g = ranks_[static_cast<size_t>(inst.first_rank + k)];
    if (!g.step.active) continue;
    g.step.active = false;
    g.step.cost.indexer = g.step.work.phases.indexer;
    g.step.cost.topk = g.step.work.phases.topk;
    g.step.cost.swap_in = g.step.work.phases.swap_in;
    g.step.cost.attention = g.step.work.phases.attention;
    g.step.cost.moe = inst.moe_time;
    g.step.cost.draft = inst.draft_time;
    g.step.cost.sync = inst.barrier - g.step.done;
    if (pp_ > 1) {
      // The token's critical path crosses every stage (each priced as this one) and the hops (sync).
      const StepCost one = g.step.cost;
      for (int s = 1; s < pp_; ++s) g.step.cost += one;
      g.step.cost.sync += now - inst.step_start - inst.prefill - g.step.cost.critical_path();
    }
    if (g.step.cost.critical_path() + inst.prefill != now - inst.step_start)
      throw_error("serving engine: step {} of instance {} on rank {}: breakdown {} ns + prefill {} ns != step length {} ns",
                  row.index, ii, g.local(), g.step.cost.critical_path(), inst.prefill, now - inst.step_start);
    result_.gpu_cost_total += g.step.cost;
    ++result_.gpu_steps_busy;
    row.requests += static_cast<int32_t>(g.running().size());
    row.selected += g.step.selected;
    row.misses += g.step.misses;
    row.h2d_bytes += g.step.miss_bytes * gpr_ * static_cast<double>(g.step.micro_batches);
    row.backup_bytes += g.step.backup_bytes * gpr_ * static_cast<double>(g.step.micro_batches);
    if (dynamic_) {
      row.swap_requests += g.step.swap_requests;
      row.demotions += g.step.demotions;
      row.swap_graph_ranks += g.step.work.resident ? 0 : 1;
      ++(g.step.work.resident ? result_.resident_graph_steps : result_.swap_graph_steps);
    }
    if (g.step.done > slowest_done) { slowest_done = g.step.done; row.slowest = g.step.cost; }
    if (trace_ && trace_->overlaps(inst.decode_start, now)) trace_rank(g, inst, now);
    // Every running request produced one token; with MTP its k-th step (0-based) ⌊(k + 1)·E⌋ − ⌊k·E⌋, E accepted
    // tokens per step on average, deterministically, at most what it has left to decode.
    const double E = step_.accepted_tokens();
    g.keep_running([&](int64_t i) {
      auto& o = outcomes_[static_cast<size_t>(i)];
      RequestState& rt = rt_[static_cast<size_t>(i)];
      const double k = static_cast<double>(rt.step() - 1);
      const auto gained = static_cast<int64_t>(std::floor((k + 1) * E + 1e-9) - std::floor(k * E + 1e-9));
      const int64_t tokens = std::clamp<int64_t>(gained, 1, std::max<int64_t>(1, o.output_tokens - 1 - o.decoded));
      o.decoded += static_cast<int32_t>(tokens);
      rt.gained(tokens);
      result_.decode_tokens += tokens;
      ++result_.request_steps;
      if (o.decoded + 1 < o.output_tokens) return true;
      complete(i);
      return false;
    });
  }
  if (trace_ && inst.prefill > 0 && trace_->overlaps(inst.step_start, inst.decode_start))
    trace_->span(fmt::format("prefill pass ({} tok)", inst.prefill_tokens), "prefill", 1 + ii, 3, inst.step_start, inst.decode_start);
  if (row.requests > 0 && now > row.start)
    result_.step_tokens_per_s.push_back(row.requests / ns_to_seconds(now - row.start));
  if (opt_.record_steps) result_.steps.push_back(row);
  try_admit();
  start_step(ii);
}

void Engine::trace_rank(const Rank& g, const Instance& inst, SimTime now) {
  const int pid = 1 + g.instance(), t0 = g.local() * 10;
  const std::string batch = fmt::format(" ({} req)", g.running().size());
  if (overlap() == OverlapMode::kNone) {
    trace_->span("indexer+topk+swap_in" + batch, "compute", pid, t0, g.step.start, g.step.a_end);
    trace_->span("stall (backup)", "stall", pid, t0, g.step.a_end, g.step.io_start);
    trace_->span("h2d wait", "stall", pid, t0, g.step.io_start, g.step.io_end);
    trace_->span("attention" + batch, "compute", pid, t0, g.step.io_end, g.step.done);
  } else {
    trace_->span("compute, 2 micro-batches" + batch, "compute", pid, t0, g.step.start, g.step.compute_end);
    trace_->span("exposed io", "stall", pid, t0, g.step.compute_end, g.step.done);
  }
  trace_->span("sync", "sync", pid, t0, g.step.done, inst.barrier);
  trace_->span("moe+all-to-all", "compute", pid, t0, inst.barrier, now);
  if (g.step.miss_bytes > 0)
    trace_->span(fmt::format("misses {:.1f} MB", g.step.miss_bytes / 1e6), "pcie", pid, t0 + 1, g.step.io_start, g.step.io_end);
  if (g.step.backup_bytes > 0) trace_->span("backup", "pcie", pid, t0 + 2, g.step.start, g.step.backup_end);
}

int64_t Engine::v2_resident_head_misses(const Rank& g, int64_t i, int32_t n, int64_t misses) const {
  // v2 current: selections in the request's device-resident head [0, B) are hits. Assumed (docs/cost_model.md): the
  // statistical miss model's misses scale by the evicted share (E - B) / n of the positions (selections spread
  // evenly over the positions); B = 0 (everything evicted, or no prefix kept) is priced as before.
  const V2PrefixEviction* kept = g.v2_prefixes();
  if (!kept || !kept->has(i)) return misses;
  const int32_t B = kept->evicted_begin(i), E = kept->prefix_end(i);
  if (B <= 0 || n <= 0) return misses;
  return std::llround(static_cast<double>(misses) * static_cast<double>(E - B) / n);
}

}  // namespace hisparse::sim::serving

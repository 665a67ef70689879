// @brief Lockstep decode steps of an instance's ranks: [colocated prefill pass] → per rank phase A, miss copy,
// attention (+ the attention-TP all-reduce) → barrier → MoE + all-to-all + LM head → step end.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/serving/engine.h"
#include "sim/cost/zero_copy_sm_share.h"

namespace hisparse::sim::serving {

void Engine::start_step(int32_t ii) {
  Instance& inst = instances_[static_cast<size_t>(ii)];
  const SimTime now = sim_.now();
  bool any = false;
  for (int32_t k = 0; k < inst.ranks; ++k) {
    Rank& g = ranks_[static_cast<size_t>(inst.first_rank + k)];
    g.running.insert(g.running.end(), g.joining.begin(), g.joining.end());
    g.joining.clear();
    any = any || !g.running.empty();
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
    if (hisparse_ && opt_.admission == AdmissionCheck::kLogicalOnly) {
      // The eager backup of token n − 2 needs a host row: a new host page every page_size tokens, which can fail.
      const std::vector<int64_t> running = g.running;
      for (int64_t i : running) {
        const Runtime& rt = rt_[static_cast<size_t>(i)];
        if (rt.step > 0) host_alloc(i, rt.n - 1, "decode backup");
      }
    }
    g.active = !g.running.empty();
    if (!g.active) continue;
    ++inst.outstanding;
    plan_rank(g);
    g.start = now;
    g.cost = StepCost{};
    g.compute_done = g.io_done = g.waiting_backup = false;
    g.backup_pending = 0;
    g.io_pending = 0;
    if (g.backup_bytes > 0) {
      g.backup_pending = gpr_;
      start_rank_flows(g, g.backup_bytes, sc_.hardware.pcie.latency_ns, 0, false, true, true, false, cookie(kBackup, gi));
    }
    if (overlap() == OverlapMode::kNone) {
      sim_.schedule(now + g.ph.before_io(), handler_, kPhaseA, gi);
    } else {
      sim_.schedule(now + g.io_fill, handler_, kIoStart, gi);
      sim_.schedule(now + g.compute_total, handler_, kComputeDone, gi);
    }
  }
  if (inst.outstanding == 0) {
    // A step of prefill only: no rank decodes.
    inst.barrier = now;
    inst.moe_time = 0;
    sim_.schedule(now, handler_, kStepEnd, ii);
  }
}

void Engine::plan_rank(Rank& g) {
  GpuBatch b;
  g.selected = g.misses = 0;
  g.backup_bytes = 0;
  for (int64_t i : g.running) {
    Runtime& rt = rt_[static_cast<size_t>(i)];
    auto& o = outcomes_[static_cast<size_t>(i)];
    ++b.requests;
    b.sum_n += rt.n;
    b.sum_attended += std::min(rt.n, K_);
    if (hisparse_) {
      if (rt.n > H_) ++b.slow_path;
      const MissResult m = miss_->step(MissQuery{i, rt.step, rt.n, rt.empty_start}, rt.carry);
      g.selected += m.selected;
      g.misses += m.misses;
      o.selected += m.selected;
      o.misses += m.misses;
      // The previous step's token is backed up at the start of every step but the first (docs/swap_in.md).
      if (rt.step > 0) g.backup_bytes += static_cast<double>(kv_layers_) * row_;
    } else {
      const int64_t sel = static_cast<int64_t>(std::min(rt.n, K_)) * cost_.layers();
      g.selected += sel;
      o.selected += sel;
    }
    ++rt.step;
  }
  g.miss_bytes = static_cast<double>(g.misses) * row_;  // per GPU of the rank
  result_.selected += g.selected;
  result_.misses += g.misses;
  if (overlap() == OverlapMode::kNone) {
    g.ph = cost_.gpu_phases(b);
    g.ph.attention += attention_allreduce_ns(layout_, opt_.cost, b.requests);
    g.compute_total = g.ph.compute();
    return;
  }
  // Two micro-batches: every kernel runs twice on half the work; the first micro-batch's first layer must
  // select before any copy can start, and the last micro-batch's last layer attends after its copy.
  GpuBatch h1 = b, h2 = b;
  h1.requests = (b.requests + 1) / 2;
  h2.requests = b.requests - h1.requests;
  const double f1 = static_cast<double>(h1.requests) / static_cast<double>(b.requests);
  h1.sum_n = b.sum_n * f1; h2.sum_n = b.sum_n - h1.sum_n;
  h1.sum_attended = b.sum_attended * f1; h2.sum_attended = b.sum_attended - h1.sum_attended;
  h1.slow_path = (b.slow_path + 1) / 2; h2.slow_path = b.slow_path - h1.slow_path;
  GpuPhases p1 = cost_.gpu_phases(h1), p2 = cost_.gpu_phases(h2);
  p1.attention += attention_allreduce_ns(layout_, opt_.cost, h1.requests);
  p2.attention += attention_allreduce_ns(layout_, opt_.cost, h2.requests);
  g.ph.indexer = p1.indexer + p2.indexer;
  g.ph.topk = p1.topk + p2.topk;
  g.ph.swap_in = p1.swap_in + p2.swap_in;
  g.ph.attention = p1.attention + p2.attention;
  g.compute_total = g.ph.compute();
  g.io_fill = p1.before_io() / cost_.layers();
  g.tail = (h2.requests > 0 ? p2.attention : p1.attention) / cost_.layers();
}

void Engine::begin_io(Rank& g, int32_t gi) {
  const SimTime now = sim_.now();
  g.io_start = now;
  g.cost.stall = now - g.a_end;
  if (g.miss_bytes > 0) {
    // One swap-in kernel per layer, each paying the per-operation latency; rows move at the gather rate.
    SimTime latency = static_cast<SimTime>(cost_.layers()) * sc_.hardware.pcie.latency_ns;
    double max_rate = sc_.hardware.pcie.gather_row_bytes_per_s;
    if (const SwapInCopyCost& c = opt_.cost.swap_in_cost; c.calibrated) {
      // Measured: a fixed cost per copying call, rows at the small-row rate, few requests bound by their own rate.
      // The copy's latency rounds (sim/cost/swap_in_cost.h) are not a rate: what they add over the transfer is part of
      // each call's fixed latency, the rows are the flow. One call's rows are the layer's mean (misses / layers),
      // spread evenly over the running requests (the rounds follow the busiest one: an estimate from below).
      const auto requests = static_cast<int64_t>(g.running.size());  // picks the kernel regime (small/large batch)
      SwapInCall call{requests, g.miss_bytes / static_cast<double>(row_) / static_cast<double>(cost_.layers()),
                      static_cast<int64_t>(row_), H_, K_};
      latency = static_cast<SimTime>(cost_.layers()) * c.copy_latency_ns(call, sc_.hardware.pcie.h2d_bulk_bytes_per_s);
      max_rate = c.copy_rate(requests);
    }
    g.io_pending = gpr_;
    start_rank_flows(g, g.miss_bytes, latency, max_rate, true, false, true, false, cookie(kMissFlow, gi));
    return;
  }
  g.io_end = now;
  if (overlap() == OverlapMode::kNone) {
    sim_.schedule(now + g.ph.attention, handler_, kComputeDone, gi);
  } else {
    g.io_done = true;
    maybe_done(gi);
  }
}

void Engine::maybe_done(int32_t gi) {
  Rank& g = ranks_[static_cast<size_t>(gi)];
  if (!g.compute_done || !g.io_done) return;
  const SimTime io_side = g.miss_bytes > 0 ? g.io_end + g.tail : g.io_end;
  // The zero-copy swap-in moves rows with SMs: while it overlaps the other micro-batch's compute, that compute
  // runs on the SMs the copy leaves free (sim/cost/zero_copy_sm_share.h); the delay counts as exposed copy time.
  SimTime stolen = 0;
  if (g.miss_bytes > 0) {
    const int64_t first_half = (static_cast<int64_t>(g.running.size()) + 1) / 2;
    const double share = zero_copy_sm_share(opt_.cost.swap_in_copy_mode, opt_.cost.swap_in_cost, first_half,
                                            sc_.hardware.sm_count);
    const SimTime overlap = std::max<SimTime>(0, std::min(g.io_end, g.compute_end) - std::max(g.io_start, g.start));
    stolen = static_cast<SimTime>(std::llround(static_cast<double>(overlap) * share));
  }
  const SimTime done = std::max(g.compute_end + stolen, io_side);
  const SimTime exposed = done - g.compute_end;
  const SimTime wait = g.io_start - g.a_end;
  g.cost.stall = std::min(wait, exposed);
  g.cost.h2d = exposed - g.cost.stall;
  if (done > sim_.now()) sim_.schedule(done, handler_, kGpuDone, gi);
  else rank_finished(gi);
}

void Engine::rank_finished(int32_t gi) {
  Rank& g = ranks_[static_cast<size_t>(gi)];
  g.done = sim_.now();
  if (overlap() == OverlapMode::kNone) g.compute_end = g.done;
  Instance& inst = instances_[static_cast<size_t>(g.instance)];
  if (--inst.outstanding > 0) return;
  // Every data-parallel rank has reached the expert all-to-all.
  inst.barrier = sim_.now();
  double T = 0, bmax = 0;
  for (int32_t k = 0; k < inst.ranks; ++k) {
    const double b = static_cast<double>(ranks_[static_cast<size_t>(inst.first_rank + k)].running.size());
    T += b;
    bmax = std::max(bmax, b);
  }
  if (overlap() == OverlapMode::kNone) {
    const auto m = cost_.moe_phase(T, bmax);
    inst.moe_time = m.compute + m.all_to_all;
  } else {
    // Each micro-batch reads the experts it touches; one micro-batch's all-to-all hides under the other's compute.
    const auto m = cost_.moe_phase(T / 2, bmax / 2);
    const SimTime per_batch = m.compute - opt_.cost.step_overhead_ns;
    inst.moe_time = 2 * per_batch + opt_.cost.step_overhead_ns + std::max<SimTime>(0, 2 * m.all_to_all - per_batch);
  }
  sim_.schedule(inst.barrier + inst.moe_time, handler_, kStepEnd, g.instance);
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
    if (!g.active) continue;
    g.active = false;
    g.cost.indexer = g.ph.indexer;
    g.cost.topk = g.ph.topk;
    g.cost.swap_in = g.ph.swap_in;
    g.cost.attention = g.ph.attention;
    g.cost.moe = inst.moe_time;
    g.cost.sync = inst.barrier - g.done;
    if (g.cost.critical_path() + inst.prefill != now - inst.step_start)
      throw_error("serving engine: step {} of instance {} on rank {}: breakdown {} ns + prefill {} ns != step length {} ns",
                  row.index, ii, g.local, g.cost.critical_path(), inst.prefill, now - inst.step_start);
    result_.gpu_cost_total += g.cost;
    ++result_.gpu_steps_busy;
    row.requests += static_cast<int32_t>(g.running.size());
    row.selected += g.selected;
    row.misses += g.misses;
    row.h2d_bytes += g.miss_bytes * gpr_;
    row.backup_bytes += g.backup_bytes * gpr_;
    if (g.done > slowest_done) { slowest_done = g.done; row.slowest = g.cost; }
    if (trace_ && trace_->overlaps(inst.decode_start, now)) trace_rank(g, inst, now);
    // Every running request produced one token.
    size_t keep = 0;
    const std::vector<int64_t> running = g.running;
    for (int64_t i : running) {
      auto& o = outcomes_[static_cast<size_t>(i)];
      ++o.decoded;
      ++rt_[static_cast<size_t>(i)].n;
      ++result_.decode_tokens;
      if (o.decoded + 1 >= o.output_tokens) complete(i);
      else g.running[keep++] = i;
    }
    g.running.resize(keep);
  }
  if (trace_ && inst.prefill > 0 && trace_->overlaps(inst.step_start, inst.decode_start))
    trace_->span(fmt::format("prefill pass ({} tok)", inst.prefill_tokens), "prefill", 1 + ii, 3, inst.step_start, inst.decode_start);
  if (opt_.record_steps) result_.steps.push_back(row);
  try_admit();
  start_step(ii);
}

void Engine::trace_rank(const Rank& g, const Instance& inst, SimTime now) {
  const int pid = 1 + g.instance, t0 = g.local * 10;
  const std::string batch = fmt::format(" ({} req)", g.running.size());
  if (overlap() == OverlapMode::kNone) {
    trace_->span("indexer+topk+swap_in" + batch, "compute", pid, t0, g.start, g.a_end);
    trace_->span("stall (backup)", "stall", pid, t0, g.a_end, g.io_start);
    trace_->span("h2d wait", "stall", pid, t0, g.io_start, g.io_end);
    trace_->span("attention" + batch, "compute", pid, t0, g.io_end, g.done);
  } else {
    trace_->span("compute, 2 micro-batches" + batch, "compute", pid, t0, g.start, g.compute_end);
    trace_->span("exposed io", "stall", pid, t0, g.compute_end, g.done);
  }
  trace_->span("sync", "sync", pid, t0, g.done, inst.barrier);
  trace_->span("moe+all-to-all", "compute", pid, t0, inst.barrier, now);
  if (g.miss_bytes > 0)
    trace_->span(fmt::format("misses {:.1f} MB", g.miss_bytes / 1e6), "pcie", pid, t0 + 1, g.io_start, g.io_end);
  if (g.backup_bytes > 0) trace_->span("backup", "pcie", pid, t0 + 2, g.start, g.backup_end);
}

}  // namespace hisparse::sim::serving

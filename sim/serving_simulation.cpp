// @brief The serving engine: arrivals → admission (HBM, host pool, max_running_requests) → prefill → RDMA →
// lockstep decode steps (see serving_simulation.h for the event granularity) → completion.
#include "sim/serving_simulation.h"

#include <algorithm>
#include <cmath>
#include <deque>

#include <fmt/format.h>

#include "core/error.h"
#include "core/memory_budget.h"
#include "sim/miss_surface.h"
#include "sim/decode_cost_model.h"
#include "sim/link_model.h"
#include "sim/network_resource.h"
#include "sim/simulator.h"
#include "sim/zero_copy_sm_share.h"

namespace hisparse::sim {

const char* to_string(KvMode mode) { return mode == KvMode::kFull ? "full" : "hisparse"; }

StatisticalMissParams default_miss_params(const Scenario& s) {
  // Measured on real top-k traces (scenarios/miss_models/smollm2-real.yaml), sglang-lru at the scenario's H/K.
  return miss_params_from_surface(s, load_miss_surface(kDefaultMissSurface), "sglang-lru");
}

namespace {

enum Kind : uint32_t { kArrival, kPrefillDone, kPhaseA, kIoStart, kComputeDone, kGpuDone, kStepEnd };
enum FlowType : int64_t { kRdma = 1, kAdmitH2d = 2, kMissFlow = 3, kBackup = 4 };
constexpr int64_t cookie(FlowType t, int64_t idx) { return (static_cast<int64_t>(t) << 56) | idx; }

struct Gpu {
  int32_t instance = 0, local = 0;
  int32_t h2d = -1, d2h = -1, dram = -1, nic = -1;  // link indices
  std::vector<int64_t> running, joining;
  int64_t reserved = 0, dev_used = 0, logical_used = 0;
  // Current step.
  bool active = false, backup_running = false, waiting_backup = false, compute_done = false, io_done = false;
  GpuPhases ph;
  SimTime compute_total = 0, io_fill = 0, tail = 0;
  double miss_bytes = 0, backup_bytes = 0;
  SimTime start = 0, a_end = 0, io_start = 0, io_end = 0, compute_end = 0, done = 0, backup_end = 0;
  int64_t selected = 0, misses = 0;
  StepCost cost;
};

struct Instance {
  int32_t first_gpu = 0, gpus = 0;
  bool stepping = false;
  SimTime step_start = 0, barrier = 0;
  int32_t outstanding = 0;
  int64_t index = 0;
  SimTime moe_time = 0;
};

struct PrefillInstance {
  std::deque<int64_t> queue;
  int64_t current = -1;
};

struct Runtime {
  int32_t n = 0;            // sequence length at the next decode step
  int64_t step = 0;         // decode steps done
  double carry = 0;         // miss model rounding remainder
  bool empty_start = false;
  int64_t dev_tokens = 0, logical_tokens = 0;  // reserved in the pools
};

class Engine final : public EventHandler, public FlowListener {
 public:
  Engine(const Scenario& sc, const Workload& w, const ServingOptions& opt, ChromeTrace* trace)
      : sc_(sc), w_(w), opt_(opt), trace_(trace), hisparse_(opt.mode == KvMode::kHiSparse),
        cost_(sc, opt.cost, hisparse_), net_(sim_, make_link_model(opt.cost.link_model)) {
    handler_ = sim_.add_handler(this);
    const DeploymentSpec& d = sc.deployment;
    if (hisparse_) {
      if (opt.miss_model) miss_ = opt.miss_model;
      else { own_miss_ = make_statistical_miss_model(default_miss_params(sc)); miss_ = own_miss_.get(); }
    }
    K_ = hisparse_ ? d.hisparse.top_k : sc.model.top_k;
    H_ = d.hisparse.device_buffer_size;
    page_ = std::max(1, d.page_size);
    row_ = cost_.kv_row_bytes();
    idx_ = cost_.indexer_key_bytes();
    kv_layers_ = cost_.kv_layers();
    const MemoryBudget mb = compute_memory_budget(sc, {});
    if (hisparse_) {
      dev_pool_ = static_cast<int64_t>(mb.device_pool_tokens.value);
      logical_pool_ = static_cast<int64_t>(mb.logical_pool_tokens.value);
    } else {
      dev_pool_ = static_cast<int64_t>(mb.full_pool_tokens.value);
      logical_pool_ = dev_pool_;
    }
    if (dev_pool_ <= 0) throw_error("{}: no HBM left for KV ({} tokens per GPU in {} mode)", sc.source, dev_pool_, to_string(opt.mode));
    build_topology();
    outcomes_.resize(w.requests.size());
    rt_.resize(w.requests.size());
    for (size_t i = 0; i < w.requests.size(); ++i) {
      const auto& r = w.requests[i];
      auto& o = outcomes_[i];
      o.id = r.id; o.input_tokens = r.input_tokens; o.output_tokens = r.output_tokens; o.arrival = r.arrival;
    }
  }

  ServingResult run() {
    if (!w_.requests.empty()) sim_.schedule(w_.requests[0].arrival, handler_, kArrival, 0);
    sim_.run(opt_.stop_after);
    return finish();
  }

  void on_event(Simulator& sim, const Event& e) override {
    const SimTime now = sim.now();
    switch (e.kind) {
      case kArrival: arrive(e.arg); break;
      case kPrefillDone: prefill_done(static_cast<int32_t>(e.arg)); break;
      case kPhaseA:
      case kIoStart: {
        Gpu& g = gpus_[static_cast<size_t>(e.arg)];
        g.a_end = now;
        if (g.backup_running) g.waiting_backup = true;
        else begin_io(g, static_cast<int32_t>(e.arg));
        break;
      }
      case kComputeDone: {
        Gpu& g = gpus_[static_cast<size_t>(e.arg)];
        g.compute_done = true;
        g.compute_end = now;
        if (overlap() == OverlapMode::kNone) gpu_finished(static_cast<int32_t>(e.arg));
        else maybe_done(static_cast<int32_t>(e.arg));
        break;
      }
      case kGpuDone: gpu_finished(static_cast<int32_t>(e.arg)); break;
      case kStepEnd: step_end(static_cast<int32_t>(e.arg)); break;
      default: throw_error("serving engine: unknown event kind {}", e.kind);
    }
  }

  void on_flow_done(Simulator& sim, int64_t c, const FlowDone& d) override {
    const SimTime now = sim.now();
    const int64_t idx = c & ((int64_t{1} << 56) - 1);
    switch (static_cast<FlowType>(c >> 56)) {
      case kRdma: {
        result_.rdma_bytes += d.bytes;
        const Gpu& g = gpus_[static_cast<size_t>(outcomes_[static_cast<size_t>(idx)].gpu)];
        if (trace_) trace_->span(fmt::format("rdma r{}", idx), "rdma", 200 + g.instance, g.nic, d.start, now);
        rdma_done(idx);
        break;
      }
      case kAdmitH2d: result_.admission_h2d_bytes += d.bytes; make_ready(idx); break;
      case kMissFlow: {
        result_.miss_flow_bytes += d.bytes;
        Gpu& g = gpus_[static_cast<size_t>(idx)];
        g.io_end = now;
        if (overlap() == OverlapMode::kNone) {
          g.cost.h2d = now - g.io_start;
          sim_.schedule(now + g.ph.attention, handler_, kComputeDone, idx);
        } else {
          g.io_done = true;
          maybe_done(static_cast<int32_t>(idx));
        }
        break;
      }
      case kBackup: {
        result_.backup_bytes += d.bytes;
        Gpu& g = gpus_[static_cast<size_t>(idx)];
        g.backup_running = false;
        g.backup_end = now;
        g.cost.backup = now - g.start;
        if (g.waiting_backup) { g.waiting_backup = false; begin_io(g, static_cast<int32_t>(idx)); }
        break;
      }
      default: throw_error("serving engine: unknown flow cookie {}", c);
    }
  }

 private:
  OverlapMode overlap() const { return opt_.cost.overlap; }

  void build_topology() {
    const DeploymentSpec& d = sc_.deployment;
    const HardwareSpec& hw = sc_.hardware;
    LinkModel& m = net_.model();
    const int32_t per = std::max(1, d.decode.gpus);
    const int32_t numa = std::max(1, hw.numa_nodes);
    const int32_t nics = hw.nic.count;
    if (d.pd_disaggregation && (nics <= 0 || !(hw.nic.bits_per_s > 0)))
      throw_error("{}: PD disaggregation needs hardware nic.count and nic.bits_per_s > 0", sc_.source);
    if (!(hw.pcie.h2d_bulk_bytes_per_s > 0) || !(hw.pcie.d2h_bulk_bytes_per_s > 0))
      throw_error("{}: hardware pcie h2d/d2h_bulk_bytes_per_s must be > 0", sc_.source);
    if (!(hw.host_dram_bytes_per_s_per_numa > 0)) throw_error("{}: hardware host_dram_bytes_per_s_per_numa must be > 0", sc_.source);
    for (int32_t i = 0; i < std::max(1, d.decode.count); ++i) {
      Instance inst;
      inst.first_gpu = static_cast<int32_t>(gpus_.size());
      inst.gpus = per;
      std::vector<int32_t> dram, nic;
      for (int32_t k = 0; k < numa; ++k) dram.push_back(m.add_link(fmt::format("d{}.dram{}", i, k), hw.host_dram_bytes_per_s_per_numa));
      for (int32_t k = 0; k < nics; ++k) nic.push_back(m.add_link(fmt::format("d{}.nic{}", i, k), hw.nic.bits_per_s / 8));
      for (int32_t g = 0; g < per; ++g) {
        Gpu gpu;
        gpu.instance = i;
        gpu.local = g;
        gpu.h2d = m.add_link(fmt::format("d{}.gpu{}.h2d", i, g), hw.pcie.h2d_bulk_bytes_per_s);
        gpu.d2h = m.add_link(fmt::format("d{}.gpu{}.d2h", i, g), hw.pcie.d2h_bulk_bytes_per_s);
        gpu.dram = dram[static_cast<size_t>(g * numa / per)];
        if (nics > 0) gpu.nic = nic[static_cast<size_t>(g * nics / per)];
        gpus_.push_back(gpu);
        if (trace_) {
          trace_->name_thread(1 + i, g * 10 + 0, fmt::format("gpu{} compute", g));
          trace_->name_thread(1 + i, g * 10 + 1, fmt::format("gpu{} pcie h2d", g));
          trace_->name_thread(1 + i, g * 10 + 2, fmt::format("gpu{} pcie d2h (backup)", g));
        }
      }
      if (trace_) {
        trace_->name_process(1 + i, fmt::format("decode instance {} ({})", i, to_string(opt_.mode)));
        trace_->name_process(200 + i, fmt::format("decode instance {} RDMA in", i));
      }
      instances_.push_back(inst);
    }
    prefill_.resize(static_cast<size_t>(std::max(1, d.prefill.count)));
    if (trace_)
      for (size_t p = 0; p < prefill_.size(); ++p) trace_->name_process(100 + static_cast<int>(p), fmt::format("prefill instance {}", p));
  }

  int64_t paged(int64_t t) const { return (t + page_ - 1) / page_ * page_; }

  // ---- arrival, admission, prefill, transfer ----
  void arrive(int64_t i) {
    ++result_.arrivals;
    if (static_cast<size_t>(i + 1) < w_.requests.size())
      sim_.schedule(w_.requests[static_cast<size_t>(i + 1)].arrival, handler_, kArrival, i + 1);
    waiting_.push_back(i);
    try_admit();
  }

  void needs(int64_t i, int64_t& dev, int64_t& logical) const {
    const auto& r = w_.requests[static_cast<size_t>(i)];
    const int64_t total = static_cast<int64_t>(r.input_tokens) + r.output_tokens;
    logical = paged(total);
    dev = hisparse_ ? (total <= H_ ? paged(total) : H_ + page_) : logical;
  }

  void try_admit() {
    const int32_t max_run = sc_.deployment.max_running_requests;
    while (!waiting_.empty()) {
      const int64_t i = waiting_.front();
      int64_t dev, logical;
      needs(i, dev, logical);
      if (dev > dev_pool_ || logical > logical_pool_) {
        outcomes_[static_cast<size_t>(i)].rejected = true;
        ++result_.rejected;
        waiting_.pop_front();
        continue;
      }
      int32_t best = -1;
      for (size_t g = 0; g < gpus_.size(); ++g) {
        const Gpu& gpu = gpus_[g];
        if (max_run > 0 && gpu.reserved >= max_run) continue;
        if (gpu.dev_used + dev > dev_pool_ || gpu.logical_used + logical > logical_pool_) continue;
        if (best < 0 || gpu.reserved < gpus_[static_cast<size_t>(best)].reserved) best = static_cast<int32_t>(g);
      }
      if (best < 0) return;  // head-of-line: wait for memory to free up
      waiting_.pop_front();
      Gpu& g = gpus_[static_cast<size_t>(best)];
      ++g.reserved;
      g.dev_used += dev;
      g.logical_used += logical;
      rt_[static_cast<size_t>(i)].dev_tokens = dev;
      rt_[static_cast<size_t>(i)].logical_tokens = logical;
      auto& o = outcomes_[static_cast<size_t>(i)];
      o.gpu = best;
      o.admitted = sim_.now();
      ++result_.admitted;
      // Shortest prefill queue (the running request counts), lowest index on ties.
      size_t p = 0;
      for (size_t k = 1; k < prefill_.size(); ++k)
        if (load(prefill_[k]) < load(prefill_[p])) p = k;
      prefill_[p].queue.push_back(i);
      if (prefill_[p].current < 0) start_prefill(static_cast<int32_t>(p));
    }
  }

  static size_t load(const PrefillInstance& p) { return p.queue.size() + (p.current >= 0 ? 1 : 0); }

  void start_prefill(int32_t p) {
    PrefillInstance& pi = prefill_[static_cast<size_t>(p)];
    if (pi.queue.empty()) return;
    const int64_t i = pi.queue.front();
    pi.queue.pop_front();
    pi.current = i;
    outcomes_[static_cast<size_t>(i)].prefill_start = sim_.now();
    sim_.schedule(sim_.now() + cost_.prefill_time(w_.requests[static_cast<size_t>(i)].input_tokens), handler_, kPrefillDone, p);
  }

  void prefill_done(int32_t p) {
    PrefillInstance& pi = prefill_[static_cast<size_t>(p)];
    const int64_t i = pi.current;
    pi.current = -1;
    auto& o = outcomes_[static_cast<size_t>(i)];
    o.first_token = sim_.now();
    if (trace_) trace_->span(fmt::format("prefill r{} ({} tok)", i, o.input_tokens), "prefill", 100 + p, 0, o.prefill_start, sim_.now());
    start_prefill(p);
    const auto& r = w_.requests[static_cast<size_t>(i)];
    if (r.output_tokens <= 1) { complete(i); try_admit(); return; }
    const Gpu& g = gpus_[static_cast<size_t>(o.gpu)];
    FlowSpec f;
    f.bytes = static_cast<double>(r.input_tokens) * kv_layers_ * (row_ + idx_);
    // One message per page per layer (how SGLang's transfer engines slice KV); their overhead is serial.
    const int64_t messages = (static_cast<int64_t>(r.input_tokens) + page_ - 1) / page_ * kv_layers_;
    f.latency = messages * sc_.hardware.nic.per_message_ns;
    if (g.nic >= 0) f.add_link(g.nic);
    // HiSparse lands in the host pool (host DRAM); full-KV lands in HBM (GPUDirect RDMA).
    if (hisparse_) f.add_link(g.dram);
    if (f.num_links == 0) f.max_rate = sc_.hardware.pcie.h2d_bulk_bytes_per_s;
    net_.start(f, this, cookie(kRdma, i));
  }

  void rdma_done(int64_t i) {
    const auto& r = w_.requests[static_cast<size_t>(i)];
    Runtime& rt = rt_[static_cast<size_t>(i)];
    rt.n = r.input_tokens + 1;  // the first decode step consumes prefill's token
    if (!hisparse_) { make_ready(i); return; }
    rt.empty_start = sc_.deployment.pd_disaggregation && rt.n > H_;
    const Gpu& g = gpus_[static_cast<size_t>(outcomes_[static_cast<size_t>(i)].gpu)];
    // The indexer keys of every token live on the GPU; a short request (n <= H) also preloads its latent rows.
    FlowSpec f;
    f.bytes = static_cast<double>(r.input_tokens) * kv_layers_ * idx_;
    if (rt.n <= H_) f.bytes += static_cast<double>(r.input_tokens) * kv_layers_ * row_;
    f.latency = sc_.hardware.pcie.latency_ns;
    f.add_link(g.h2d);
    f.add_link(g.dram);
    net_.start(f, this, cookie(kAdmitH2d, i));
  }

  void make_ready(int64_t i) {
    auto& o = outcomes_[static_cast<size_t>(i)];
    o.ready = sim_.now();
    Gpu& g = gpus_[static_cast<size_t>(o.gpu)];
    g.joining.push_back(i);
    if (rt_[static_cast<size_t>(i)].n == 0) rt_[static_cast<size_t>(i)].n = w_.requests[static_cast<size_t>(i)].input_tokens + 1;
    Instance& inst = instances_[static_cast<size_t>(g.instance)];
    if (!inst.stepping) start_step(g.instance);
  }

  void complete(int64_t i) {
    auto& o = outcomes_[static_cast<size_t>(i)];
    o.finish = sim_.now();
    ++result_.finished;
    Gpu& g = gpus_[static_cast<size_t>(o.gpu)];
    --g.reserved;
    g.dev_used -= rt_[static_cast<size_t>(i)].dev_tokens;
    g.logical_used -= rt_[static_cast<size_t>(i)].logical_tokens;
  }

  // ---- decode steps ----
  void start_step(int32_t ii) {
    Instance& inst = instances_[static_cast<size_t>(ii)];
    const SimTime now = sim_.now();
    bool any = false;
    for (int32_t k = 0; k < inst.gpus; ++k) {
      Gpu& g = gpus_[static_cast<size_t>(inst.first_gpu + k)];
      g.running.insert(g.running.end(), g.joining.begin(), g.joining.end());
      g.joining.clear();
      any = any || !g.running.empty();
    }
    inst.stepping = any;
    if (!any) return;
    inst.step_start = now;
    inst.outstanding = 0;
    for (int32_t k = 0; k < inst.gpus; ++k) {
      const int32_t gi = inst.first_gpu + k;
      Gpu& g = gpus_[static_cast<size_t>(gi)];
      g.active = !g.running.empty();
      if (!g.active) continue;
      ++inst.outstanding;
      plan_gpu(g);
      g.start = now;
      g.cost = StepCost{};
      g.compute_done = g.io_done = g.waiting_backup = false;
      g.backup_running = false;
      if (g.backup_bytes > 0) {
        FlowSpec f;
        f.bytes = g.backup_bytes;
        f.latency = sc_.hardware.pcie.latency_ns;
        f.add_link(g.d2h);
        f.add_link(g.dram);
        g.backup_running = true;
        net_.start(f, this, cookie(kBackup, gi));
      }
      if (overlap() == OverlapMode::kNone) {
        sim_.schedule(now + g.ph.before_io(), handler_, kPhaseA, gi);
      } else {
        sim_.schedule(now + g.io_fill, handler_, kIoStart, gi);
        sim_.schedule(now + g.compute_total, handler_, kComputeDone, gi);
      }
    }
  }

  void plan_gpu(Gpu& g) {
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
    g.miss_bytes = static_cast<double>(g.misses) * row_;
    result_.selected += g.selected;
    result_.misses += g.misses;
    if (overlap() == OverlapMode::kNone) {
      g.ph = cost_.gpu_phases(b);
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
    const GpuPhases p1 = cost_.gpu_phases(h1), p2 = cost_.gpu_phases(h2);
    g.ph.indexer = p1.indexer + p2.indexer;
    g.ph.topk = p1.topk + p2.topk;
    g.ph.swap_in = p1.swap_in + p2.swap_in;
    g.ph.attention = p1.attention + p2.attention;
    g.compute_total = g.ph.compute();
    g.io_fill = p1.before_io() / cost_.layers();
    g.tail = (h2.requests > 0 ? p2.attention : p1.attention) / cost_.layers();
  }

  void begin_io(Gpu& g, int32_t gi) {
    const SimTime now = sim_.now();
    g.io_start = now;
    g.cost.stall = now - g.a_end;
    if (g.miss_bytes > 0) {
      FlowSpec f;
      f.bytes = g.miss_bytes;
      // One swap-in kernel per layer, each paying the per-operation latency; rows move at the gather rate.
      f.latency = static_cast<SimTime>(cost_.layers()) * sc_.hardware.pcie.latency_ns;
      f.max_rate = sc_.hardware.pcie.gather_row_bytes_per_s;
      if (const SwapInCopyCost& c = opt_.cost.swap_in_cost; c.calibrated) {
        // Measured: a fixed cost per copying call, rows at the small-row rate, few requests bound by their own rate.
        // The copy's latency rounds (sim/swap_in_cost.h) are not a rate: what they add over the transfer is part of
        // each call's fixed latency, the rows are the flow. One call's rows are the layer's mean (misses / layers),
        // spread evenly over the running requests (the rounds follow the busiest one: an estimate from below).
        const auto requests = static_cast<int64_t>(g.running.size());  // picks the kernel regime (small/large batch)
        SwapInCall call{requests, g.miss_bytes / static_cast<double>(row_) / static_cast<double>(cost_.layers()),
                        static_cast<int64_t>(row_), H_, K_};
        f.latency = static_cast<SimTime>(cost_.layers()) * c.copy_latency_ns(call, sc_.hardware.pcie.h2d_bulk_bytes_per_s);
        f.max_rate = c.copy_rate(requests);
      }
      f.add_link(g.h2d);
      f.add_link(g.dram);
      net_.start(f, this, cookie(kMissFlow, gi));
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

  void maybe_done(int32_t gi) {
    Gpu& g = gpus_[static_cast<size_t>(gi)];
    if (!g.compute_done || !g.io_done) return;
    const SimTime io_side = g.miss_bytes > 0 ? g.io_end + g.tail : g.io_end;
    // The zero-copy swap-in moves rows with SMs: while it overlaps the other micro-batch's compute, that compute
    // runs on the SMs the copy leaves free (sim/zero_copy_sm_share.h); the delay counts as exposed copy time.
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
    else gpu_finished(gi);
  }

  void gpu_finished(int32_t gi) {
    Gpu& g = gpus_[static_cast<size_t>(gi)];
    g.done = sim_.now();
    if (overlap() == OverlapMode::kNone) g.compute_end = g.done;
    Instance& inst = instances_[static_cast<size_t>(g.instance)];
    if (--inst.outstanding > 0) return;
    // Every data-parallel rank has reached the expert all-to-all.
    inst.barrier = sim_.now();
    double T = 0, bmax = 0;
    for (int32_t k = 0; k < inst.gpus; ++k) {
      const double b = static_cast<double>(gpus_[static_cast<size_t>(inst.first_gpu + k)].running.size());
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

  void step_end(int32_t ii) {
    Instance& inst = instances_[static_cast<size_t>(ii)];
    const SimTime now = sim_.now();
    StepRow row;
    row.instance = ii;
    row.index = inst.index++;
    row.start = inst.step_start;
    row.end = now;
    SimTime slowest_done = -1;
    for (int32_t k = 0; k < inst.gpus; ++k) {
      Gpu& g = gpus_[static_cast<size_t>(inst.first_gpu + k)];
      if (!g.active) continue;
      g.cost.indexer = g.ph.indexer;
      g.cost.topk = g.ph.topk;
      g.cost.swap_in = g.ph.swap_in;
      g.cost.attention = g.ph.attention;
      g.cost.moe = inst.moe_time;
      g.cost.sync = inst.barrier - g.done;
      if (g.cost.critical_path() != now - inst.step_start)
        throw_error("serving engine: step {} of instance {} on gpu {}: breakdown {} ns != step length {} ns", row.index, ii,
                    g.local, g.cost.critical_path(), now - inst.step_start);
      result_.gpu_cost_total += g.cost;
      ++result_.gpu_steps_busy;
      row.requests += static_cast<int32_t>(g.running.size());
      row.selected += g.selected;
      row.misses += g.misses;
      row.h2d_bytes += g.miss_bytes;
      row.backup_bytes += g.backup_bytes;
      if (g.done > slowest_done) { slowest_done = g.done; row.slowest = g.cost; }
      if (trace_ && trace_->overlaps(inst.step_start, now)) trace_gpu(g, inst, now);
      // Every running request produced one token.
      size_t keep = 0;
      for (size_t j = 0; j < g.running.size(); ++j) {
        const int64_t i = g.running[j];
        auto& o = outcomes_[static_cast<size_t>(i)];
        ++o.decoded;
        ++rt_[static_cast<size_t>(i)].n;
        ++result_.decode_tokens;
        if (o.decoded + 1 >= o.output_tokens) complete(i);
        else g.running[keep++] = i;
      }
      g.running.resize(keep);
    }
    if (opt_.record_steps) result_.steps.push_back(row);
    try_admit();
    start_step(ii);
  }

  void trace_gpu(const Gpu& g, const Instance& inst, SimTime now) {
    const int pid = 1 + g.instance, t0 = g.local * 10;
    const std::string batch = fmt::format(" ({} req)", g.running.size());
    if (overlap() == OverlapMode::kNone) {
      trace_->span("indexer+topk+swap_in" + batch, "compute", pid, t0, g.start, g.a_end);
      trace_->span("stall (backup)", "stall", pid, t0, g.a_end, g.io_start);
      trace_->span("h2d wait" , "stall", pid, t0, g.io_start, g.io_end);
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

  ServingResult finish() {
    ServingResult& r = result_;
    r.scenario = sc_.deployment.name;
    r.workload = w_.name;
    r.miss_model = hisparse_ ? miss_->describe() : "none (full-KV mode: every row on the GPU)";
    r.mode = opt_.mode;
    r.overlap = overlap();
    r.link_model = opt_.cost.link_model;
    r.decode_gpus = static_cast<int32_t>(gpus_.size());
    r.decode_instances = static_cast<int32_t>(instances_.size());
    r.prefill_instances = static_cast<int32_t>(prefill_.size());
    r.last_arrival = w_.requests.empty() ? 0 : w_.requests.back().arrival;
    r.makespan = sim_.now();
    r.events = sim_.events_processed();
    r.row_bytes = row_;
    r.device_pool_tokens = dev_pool_;
    r.logical_pool_tokens = logical_pool_;
    const LinkModel& m = net_.model();
    double h2d_carried = 0;
    for (int32_t l = 0; l < m.num_links(); ++l) {
      r.links.push_back(LinkUsage{m.link_name(l), m.capacity(l), m.carried_bytes(l)});
      if (m.link_name(l).size() > 4 && m.link_name(l).compare(m.link_name(l).size() - 4, 4, ".h2d") == 0) h2d_carried += m.carried_bytes(l);
    }
    r.requests = std::move(outcomes_);
    // Conservation: every byte a miss needed was carried, links carried exactly what the flows asked for,
    // every admitted request finished, steps never overlap or go back in time.
    const double want = static_cast<double>(r.misses) * row_;
    auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)}); };
    if (!close(r.miss_flow_bytes, want))
      throw_error("conservation: miss copies carried {} B but misses × row_bytes = {} × {} = {} B", r.miss_flow_bytes, r.misses, row_, want);
    if (!close(h2d_carried, r.miss_flow_bytes + r.admission_h2d_bytes))
      throw_error("conservation: PCIe h2d links carried {} B, flows account for {} B", h2d_carried, r.miss_flow_bytes + r.admission_h2d_bytes);
    if (r.admitted != r.finished)
      throw_error("conservation: {} requests admitted but {} finished (simulation stopped at {} ns)", r.admitted, r.finished, r.makespan);
    if (r.admitted + r.rejected != r.arrivals)
      throw_error("conservation: {} arrivals but {} admitted + {} rejected", r.arrivals, r.admitted, r.rejected);
    int64_t tokens = 0;
    for (const auto& o : r.requests)
      if (o.finish >= 0) {
        if (o.decoded != std::max(0, o.output_tokens - 1))
          throw_error("conservation: request {} decoded {} tokens, expected output_tokens − 1 = {}", o.id, o.decoded, o.output_tokens - 1);
        tokens += o.decoded;
      }
    if (tokens != r.decode_tokens) throw_error("conservation: {} tokens counted per step, {} per request", r.decode_tokens, tokens);
    std::vector<SimTime> last_end(instances_.size(), 0);
    for (const auto& s : r.steps) {
      if (s.start < last_end[static_cast<size_t>(s.instance)] || s.end < s.start)
        throw_error("conservation: step {} of instance {} runs [{}, {}] ns, before the previous step ended at {} ns",
                    s.index, s.instance, s.start, s.end, last_end[static_cast<size_t>(s.instance)]);
      last_end[static_cast<size_t>(s.instance)] = s.end;
    }
    return std::move(result_);
  }

  const Scenario& sc_;
  const Workload& w_;
  const ServingOptions& opt_;
  ChromeTrace* trace_;
  bool hisparse_;
  DecodeCostModel cost_;
  Simulator sim_;
  NetworkResource net_;
  uint32_t handler_ = 0;
  const MissModel* miss_ = nullptr;
  std::unique_ptr<MissModel> own_miss_;
  int32_t K_ = 0, H_ = 0, page_ = 64, kv_layers_ = 0;
  double row_ = 0, idx_ = 0;
  int64_t dev_pool_ = 0, logical_pool_ = 0;
  std::vector<Gpu> gpus_;
  std::vector<Instance> instances_;
  std::vector<PrefillInstance> prefill_;
  std::deque<int64_t> waiting_;
  std::vector<RequestOutcome> outcomes_;
  std::vector<Runtime> rt_;
  ServingResult result_;
};

}  // namespace

ServingResult run_serving(const Scenario& scenario, const Workload& workload, const ServingOptions& options,
                          ChromeTrace* trace) {
  Engine e(scenario, workload, options, trace);
  return e.run();
}

}  // namespace hisparse::sim

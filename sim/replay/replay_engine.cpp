// @brief Replay engine: a window of step records read once, one task per layer running every configuration on every
// step of the window (positions marked once for all sglang-lru sizes), a persistent thread pool, fixed-slot results
// reduced in order (see replay_engine.h).
#include "sim/replay/replay_engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <cmath>
#include <limits>
#include <exception>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/parallel/task_pool.h"
#include "cpu_ref/policies/registry.h"
#include "sim/replay/lru_counter.h"
#include "sim/replay/replay_driver.h"
#include "sim/replay/replay_v2_session.h"
#include "traces/trace_limits.h"

namespace hisparse::sim {

double ReplayConfigStats::hit_rate() const {
  // Nothing selected: 0 / 0 is undefined (NaN: "n/a" in the table, null in JSON), not a perfect 100 %.
  return selected ? static_cast<double>(selected - misses) / static_cast<double>(selected)
                  : std::numeric_limits<double>::quiet_NaN();
}
double ReplayConfigStats::mean_misses_per_step_layer() const {
  return step_layers ? static_cast<double>(misses) / static_cast<double>(step_layers) : 0.0;
}
double ReplayConfigStats::mean_misses_per_decode_step() const {
  return decode_steps ? static_cast<double>(misses) / static_cast<double>(decode_steps) : 0.0;
}
double ReplayConfigStats::fast_path_fraction() const {
  return step_layers ? static_cast<double>(fast_path_step_layers) / static_cast<double>(step_layers) : 0.0;
}

int64_t histogram_quantile(const std::vector<int64_t>& hist, double q) {
  int64_t total = 0;
  for (int64_t c : hist) total += c;
  if (total == 0) return 0;
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * static_cast<double>(total))));
  int64_t seen = 0;
  for (size_t v = 0; v < hist.size(); ++v) {
    seen += hist[v];
    if (seen >= rank) return static_cast<int64_t>(v);
  }
  return static_cast<int64_t>(hist.size()) - 1;
}

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Config {
  std::string policy;
  std::string spec;  // what the registry makes: policy with the run's V2 rules (cpu_ref::with_v2_coordinator)
  int32_t H = 0;
  bool offline = false;
  int32_t lru_index = -1;      // >= 0: counting sglang-lru state index (replay_detail::LruTokens)
  int32_t future_index = -1;   // >= 0: index of its buffer size among the offline sizes
};

std::vector<Config> make_configs(const ReplayOptions& o, int32_t top_k) {
  if (o.policies.empty()) throw_error("replay: --policy names no policy");
  if (o.buffer_sizes.empty()) throw_error("replay: --buffer-sizes names no buffer size");
  if (o.threads < 1) throw_error("replay: --threads {} must be >= 1", o.threads);
  if (o.row_bytes < 1) throw_error("replay: --row-bytes {} must be >= 1", o.row_bytes);
  for (int32_t H : o.buffer_sizes) {
    if (H < top_k) {
      throw_error("replay: buffer size {} (--buffer-sizes) is smaller than the trace's top_k {}; the swap-in "
                  "contract requires device_buffer_size >= top_k",
                  H, top_k);
    }
    // Each (layer, configuration) state holds O(H) slots: a buffer beyond the longest context is a typo.
    if (H > traces::kMaxSeqLen)
      throw_error("replay: buffer size {} (--buffer-sizes) is larger than the longest context a trace may hold ({})",
                  H, traces::kMaxSeqLen);
  }
  std::vector<Config> out;
  for (const auto& p : o.policies) {
    const std::string spec = cpu_ref::with_v2_coordinator(p, o.v2_coordinator);
    const bool offline = cpu_ref::make_policy(spec)->needs_future();  // also rejects unknown names
    cpu_ref::check_policy_top_k(p, top_k);  // named as the user wrote it
    for (int32_t H : o.buffer_sizes) out.push_back({p, spec, H, offline});
  }
  return out;
}

/// Per-thread working memory (allocated once, reused for every step).
struct Worker {
  cpu_ref::SwapInScratch scratch;
  SwapInPlan plan;
  replay_detail::StepMarks marks;
  std::vector<int32_t> ref_slot_token, ref_lru;  // lru_reference_step
  std::vector<const int32_t*> fut_sel;           // build_layer_future arguments
  std::vector<int32_t> fut_counts, fut_ns;
};


size_t future_bytes(const cpu_ref::LayerFuture& f) {
  return f.step_begin.capacity() * sizeof(int64_t) +
         (f.next_use.capacity() + f.first_use.capacity() + f.first_use_keys.capacity()) * sizeof(int32_t);
}

}  // namespace

bool cold_start_step(int64_t s, int32_t H, int32_t K) {
  // W = ceil(H / K), as warmup_steps_for (sim/miss/miss_surface.h, which builds on this folder: not included here).
  return s <= (K < 1 ? 0 : (static_cast<int64_t>(H) + K - 1) / K);
}

std::vector<int64_t> steady_histogram(const std::vector<int64_t>& hist, const std::vector<int64_t>& cold) {
  std::vector<int64_t> out = hist;
  for (size_t i = 0; i < cold.size() && i < out.size(); ++i) out[i] -= cold[i];
  return out;
}

void add_request_rows(ReplayResult& result, const ReplayRequestRows& rows, const std::vector<int32_t>& seq_lens,
                      int64_t row_bytes) {
  const size_t steps = rows.steps.size();
  const int64_t first = steps ? rows.steps.front() : 0;
  for (size_t c = 0; c < result.configs.size(); ++c) {
    auto& s = result.configs[c];
    s.cold_miss_hist.resize(s.miss_hist.size(), 0);
    s.cold_step_miss_hist.resize(s.step_miss_hist.size(), 0);
    const size_t L = rows.rows[c].size();
    for (size_t j = 0; j < steps; ++j) {
      const bool cold = cold_start_step(rows.steps[j] - first, s.buffer_size, result.meta.top_k);
      int64_t m = 0;
      for (size_t l = 0; l < L; ++l) {
        const ReplayStepRow& row = rows.rows[c][l][j];
        s.selected += row.selected;
        s.hits += row.hits;
        s.newest_hits += row.newest_hits;
        s.misses += row.misses;
        s.fast_path_step_layers += row.seq_len <= s.buffer_size;
        s.miss_hist[static_cast<size_t>(row.misses)] += 1;
        if (cold) s.cold_miss_hist[static_cast<size_t>(row.misses)] += 1;
        result.entries += row.selected;
        m += row.misses;
      }
      s.step_layers += static_cast<int64_t>(L);
      s.step_miss_hist[static_cast<size_t>(m)] += 1;
      if (cold) s.cold_step_miss_hist[static_cast<size_t>(m)] += 1;
      s.step_misses.push_back(static_cast<int32_t>(m));
      s.decode_steps += 1;
    }
    s.h2d_bytes = s.misses * row_bytes;
  }
  result.decode_steps += static_cast<int64_t>(steps);
  result.step_seq_lens.insert(result.step_seq_lens.end(), seq_lens.begin(), seq_lens.end());
  for (int64_t step : rows.steps) result.step_index.push_back(static_cast<int32_t>(step - first));
  result.requests += 1;
}

ReplayResult run_replay(traces::TraceSource& source, const ReplayOptions& options,
                        const std::function<void(const ReplayRequestRows&)>& row_sink) {
  const traces::TraceMeta& meta = source.meta();
  if (meta.layers < 1 || meta.top_k < 1)
    throw_error("replay: trace {} declares {} layers and top_k {}", meta.source, meta.layers, meta.top_k);
  // The options are checked here, so that both paths refuse the same ones with the same words.
  const std::vector<Config> configs = make_configs(options, meta.top_k);
  const bool offline = std::any_of(configs.begin(), configs.end(), [](const Config& c) { return c.offline; });
  if (options.v2_pools && options.v2_schedules.empty()) {  // the V2 session over the whole trace first
    const ReplayOptions with = with_v2_schedules(options, meta);
    return run_replay(source, with, row_sink);
  }
  if (offline || options.reference_lru) return run_replay_windowed(source, options, row_sink);
  return run_replay_cpu_session(source, options, row_sink, options.open_trace);
}

ReplayResult run_replay_windowed(traces::TraceSource& source, const ReplayOptions& options,
                                 const std::function<void(const ReplayRequestRows&)>& row_sink) {
  const auto t_start = Clock::now();
  const traces::TraceMeta meta = source.meta();
  const int32_t L = meta.layers;
  const int32_t K = meta.top_k;
  if (L < 1 || K < 1) throw_error("replay: trace {} declares {} layers and top_k {}", meta.source, L, K);
  std::vector<Config> configs = make_configs(options, K);
  const size_t C = configs.size();
  const size_t Ls = static_cast<size_t>(L);

  // Which configurations run the counting sglang-lru, which need a future (and for which distinct H).
  std::vector<int32_t> lru_H;       // per counting state
  std::vector<int32_t> offline_H;   // distinct offline buffer sizes
  int32_t H_max = 0;
  for (auto& c : configs) {
    H_max = std::max(H_max, c.H);
    if (c.policy == "sglang-lru" && !options.reference_lru) {
      c.lru_index = static_cast<int32_t>(lru_H.size());
      lru_H.push_back(c.H);
    } else if (c.offline) {
      auto it = std::find(offline_H.begin(), offline_H.end(), c.H);
      c.future_index = static_cast<int32_t>(it - offline_H.begin());
      if (it == offline_H.end()) offline_H.push_back(c.H);
    }
  }
  const bool offline = !offline_H.empty();
  const size_t record_bytes = Ls * static_cast<size_t>(K) * sizeof(int32_t);
  // Window: online, batch_bytes of records; offline, the look-ahead budget over records plus one next-use index per
  // offline size (about a record's bytes each), at least 2 steps so that the window can slide.
  size_t cap = 1;
  if (offline) {
    cap = std::max<size_t>(2, options.lookahead_bytes / (record_bytes * (1 + offline_H.size())));
  } else {
    cap = std::max<size_t>(1, options.batch_bytes / record_bytes);
  }
  const int threads = std::max(1, std::min(options.threads, L));

  ReplayResult result;
  result.meta = meta;
  result.threads = threads;
  result.lookahead_steps = offline ? static_cast<int64_t>(cap) : 0;
  for (size_t c = 0; c < C; ++c) {
    ReplayConfigStats s;
    s.policy = configs[c].policy;
    s.buffer_size = configs[c].H;
    s.miss_hist.assign(static_cast<size_t>(K) + 1, 0);
    s.step_miss_hist.assign(Ls * static_cast<size_t>(K) + 1, 0);
    s.cold_miss_hist = s.miss_hist;
    s.cold_step_miss_hist = s.step_miss_hist;
    result.configs.push_back(std::move(s));
  }
  std::vector<Worker> workers(static_cast<size_t>(threads));
  // States per (layer, configuration), reset at each request: counting LRU states, and policy objects for the rest.
  std::vector<std::vector<replay_detail::LruTokens>> lru_states(Ls, std::vector<replay_detail::LruTokens>(lru_H.size()));
  std::vector<std::vector<std::unique_ptr<cpu_ref::SwapInPolicy>>> policies(Ls);
  for (auto& per_layer : policies) {
    per_layer.resize(C);
    for (size_t c = 0; c < C; ++c)
      if (configs[c].lru_index < 0) {
        per_layer[c] = cpu_ref::make_policy(configs[c].spec);
        cpu_ref::attach_v2_schedule(*per_layer[c], options.v2_schedules, configs[c].spec, configs[c].H);
      }
  }
  // futures[layer][offline size]: the layer's next uses over the window, rebuilt when the window moves.
  std::vector<std::vector<std::shared_ptr<const cpu_ref::LayerFuture>>> futures(
      Ls, std::vector<std::shared_ptr<const cpu_ref::LayerFuture>>(offline_H.size()));
  std::vector<size_t> layer_future_bytes(Ls, 0);
  // Persistent threads (core/parallel): spawning per window would cost more than a small window's work.
  TaskPool pool(std::max(1, threads), "replay");

  const int64_t requests_total = static_cast<int64_t>(source.request_ids().size());
  ReplayProgress progress;
  progress.requests_total = requests_total;

  // recs[0..nbuf) is the window (one request's consecutive steps); `pending` the next record read.
  std::vector<traces::StepRecord> recs;
  traces::StepRecord pending;
  auto read = [&](traces::StepRecord& r) {
    const auto t0 = Clock::now();
    const bool got = source.next(r);
    result.read_seconds += since(t0);
    if (got) {
      // Every source is held to the readers' bound (they check it too; sources may be any).
      if (r.seq_len < 1 || r.seq_len > traces::kMaxSeqLen)
        throw_error("replay: trace {}: request {}, step {}: seq_len {} (expected 1..{})", meta.source, r.request_id,
                    r.step, r.seq_len, traces::kMaxSeqLen);
      if (r.positions.size() != Ls * static_cast<size_t>(K)) {
        throw_error("replay: trace {}: request {}, step {} holds {} positions, expected layers x top_k = {} x {}",
                    meta.source, r.request_id, r.step, r.positions.size(), L, K);
      }
    }
    return got;
  };
  bool have = read(pending);
  std::vector<ReplayStepRow> rows;  // [config][layer][step in chunk]
  ReplayRequestRows request_rows;
  std::atomic<int32_t> next_layer{0};
  std::exception_ptr error;
  std::mutex error_mutex;

  while (have) {
    const int64_t request = pending.request_id;
    if (options.keep_step_rows) {
      request_rows.request_id = request;
      request_rows.steps.clear();
      request_rows.rows.assign(C, std::vector<std::vector<ReplayStepRow>>(Ls));
    }
    size_t nbuf = 0;
    bool request_done = false;
    bool first_chunk = true;
    bool cut = false;
    const int64_t first_step = pending.step;  // the request's first record, read ahead
    while (true) {
      while (!request_done && nbuf < cap) {
        if (recs.size() <= nbuf) recs.emplace_back();
        std::swap(recs[nbuf], pending);
        ++nbuf;
        have = read(pending);
        request_done = !have || pending.request_id != request;
      }
      // Online: the whole window. Offline: all of it once the request ends inside it, else its first half (the rest
      // stays as look-ahead).
      const size_t adv = request_done || !offline ? nbuf : std::max<size_t>(1, nbuf / 2);
      if (!request_done) cut = cut || offline;
      result.peak_window_bytes = std::max(result.peak_window_bytes, nbuf * record_bytes);
      const size_t nb = adv;
      rows.assign(C * Ls * nb, ReplayStepRow{});

      auto layer_task = [&](Worker& w, int32_t l) {
        const size_t lz = static_cast<size_t>(l);
        if (first_chunk) {
          for (size_t k = 0; k < lru_H.size(); ++k) lru_states[lz][k].reset(lru_H[k], meta.initial_state);
          for (size_t c = 0; c < C; ++c)
            if (policies[lz][c]) policies[lz][c]->reset(configs[c].H, meta.initial_state);
        }
        if (offline) {
          // The window's future (all of it, look-ahead included), one per offline buffer size.
          w.fut_sel.resize(nbuf);
          w.fut_counts.assign(nbuf, K);
          w.fut_ns.resize(nbuf);
          for (size_t j = 0; j < nbuf; ++j) {
            w.fut_sel[j] = recs[j].layer(l, K);
            w.fut_ns[j] = recs[j].seq_len;
          }
          size_t bytes = 0;
          for (size_t h = 0; h < offline_H.size(); ++h) {
            futures[lz][h].reset();
            futures[lz][h] = std::make_shared<const cpu_ref::LayerFuture>(
                cpu_ref::build_layer_future(w.fut_sel, w.fut_counts, w.fut_ns, offline_H[h]));
            bytes += future_bytes(*futures[lz][h]);
          }
          layer_future_bytes[lz] = bytes;
          for (size_t c = 0; c < C; ++c)
            if (configs[c].future_index >= 0)
              policies[lz][c]->set_future(futures[lz][static_cast<size_t>(configs[c].future_index)]);
        }
        for (size_t j = 0; j < nb; ++j) {
          const traces::StepRecord& r = recs[j];
          const int32_t* sel = r.layer(l, K);
          const int32_t n = r.seq_len;
          const cpu_ref::StepContext where{r.request_id, l, r.step};
          const bool marked = !lru_H.empty() && w.marks.mark(sel, K, n, K, H_max);
          for (size_t c = 0; c < C; ++c) {
            ReplayStepRow& row = rows[(c * Ls + lz) * nb + j];
            const Config& cfg = configs[c];
            if (cfg.lru_index >= 0) {
              replay_detail::LruTokens& s = lru_states[lz][static_cast<size_t>(cfg.lru_index)];
              if (!s.started) {
                // An `empty` request whose first step has n <= H was preloaded whole (SwapInPolicy::step).
                if (s.initial == InitialState::kEmpty && n <= cfg.H) s.reset(cfg.H, InitialState::kIdentity);
                s.started = true;
              }
              replay_detail::LruCounts k;
              if (!marked || s.span > w.marks.limit()) {
                k = replay_detail::lru_reference_step(s, sel, K, n, K, where, w.scratch, w.plan, w.ref_slot_token,
                                                      w.ref_lru);
              } else if (n <= cfg.H) {
                k = {w.marks.selected, w.marks.newest_hit, 0};  // fast path: nothing moves
              } else {
                k = replay_detail::lru_slow_step(s, sel, K, n, w.marks, where);
              }
              row = {n, k.selected, k.selected - k.newest_hits - k.misses, k.newest_hits, k.misses};
            } else {
              policies[lz][c]->step({sel, K, n, K, nullptr, options.row_bytes}, where, w.plan, w.scratch);
              const SwapInCounters& k = w.plan.counters;
              row = {n, static_cast<int32_t>(k.selected), static_cast<int32_t>(k.hits),
                     static_cast<int32_t>(k.newest_hits), static_cast<int32_t>(k.misses)};
            }
          }
          if (marked) w.marks.clear();  // while the list is still there (the next mark() starts from zero bits)
        }
      };
      next_layer = 0;
      const std::function<void(int)> job = [&](int t) {
        Worker& w = workers[static_cast<size_t>(t)];
        try {
          for (int32_t l = next_layer++; l < L; l = next_layer++) layer_task(w, l);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
          next_layer = L;  // stop the others early
        }
      };
      // One task per worker (its scratch); the workers share the layers through next_layer.
      pool.run(static_cast<size_t>(pool.threads()), [&](size_t t) { job(static_cast<int>(t)); });
      // Any error is reported, naming its place (the first in layer order would need every layer to finish).
      if (error) std::rethrow_exception(error);
      if (offline) {
        size_t fb = 0;
        for (size_t b : layer_future_bytes) fb += b;
        result.peak_lookahead_bytes = std::max(result.peak_lookahead_bytes, fb + nbuf * record_bytes);
      }

      // Reduction in a fixed order: counters, histograms, misses per decode step summed over layers.
      for (size_t c = 0; c < C; ++c) {
        auto& s = result.configs[c];
        const int32_t H = configs[c].H;
        for (size_t j = 0; j < nb; ++j) {
          const bool cold = cold_start_step(recs[j].step - first_step, H, K);
          int64_t m = 0;
          for (size_t l = 0; l < Ls; ++l) {
            const ReplayStepRow& row = rows[(c * Ls + l) * nb + j];
            s.selected += row.selected;
            s.hits += row.hits;
            s.newest_hits += row.newest_hits;
            s.misses += row.misses;
            s.fast_path_step_layers += row.seq_len <= H;
            s.miss_hist[static_cast<size_t>(row.misses)] += 1;
            if (cold) s.cold_miss_hist[static_cast<size_t>(row.misses)] += 1;
            m += row.misses;
          }
          s.step_layers += L;
          s.step_miss_hist[static_cast<size_t>(m)] += 1;
          if (cold) s.cold_step_miss_hist[static_cast<size_t>(m)] += 1;
          s.step_misses.push_back(static_cast<int32_t>(m));
          s.decode_steps += 1;
        }
        if (options.keep_step_rows) {
          for (size_t l = 0; l < Ls; ++l) {
            const ReplayStepRow* src = rows.data() + (c * Ls + l) * nb;
            auto& dst = request_rows.rows[c][l];
            dst.insert(dst.end(), src, src + nb);
          }
        }
      }
      for (size_t j = 0; j < nb; ++j) {
        result.step_seq_lens.push_back(recs[j].seq_len);
        result.step_index.push_back(static_cast<int32_t>(recs[j].step - first_step));
        if (options.keep_step_rows) request_rows.steps.push_back(recs[j].step);
      }
      result.decode_steps += static_cast<int64_t>(nb);
      progress.steps_done += static_cast<int64_t>(nb);
      int64_t entries = 0;
      for (const ReplayStepRow& row : rows) entries += row.selected;
      progress.entries_done += entries;
      result.entries += entries;
      first_chunk = false;
      // Drop the steps done; the look-ahead (offline) moves to the front (swaps of record buffers, no copies).
      std::rotate(recs.begin(), recs.begin() + static_cast<std::ptrdiff_t>(nb),
                  recs.begin() + static_cast<std::ptrdiff_t>(nbuf));
      nbuf -= nb;
      const bool finished = request_done && nbuf == 0;
      if (finished) {
        ++result.requests;
        ++progress.requests_done;
        result.lookahead_cut_requests += cut;
        if (options.keep_step_rows && row_sink) row_sink(request_rows);
      }
      if (options.progress) {
        progress.seconds = since(t_start);
        options.progress(progress);
      }
      if (finished) break;
    }
  }

  for (auto& s : result.configs) s.h2d_bytes = s.misses * options.row_bytes;
  result.seconds = since(t_start);
  return result;
}

}  // namespace hisparse::sim

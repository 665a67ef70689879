// @brief The replay engine as it was before issue 16 (commit cc913fa, sim/replay/replay_engine.cpp), kept verbatim
// but renamed so that the differential tests (test_replay_differential.cpp) compare the new engine with it: totals,
// histograms and every per-step row, on several traces and policies.
#include "tests/sim/old_replay_engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "cpu_ref/policies/registry.h"
#include "traces/trace_limits.h"

namespace hisparse::sim::old {

namespace {

struct Config {
  std::string policy;
  int32_t H = 0;
  bool offline = false;
};

/// Per-thread accumulators of one configuration (merged after the run; integer sums, so order is irrelevant).
struct Accum {
  int64_t selected = 0, hits = 0, newest_hits = 0, misses = 0, step_layers = 0, fast = 0;
  std::vector<int64_t> miss_hist;
};

struct Worker {
  cpu_ref::SwapInScratch scratch;
  SwapInPlan plan;
  std::vector<Accum> acc;  // [config]
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
    const bool offline = cpu_ref::make_policy(p)->needs_future();  // also rejects unknown names
    for (int32_t H : o.buffer_sizes) out.push_back({p, H, offline});
  }
  return out;
}

}  // namespace

ReplayResult old_run_replay(traces::TraceSource& source, const ReplayOptions& options,
                        const std::function<void(const ReplayRequestRows&)>& row_sink) {
  const traces::TraceMeta meta = source.meta();
  const int32_t L = meta.layers;
  const int32_t K = meta.top_k;
  if (L < 1 || K < 1) throw_error("replay: trace {} declares {} layers and top_k {}", meta.source, L, K);
  const std::vector<Config> configs = make_configs(options, K);
  const size_t C = configs.size();
  const bool offline = std::any_of(configs.begin(), configs.end(), [](const Config& c) { return c.offline; });
  const size_t record_bytes = static_cast<size_t>(L) * static_cast<size_t>(K) * sizeof(int32_t);
  const size_t batch_cap = offline ? SIZE_MAX : std::max<size_t>(1, options.batch_bytes / record_bytes);
  const int threads = std::min(options.threads, L);

  ReplayResult result;
  result.meta = meta;
  result.requests = 0;
  for (size_t c = 0; c < C; ++c) {
    ReplayConfigStats s;
    s.policy = configs[c].policy;
    s.buffer_size = configs[c].H;
    s.miss_hist.assign(static_cast<size_t>(K) + 1, 0);
    s.step_miss_hist.assign(static_cast<size_t>(L) * K + 1, 0);
    result.configs.push_back(std::move(s));
  }
  std::vector<Worker> workers(static_cast<size_t>(threads));
  for (auto& w : workers) {
    w.acc.resize(C);
    for (auto& a : w.acc) a.miss_hist.assign(static_cast<size_t>(K) + 1, 0);
  }
  // states[layer][config]: one policy state per (request, layer, config), reset at each request.
  std::vector<std::vector<std::unique_ptr<cpu_ref::SwapInPolicy>>> states(static_cast<size_t>(L));
  for (auto& per_layer : states) {
    for (const auto& cfg : configs) per_layer.push_back(cpu_ref::make_policy(cfg.policy));
  }

  const int64_t requests_total = static_cast<int64_t>(source.request_ids().size());
  const auto t0 = std::chrono::steady_clock::now();
  ReplayProgress progress;
  progress.requests_total = requests_total;

  std::vector<traces::StepRecord> recs(1);
  bool have = source.next(recs[0]);
  std::vector<ReplayStepRow> batch_rows;  // [config][layer][step in batch]
  ReplayRequestRows request_rows;
  while (have) {
    const int64_t request = recs[0].request_id;
    bool first_batch = true;
    if (options.keep_step_rows) {
      request_rows.request_id = request;
      request_rows.steps.clear();
      request_rows.rows.assign(C, std::vector<std::vector<ReplayStepRow>>(static_cast<size_t>(L)));
    }
    bool request_done = false;
    while (!request_done) {
      // Fill a batch: recs[0] is already read; read on until the request changes or the batch is full. A record
      // of the next request stays in recs[nb] and moves to recs[0] afterwards.
      size_t nb = 1;
      while (true) {
        if (nb >= batch_cap) break;
        if (recs.size() <= nb) recs.emplace_back();
        have = source.next(recs[nb]);
        if (!have) {
          request_done = true;
          break;
        }
        if (recs[nb].request_id != request) {
          request_done = true;
          break;
        }
        ++nb;
      }
      if (nb >= batch_cap && have) {
        // Full batch: peek whether the request continues (the peeked record opens the next batch).
        if (recs.size() <= nb) recs.emplace_back();
        have = source.next(recs[nb]);
        request_done = !have || recs[nb].request_id != request;
      }
      for (size_t j = 0; j < nb; ++j) {
        const auto& r = recs[j];
        // Every source is held to the readers' bound (they check it too; sources may be any).
        if (r.seq_len < 1 || r.seq_len > traces::kMaxSeqLen)
          throw_error("replay: trace {}: request {}, step {}: seq_len {} (expected 1..{})", meta.source, r.request_id,
                      r.step, r.seq_len, traces::kMaxSeqLen);
        if (r.positions.size() != static_cast<size_t>(L) * K) {
          throw_error("replay: trace {}: request {}, step {} holds {} positions, expected layers x top_k = {} x {}",
                      meta.source, r.request_id, r.step, r.positions.size(), L, K);
        }
      }

      // One task per layer; each runs every configuration over the batch's steps.
      batch_rows.assign(C * static_cast<size_t>(L) * nb, ReplayStepRow{});
      std::atomic<int32_t> next_layer{0};
      std::exception_ptr error;
      std::mutex error_mutex;
      auto work = [&](Worker& w) {
        try {
          for (int32_t l = next_layer++; l < L; l = next_layer++) {
            std::map<int32_t, std::shared_ptr<const cpu_ref::LayerFuture>> futures;  // by H
            for (size_t c = 0; c < C; ++c) {
              cpu_ref::SwapInPolicy& p = *states[l][c];
              if (first_batch) {
                p.reset(configs[c].H, meta.initial_state);
                if (configs[c].offline) {
                  auto& f = futures[configs[c].H];
                  if (!f) {
                    std::vector<const int32_t*> sel(nb);
                    std::vector<int32_t> counts(nb, K), ns(nb);
                    for (size_t j = 0; j < nb; ++j) {
                      sel[j] = recs[j].layer(l, K);
                      ns[j] = recs[j].seq_len;
                    }
                    f = std::make_shared<const cpu_ref::LayerFuture>(
                        cpu_ref::build_layer_future(sel, counts, ns, configs[c].H));
                  }
                  p.set_future(f);
                }
              }
              Accum& a = w.acc[c];
              ReplayStepRow* out = batch_rows.data() + (c * static_cast<size_t>(L) + static_cast<size_t>(l)) * nb;
              for (size_t j = 0; j < nb; ++j) {
                const auto& r = recs[j];
                cpu_ref::StepInput in{r.layer(l, K), K, r.seq_len, K, nullptr, options.row_bytes};
                p.step(in, {r.request_id, l, r.step}, w.plan, w.scratch);
                const SwapInCounters& k = w.plan.counters;
                out[j] = {r.seq_len, static_cast<int32_t>(k.selected), static_cast<int32_t>(k.hits),
                          static_cast<int32_t>(k.newest_hits), static_cast<int32_t>(k.misses)};
                a.selected += k.selected;
                a.hits += k.hits;
                a.newest_hits += k.newest_hits;
                a.misses += k.misses;
                a.step_layers += 1;
                a.fast += k.fast_path;
                a.miss_hist[static_cast<size_t>(k.misses)] += 1;
              }
            }
          }
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
          next_layer = L;  // stop the others early
        }
      };
      if (threads == 1) {
        work(workers[0]);
      } else {
        std::vector<std::thread> pool;
        for (int t = 1; t < threads; ++t) pool.emplace_back(work, std::ref(workers[static_cast<size_t>(t)]));
        work(workers[0]);
        for (auto& th : pool) th.join();
      }
      // The first error in layer order would need all layers to finish; any error is reported, naming its place.
      if (error) std::rethrow_exception(error);

      auto row_at = [&](size_t c, int32_t l, size_t j) -> const ReplayStepRow& {
        return batch_rows[(c * static_cast<size_t>(L) + static_cast<size_t>(l)) * nb + j];
      };
      // Per decode step: misses summed over layers (host->device traffic of one step of one request).
      for (size_t c = 0; c < C; ++c) {
        auto& s = result.configs[c];
        for (size_t j = 0; j < nb; ++j) {
          int64_t m = 0;
          for (int32_t l = 0; l < L; ++l) m += row_at(c, l, j).misses;
          s.step_miss_hist[static_cast<size_t>(m)] += 1;
          s.decode_steps += 1;
        }
        if (options.keep_step_rows) {
          for (int32_t l = 0; l < L; ++l) {
            const ReplayStepRow* src = batch_rows.data() + (c * static_cast<size_t>(L) + static_cast<size_t>(l)) * nb;
            auto& dst = request_rows.rows[c][static_cast<size_t>(l)];
            dst.insert(dst.end(), src, src + nb);
          }
        }
      }
      if (options.keep_step_rows) {
        for (size_t j = 0; j < nb; ++j) request_rows.steps.push_back(recs[j].step);
      }
      result.decode_steps += static_cast<int64_t>(nb);
      progress.steps_done += static_cast<int64_t>(nb);
      for (size_t j = 0; j < nb; ++j) {
        for (int32_t l = 0; l < L; ++l) {
          for (size_t c = 0; c < C; ++c) {
            progress.entries_done += row_at(c, l, j).selected;
          }
        }
      }
      first_batch = false;
      if (have) std::swap(recs[0], recs[nb]);
      if (request_done) {
        ++result.requests;
        ++progress.requests_done;
        if (options.keep_step_rows && row_sink) row_sink(request_rows);
      }
      if (options.progress) {
        progress.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        options.progress(progress);
      }
    }
  }

  for (size_t c = 0; c < C; ++c) {
    auto& s = result.configs[c];
    for (const auto& w : workers) {
      const Accum& a = w.acc[c];
      s.selected += a.selected;
      s.hits += a.hits;
      s.newest_hits += a.newest_hits;
      s.misses += a.misses;
      s.step_layers += a.step_layers;
      s.fast_path_step_layers += a.fast;
      for (size_t m = 0; m < a.miss_hist.size(); ++m) s.miss_hist[m] += a.miss_hist[m];
    }
    s.h2d_bytes = s.misses * options.row_bytes;
  }
  return result;
}

}  // namespace hisparse::sim::old

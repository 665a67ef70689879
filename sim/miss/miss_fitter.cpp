// @brief MissFitter: classification of replayed step-layers (first step, warm-up, steady state), n/H bins, pooling
// by (policy, H/K), and the one-pass replay that feeds it.
#include "sim/miss/miss_fitter.h"

#include <algorithm>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "traces/trace_source.h"

namespace hisparse::sim {

const std::vector<double>& MissFitter::bin_edges() {
  // Finer where the fraction changes fastest (n just above H), geometric-ish beyond.
  static const std::vector<double> edges = {1,  1.25, 1.5, 2,  3,  4,  6, 8,
                                            12, 16,   24,  32, 48, 64, std::numeric_limits<double>::infinity()};
  return edges;
}

void MissFitter::begin_trace(int32_t top_k, const std::vector<MissFitConfig>& configs) {
  if (top_k < 1) throw_error("miss fit: top_k {} (expected >= 1)", top_k);
  current_.clear();
  const size_t nb = bin_edges().size() - 1;
  for (const MissFitConfig& c : configs) {
    if (c.H < top_k) throw_error("miss fit: buffer size {} is below the trace's top_k {}", c.H, top_k);
    Acc& a = acc_[{c.policy, c.h_over_k}];
    if (a.bins.empty()) a.bins.resize(nb);
    current_.push_back(Current{&a, c.H, warmup_steps_for(c.H, top_k)});
  }
}

void MissFitter::add(const ReplayRequestRows& rr) {
  if (rr.rows.size() != current_.size())
    throw_error("miss fit: request {} has rows of {} configurations, the trace declared {}", rr.request_id,
                rr.rows.size(), current_.size());
  if (rr.steps.empty()) return;
  const std::vector<double>& edges = bin_edges();
  const size_t nb = edges.size() - 1;
  const int64_t first = rr.steps.front();
  for (size_t c = 0; c < current_.size(); ++c) {
    Acc& a = *current_[c].acc;
    const int32_t H = current_[c].H;
    const int64_t W = current_[c].warmup_steps;
    for (const auto& layer : rr.rows[c]) {
      for (size_t j = 0; j < layer.size() && j < rr.steps.size(); ++j) {
        const ReplayStepRow& row = layer[j];
        if (row.seq_len <= H) continue;  // fast path: nothing can miss, nothing to learn
        const int64_t usable = int64_t{row.selected} - row.newest_hits;  // the newest token never misses
        if (usable <= 0) continue;
        const int64_t s = rr.steps[j] - first;
        if (s <= W) {
          Part& p = s == 0 ? a.first : a.warmup;
          p.misses += row.misses;
          p.usable += usable;
          ++p.count;
          continue;
        }
        const double r = static_cast<double>(row.seq_len) / H;
        size_t b = 0;
        while (b + 1 < nb && r >= edges[b + 1]) ++b;
        Bin& bin = a.bins[b];
        bin.misses += row.misses;
        bin.usable += usable;
        bin.ratio_sum += r;
        ++bin.count;
        a.ratio_min = a.steady_count == 0 ? r : std::min(a.ratio_min, r);
        a.ratio_max = a.steady_count == 0 ? r : std::max(a.ratio_max, r);
        ++a.steady_count;
      }
    }
  }
}

MissColumn MissFitter::to_column(double h_over_k, const Acc& a) {
  auto share = [](int64_t m, int64_t u) { return u > 0 ? std::min(1.0, static_cast<double>(m) / u) : 0.0; };
  MissColumn c;
  c.h_over_k = h_over_k;
  c.first_step = share(a.first.misses, a.first.usable);
  c.first_step_samples = a.first.count;
  c.warmup = share(a.warmup.misses, a.warmup.usable);
  c.warmup_samples = a.warmup.count;
  for (const Bin& b : a.bins) {
    if (b.count == 0) continue;
    c.steady.emplace_back(b.ratio_sum / static_cast<double>(b.count), share(b.misses, b.usable));
    c.samples += b.count;
  }
  c.n_over_h_min = a.ratio_min;
  c.n_over_h_max = a.ratio_max;
  return c;
}

std::map<std::string, std::vector<MissColumn>> MissFitter::columns() const {
  std::map<std::string, std::vector<MissColumn>> out;
  for (const auto& [key, a] : acc_) out[key.first].push_back(to_column(key.second, a));  // map order: H/K ascends
  return out;
}

MissColumn MissFitter::column(const std::string& policy, double h_over_k) const {
  const auto it = acc_.find({policy, h_over_k});
  if (it == acc_.end()) throw_error("miss fit: no replay fed policy {} at H/K {}", policy, h_over_k);
  return to_column(h_over_k, it->second);
}

MissSurface MissFitter::surface(const std::string& name, std::vector<std::string>* skipped) const {
  MissSurface s;
  s.name = name;
  for (auto& [policy, cols] : columns()) {
    for (MissColumn& c : cols) {
      std::vector<std::string> missing;
      if (c.first_step_samples == 0) missing.push_back("first step");
      if (c.warmup_samples == 0) missing.push_back("warm-up");
      if (c.samples == 0) missing.push_back("steady state");
      if (missing.empty()) {
        s.policies[policy].push_back(std::move(c));
      } else if (skipped) {
        skipped->push_back(fmt::format("{} at H/K {:g}: no slow-path step-layer (n > H) in the {}, column left out",
                                       policy, c.h_over_k, fmt::join(missing, ", ")));
      }
    }
  }
  if (s.policies.empty())
    throw_error("miss fit {}: no column has slow-path samples (n > H) in all of first step, warm-up and steady "
                "state; use smaller buffer sizes or traces with longer sequences and more steps",
                name);
  return s;
}

MissTraceInfo replay_into_fitter(MissFitter& fitter, const std::string& trace_path,
                                 const std::vector<std::string>& policies, const std::vector<int32_t>& buffer_sizes,
                                 const std::vector<double>& h_over_k, int64_t row_bytes, int threads,
                                 ReplayResult* result, const FitSplit* split) {
  if (buffer_sizes.size() != h_over_k.size())
    throw_error("miss fit: {} buffer sizes but {} H/K columns", buffer_sizes.size(), h_over_k.size());
  if (std::set<int32_t>(buffer_sizes.begin(), buffer_sizes.end()).size() != buffer_sizes.size())
    throw_error("miss fit: trace {}: a buffer size repeats (it would count its samples twice)", trace_path);
  auto src = traces::open_trace(trace_path);
  const traces::TraceMeta meta = src->meta();
  std::vector<MissFitConfig> configs;
  for (const std::string& p : policies)
    for (size_t i = 0; i < buffer_sizes.size(); ++i) configs.push_back({p, buffer_sizes[i], h_over_k[i]});
  for (int32_t H : buffer_sizes)
    if (H < meta.top_k)
      throw_error("trace {}: buffer size {} is below the trace's top_k {} (docs/swap_in.md: H >= K)", trace_path, H,
                  meta.top_k);
  fitter.begin_trace(meta.top_k, configs);
  if (split) split->held_out->begin_trace(meta.top_k, configs);
  ReplayOptions opt;
  opt.policies = policies;
  opt.buffer_sizes = buffer_sizes;
  opt.row_bytes = row_bytes;
  opt.threads = std::max(1, threads);
  opt.keep_step_rows = true;
  MissTraceInfo info;
  info.path = trace_path;
  info.layers = meta.layers;
  info.top_k = meta.top_k;
  info.initial_state = meta.initial_state;
  info.n_min = std::numeric_limits<int32_t>::max();
  auto sink = [&](const ReplayRequestRows& rr) {
    if (!rr.rows.empty() && !rr.rows[0].empty())
      for (const ReplayStepRow& row : rr.rows[0][0]) {
        info.n_min = std::min(info.n_min, row.seq_len);
        info.n_max = std::max(info.n_max, row.seq_len);
      }
    if (split && split->held(rr))
      split->held_out->add(rr);
    else
      fitter.add(rr);
  };
  ReplayResult res = run_replay(*src, opt, sink);
  info.requests = res.requests;
  info.decode_steps = res.decode_steps;
  if (info.n_max == 0) info.n_min = 0;
  if (result) *result = std::move(res);
  return info;
}

}  // namespace hisparse::sim

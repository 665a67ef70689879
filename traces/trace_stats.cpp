// @brief Streaming per-layer statistics of a trace, printed as a table or JSON.
#include "traces/trace_stats.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include <fmt/format.h>

namespace hisparse::traces {
namespace {

int bucket_of(int64_t d) {
  int b = 0;
  int64_t edge = 1;
  while (b < kReuseBuckets - 1 && d > edge) {
    edge *= 2;
    ++b;
  }
  return b;
}

/// Per (request, layer) working state.
struct LayerTracker {
  std::vector<int32_t> prev;                        // sorted set of the previous step
  std::unordered_map<int32_t, int64_t> last_seen;   // position -> step it was last selected
  std::unordered_map<int32_t, int32_t> in_window;   // position -> occurrences in the window
  std::deque<std::vector<int32_t>> window;          // the last `window` step sets
  void reset() {
    prev.clear();
    last_seen.clear();
    in_window.clear();
    window.clear();
  }
};

}  // namespace

std::string reuse_bucket_label(int bucket) {
  if (bucket == 0) return "1";
  if (bucket == 1) return "2";
  if (bucket == kReuseBuckets - 1) return fmt::format(">{}", int64_t{1} << (kReuseBuckets - 2));
  return fmt::format("{}-{}", (int64_t{1} << (bucket - 1)) + 1, int64_t{1} << bucket);
}

LayerStats TraceStats::total() const {
  LayerStats t;
  for (const LayerStats& l : layers) {
    t.steps += l.steps;
    t.selected += l.selected;
    t.overlap_steps += l.overlap_steps;
    t.overlap_sum += l.overlap_sum;
    for (int b = 0; b < kReuseBuckets; ++b) t.reuse[b] += l.reuse[b];
    t.first_use += l.first_use;
    t.ws_steps += l.ws_steps;
    t.ws_sum += l.ws_sum;
    t.ws_max = std::max(t.ws_max, l.ws_max);
  }
  return t;
}

TraceStats compute_trace_stats(TraceSource& src, const TraceStatsOptions& options) {
  TraceStats s;
  s.meta = src.meta();
  s.options = options;
  const int32_t layers = s.meta.layers, k = s.meta.top_k;
  s.layers.resize(static_cast<size_t>(layers));
  std::vector<LayerTracker> track(static_cast<size_t>(layers));
  std::vector<int32_t> cur;
  StepRecord rec;
  bool first = true;
  int64_t request = 0;
  while (src.next(rec)) {
    if (first || rec.request_id != request) {
      for (auto& t : track) t.reset();
      request = rec.request_id;
      ++s.requests;
      first = false;
    }
    ++s.steps;
    for (int32_t l = 0; l < layers; ++l) {
      LayerStats& ls = s.layers[static_cast<size_t>(l)];
      LayerTracker& t = track[static_cast<size_t>(l)];
      const int32_t* row = rec.layer(l, k);
      cur.clear();
      for (int32_t i = 0; i < k; ++i) {
        if (row[i] >= 0) cur.push_back(row[i]);
      }
      std::sort(cur.begin(), cur.end());
      ++ls.steps;
      ls.selected += static_cast<int64_t>(cur.size());
      if (rec.step > 0 && !cur.empty()) {
        std::vector<int32_t> common;
        std::set_intersection(cur.begin(), cur.end(), t.prev.begin(), t.prev.end(), std::back_inserter(common));
        ls.overlap_sum += static_cast<double>(common.size()) / static_cast<double>(cur.size());
        ++ls.overlap_steps;
      }
      for (int32_t p : cur) {
        auto [it, fresh] = t.last_seen.emplace(p, rec.step);
        if (fresh) {
          ++ls.first_use;
        } else {
          ++ls.reuse[bucket_of(rec.step - it->second)];
          it->second = rec.step;
        }
        ++t.in_window[p];
      }
      t.window.push_back(cur);
      if (static_cast<int32_t>(t.window.size()) > options.window) {
        for (int32_t p : t.window.front()) {
          auto it = t.in_window.find(p);
          if (--it->second == 0) t.in_window.erase(it);
        }
        t.window.pop_front();
      }
      const auto ws = static_cast<int64_t>(t.in_window.size());
      ls.ws_sum += static_cast<double>(ws);
      ++ls.ws_steps;
      ls.ws_max = std::max(ls.ws_max, ws);
      t.prev.swap(cur);
    }
  }
  return s;
}

namespace {
std::string reuse_share(const LayerStats& l, int b) {
  const int64_t reused = l.selected - l.first_use;
  return fmt::format("{:.3f}", reused ? static_cast<double>(l.reuse[b]) / static_cast<double>(reused) : 0.0);
}
}  // namespace

std::string format_stats_table(const TraceStats& s) {
  std::string out = fmt::format(
      "trace {}: {} requests, {} steps, {} layers, top_k {}, initial state {}\n"
      "overlap = |S_t ∩ S_t-1| / |S_t| (mean over steps); reuse d = steps since the layer last selected the position "
      "(share of re-uses); ws = distinct positions over the last {} steps\n\n",
      s.meta.source, s.requests, s.steps, s.meta.layers, s.meta.top_k, to_string(s.meta.initial_state),
      s.options.window);
  out += fmt::format("{:>6} {:>8} {:>10}", "layer", "overlap", "sel/step");
  for (int b = 0; b < kReuseBuckets; ++b) out += fmt::format(" {:>7}", "d=" + reuse_bucket_label(b));
  out += fmt::format(" {:>9} {:>9} {:>9}\n", "first", "ws mean", "ws max");
  auto row = [&](const std::string& name, const LayerStats& l) {
    out += fmt::format("{:>6} {:>8.4f} {:>10.1f}", name, l.overlap(),
                       l.steps ? static_cast<double>(l.selected) / static_cast<double>(l.steps) : 0.0);
    for (int b = 0; b < kReuseBuckets; ++b) out += fmt::format(" {:>7}", reuse_share(l, b));
    out += fmt::format(" {:>9} {:>9.1f} {:>9}\n", l.first_use, l.ws_mean(), l.ws_max);
  };
  for (size_t l = 0; l < s.layers.size(); ++l) row(std::to_string(l), s.layers[l]);
  row("all", s.total());
  return out;
}

std::string format_stats_json(const TraceStats& s) {
  auto layer_json = [](const LayerStats& l) {
    std::string reuse;
    for (int b = 0; b < kReuseBuckets; ++b) {
      reuse += fmt::format("{}\"{}\": {}", b ? ", " : "", reuse_bucket_label(b), l.reuse[b]);
    }
    return fmt::format(
        "{{\"steps\": {}, \"selected\": {}, \"adjacent_overlap\": {:.6f}, \"reuse_distance\": {{{}}}, "
        "\"first_use\": {}, \"working_set_mean\": {:.3f}, \"working_set_max\": {}}}",
        l.steps, l.selected, l.overlap(), reuse, l.first_use, l.ws_mean(), l.ws_max);
  };
  std::string layers;
  for (size_t l = 0; l < s.layers.size(); ++l) layers += fmt::format("{}\n    {}", l ? "," : "", layer_json(s.layers[l]));
  std::string src;
  for (char c : s.meta.source) {
    if (c == '"' || c == '\\') src.push_back('\\');
    src.push_back(c);
  }
  return fmt::format(
      "{{\n  \"source\": \"{}\",\n  \"requests\": {},\n  \"steps\": {},\n  \"layers\": {},\n  \"top_k\": {},\n"
      "  \"initial_state\": \"{}\",\n  \"window\": {},\n  \"all\": {},\n  \"per_layer\": [{}\n  ]\n}}\n",
      src, s.requests, s.steps, s.meta.layers, s.meta.top_k, to_string(s.meta.initial_state), s.options.window,
      layer_json(s.total()), layers);
}

}  // namespace hisparse::traces

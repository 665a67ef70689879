// @brief Synthetic trace generator: per (request, layer) random streams, portable integer/real mapping.
#include "traces/trace_generator.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "traces/trace_limits.h"

namespace hisparse::traces {

uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t z = a + 0x9E3779B97F4A7C15ull * (b + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

namespace {

/// std distributions differ between standard libraries; these mappings do not.
struct Rng {
  std::mt19937_64 gen;
  explicit Rng(uint64_t seed) : gen(seed) {}
  uint64_t below(uint64_t m) { return gen() % m; }  // bias < m / 2^64, irrelevant here
  double real() { return static_cast<double>(gen() >> 11) * 0x1.0p-53; }
};

struct LayerState {
  Rng rng{0};
  double overlap = 0;
  std::vector<double> centres;    // topic centres, token positions
  std::vector<int32_t> topic;     // current topic positions (not sinks, not window), unordered
};

/// The positions of [lo, lo + span) taken so far, answering "the first free position at or after p, wrapping
/// round" (a linear probe's answer) without walking runs of taken positions one by one: a linear probe costs
/// O(top_k) per draw once topic draws pile up into long runs, O(top_k^2) per step-layer. Each taken position
/// points at a position no further than the first free one after it (every position in between is taken); a
/// lookup follows the pointers and shortens them (path compression), so a step-layer costs about O(top_k).
class TakenPositions {
 public:
  void reset(int32_t lo, int32_t span, size_t expected) {
    lo_ = lo;
    span_ = span;
    next_.clear();
    next_.reserve(expected);
  }
  size_t size() const { return next_.size(); }
  void take(int32_t p) { next_.emplace(p, after(p)); }
  /// Takes and returns the first free position at or after p (cyclically); one must be free.
  int32_t take_first_free_from(int32_t p) {
    int32_t free = p;
    for (auto it = next_.find(free); it != next_.end(); it = next_.find(free)) free = it->second;
    for (auto it = next_.find(p); it != next_.end() && it->second != free; it = next_.find(p)) {
      p = std::exchange(it->second, free);  // every position between p and free is taken
    }
    take(free);
    return free;
  }

 private:
  int32_t after(int32_t p) const { return lo_ + (p - lo_ + 1) % span_; }
  int32_t lo_ = 0, span_ = 1;
  std::unordered_map<int32_t, int32_t> next_;  // taken position -> a position at most the first free one after it
};

class GeneratedTrace final : public TraceSource {
 public:
  explicit GeneratedTrace(const GeneratorOptions& o) : o_(o) {
    check_generator_options(o);
    meta_.layers = o.layers;
    meta_.top_k = o.top_k;
    meta_.initial_state = o.initial_state;
    meta_.source = "generated(seed " + std::to_string(o.seed) + ")";
    layers_.resize(static_cast<size_t>(o.layers));
    start_request(0);
  }

  const TraceMeta& meta() const override { return meta_; }

  std::vector<int64_t> request_ids() override {
    std::vector<int64_t> ids(static_cast<size_t>(o_.requests));
    for (int64_t i = 0; i < o_.requests; ++i) ids[static_cast<size_t>(i)] = i;
    return ids;
  }

  void seek_request(int64_t request_id) override {
    if (request_id < 0 || request_id >= o_.requests) {
      throw_error("{}: no request {} (ids are 0..{})", meta_.source, request_id, o_.requests - 1);
    }
    start_request(request_id);
  }

  bool next(StepRecord& out) override {
    if (step_ == o_.steps) {
      if (request_ + 1 >= o_.requests) return false;
      start_request(request_ + 1);
    }
    if (request_ >= o_.requests) return false;
    const auto n = static_cast<int32_t>(o_.prompt_len + step_);
    out.request_id = request_;
    out.step = step_;
    out.seq_len = n;
    out.positions.assign(static_cast<size_t>(o_.layers) * o_.top_k, -1);
    for (int32_t l = 0; l < o_.layers; ++l) {
      step_layer(layers_[static_cast<size_t>(l)], n, out.positions.data() + static_cast<size_t>(l) * o_.top_k);
    }
    ++step_;
    return true;
  }

 private:
  void start_request(int64_t r) {
    request_ = r;
    step_ = 0;
    for (int32_t l = 0; l < o_.layers; ++l) {
      LayerState& s = layers_[static_cast<size_t>(l)];
      s.rng = Rng(mix_seed(mix_seed(o_.seed, static_cast<uint64_t>(r)), static_cast<uint64_t>(l)));
      s.overlap = std::clamp(o_.overlap + o_.layer_spread * (s.rng.real() - 0.5), 0.0, 1.0);
      s.centres.assign(static_cast<size_t>(o_.topics), 0.0);
      for (double& c : s.centres) c = s.rng.real() * o_.prompt_len;
      s.topic.clear();
    }
  }

  int32_t draw(LayerState& s, int32_t lo, int32_t hi) {
    // hi > lo guaranteed by the caller; topic draws that land outside [lo, hi) are retried a few times.
    if (s.centres.empty() || s.rng.real() < o_.uniform_fraction) {
      return lo + static_cast<int32_t>(s.rng.below(static_cast<uint64_t>(hi - lo)));
    }
    const double c = s.centres[s.rng.below(s.centres.size())];
    for (int attempt = 0; attempt < 8; ++attempt) {
      const double p = std::floor(c + (s.rng.real() + s.rng.real() - 1.0) * o_.topic_width);
      if (p >= lo && p < hi) return static_cast<int32_t>(p);
    }
    return lo + static_cast<int32_t>(s.rng.below(static_cast<uint64_t>(hi - lo)));
  }

  void step_layer(LayerState& s, int32_t n, int32_t* row) {
    const int32_t k = std::min(o_.top_k, n);
    const int32_t sinks = std::min(o_.sinks, n);
    const int32_t win_lo = std::max(sinks, n - o_.recent_window);
    const int32_t fixed = sinks + (n - win_lo);
    int32_t count = 0;
    if (n <= o_.top_k || fixed >= k) {
      // Short context: everything (or just sinks + window) fits; topic state restarts from there.
      for (int32_t p = 0; p < sinks && count < k; ++p) row[count++] = p;
      for (int32_t p = std::max(win_lo, n - (k - count)); p < n; ++p) row[count++] = p;
      for (int32_t p = sinks; p < win_lo && count < k; ++p) row[count++] = p;
      s.topic.clear();
      for (int32_t i = 0; i < count; ++i) {
        if (row[i] >= sinks && row[i] < win_lo) s.topic.push_back(row[i]);
      }
    } else {
      for (double& c : s.centres) {
        if (s.rng.real() < o_.topic_drift) c = s.rng.real() * win_lo;
      }
      const int32_t budget = k - fixed;
      const int64_t target = std::llround(s.overlap * k) - sinks - std::max(0, n - win_lo - 1);
      const auto keep = static_cast<size_t>(std::clamp<int64_t>(target, 0, std::min<int64_t>(budget, s.topic.size())));
      // Partial Fisher-Yates: the first `keep` entries survive, the rest are dropped (and not redrawn).
      for (size_t i = 0; i < keep; ++i) {
        std::swap(s.topic[i], s.topic[i + s.rng.below(s.topic.size() - i)]);
      }
      const int32_t span = win_lo - sinks;
      taken_.reset(sinks, span, s.topic.size() + static_cast<size_t>(budget));
      for (int32_t p : s.topic) taken_.take(p);
      s.topic.resize(keep);
      while (static_cast<int32_t>(s.topic.size()) < budget) {
        const int32_t p = draw(s, sinks, win_lo);
        if (taken_.size() >= static_cast<size_t>(span)) break;  // context too short to find more
        s.topic.push_back(taken_.take_first_free_from(p));
      }
      for (int32_t p = 0; p < sinks; ++p) row[count++] = p;
      for (int32_t p : s.topic) row[count++] = p;
      for (int32_t p = win_lo; p < n; ++p) row[count++] = p;
    }
    if (o_.shuffle) {
      for (int32_t i = count - 1; i > 0; --i) std::swap(row[i], row[s.rng.below(static_cast<uint64_t>(i) + 1)]);
    } else {
      std::sort(row, row + count);
    }
  }

  GeneratorOptions o_;
  TraceMeta meta_;
  std::vector<LayerState> layers_;
  TakenPositions taken_;
  int64_t request_ = 0, step_ = 0;
};

}  // namespace

void check_generator_options(const GeneratorOptions& o) {
  auto need = [](bool ok, const char* field, auto value, const char* expected) {
    if (!ok) throw_error("generator option {} = {} (expected {})", field, value, expected);
  };
  need(o.requests >= 1 && o.requests <= kMaxGeneratedRequests, "requests", o.requests, "1..2^20");
  need(o.steps >= 1 && o.steps <= kMaxGeneratedSteps, "steps", o.steps, "1..2^20");
  need(o.layers >= 1 && o.layers <= kMaxLayers, "layers", o.layers, "1..4096");
  need(o.top_k >= 1 && o.top_k <= kMaxTopK, "top_k", o.top_k, "1..2^20");
  need(int64_t{o.layers} * o.top_k <= kMaxStepEntries, "layers x top_k", int64_t{o.layers} * o.top_k, "<= 2^26");
  need(o.prompt_len >= 1 && int64_t{o.prompt_len} + o.steps <= kMaxSeqLen, "prompt_len", o.prompt_len,
       ">= 1 with prompt_len + steps <= 2^24 (the longest context a trace may hold)");
  need(o.overlap >= 0 && o.overlap <= 1, "overlap", o.overlap, "0..1");
  need(o.sinks >= 0, "sinks", o.sinks, ">= 0");
  need(o.recent_window >= 1, "recent_window", o.recent_window, ">= 1 (the newest token is always selected)");
  need(o.topics >= 0 && o.topics <= 4096, "topics", o.topics, "0..4096");
  need(o.topic_width > 0, "topic_width", o.topic_width, "> 0");
  need(o.topic_drift >= 0 && o.topic_drift <= 1, "topic_drift", o.topic_drift, "0..1");
  need(o.uniform_fraction >= 0 && o.uniform_fraction <= 1, "uniform_fraction", o.uniform_fraction, "0..1");
  need(o.layer_spread >= 0 && o.layer_spread <= 1, "layer_spread", o.layer_spread, "0..1");
}

std::vector<std::string> generator_preset_names() { return {"default", "tiny", "dsv32", "low-overlap"}; }

GeneratorOptions generator_preset(const std::string& name) {
  GeneratorOptions o;
  if (name == "default") return o;
  if (name == "tiny") {
    o.requests = 2;
    o.steps = 12;
    o.layers = 3;
    o.top_k = 16;
    o.prompt_len = 40;
    o.sinks = 2;
    o.recent_window = 4;
    o.topics = 2;
    o.topic_width = 6;
    return o;
  }
  if (name == "dsv32") {
    o.layers = 61;
    o.prompt_len = 32768;
    return o;
  }
  if (name == "low-overlap") {
    o.overlap = 0.6;
    return o;
  }
  throw_error("generator preset '{}' unknown (expected default, tiny, dsv32 or low-overlap)", name);
}

std::unique_ptr<TraceSource> make_generated_trace(const GeneratorOptions& options) {
  return std::make_unique<GeneratedTrace>(options);
}

}  // namespace hisparse::traces

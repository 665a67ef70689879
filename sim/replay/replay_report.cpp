// @brief Text, JSON and CSV of a replay (see replay_report.h). Numbers are printed with fixed precision so the
// files are byte-identical for any thread count.
#include "sim/replay/replay_report.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/error.h"
#include "core/io/output_file.h"

namespace hisparse::sim {

namespace {

/// The hit rate with 6 decimals, or `undefined` ("null" in JSON, an empty CSV cell) when nothing was selected.
std::string hit_rate_text(const ReplayConfigStats& s, const char* undefined) {
  return std::isnan(s.hit_rate()) ? std::string(undefined) : fmt::format("{:.6f}", s.hit_rate());
}

std::string human_bytes(double b) {
  if (b >= 1024.0 * 1024.0) return fmt::format("{:.2f} MiB", b / (1024.0 * 1024.0));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
}

int64_t total(const std::vector<int64_t>& hist) {
  int64_t n = 0;
  for (int64_t c : hist) n += c;
  return n;
}

// A phase with no sample (a trace shorter than its warm-up has no steady state) prints "-", not 0.
std::string quantile_text(const std::vector<int64_t>& hist, double q) {
  return total(hist) > 0 ? std::to_string(histogram_quantile(hist, q)) : "-";
}

std::string bytes_quantile_text(const std::vector<int64_t>& hist, double q, double row_bytes) {
  return total(hist) > 0 ? human_bytes(static_cast<double>(histogram_quantile(hist, q)) * row_bytes) : "-";
}

// {"step_layers": N, "p50": .., "p99": .., "max": ..} of one phase (null quantiles without samples).
void phase_json(JsonWriter& j, const std::vector<int64_t>& hist, const char* count_key, double scale) {
  const int64_t n = total(hist);
  j.begin_object(JsonWriter::Layout::kInline).member(count_key, n);
  for (const auto& [key, p] : {std::pair<const char*, double>{"p50", 0.5}, {"p99", 0.99}, {"max", 1.0}}) {
    j.key(key);
    if (n > 0) j.number(static_cast<int64_t>(static_cast<double>(histogram_quantile(hist, p)) * scale)); else j.null();
  }
  j.end_object();
}

/// [[misses, step-layers], ...] for every non-empty bucket.
void hist_json(JsonWriter& j, const std::vector<int64_t>& hist) {
  j.begin_array(JsonWriter::Layout::kInline);
  for (size_t m = 0; m < hist.size(); ++m)
    if (hist[m]) j.begin_array(JsonWriter::Layout::kInline).number(uint64_t{m}).number(hist[m]).end_array();
  j.end_array();
}

}  // namespace

std::string recommended_policy(const ReplayResult& r) {
  for (const auto& s : r.configs)
    if (s.policy == "sglang-lru") return s.policy;
  return r.configs.empty() ? std::string() : r.configs.front().policy;
}

std::string format_replay_table(const ReplayResult& r, int64_t row_bytes) {
  std::string o;
  o += fmt::format("trace {}: {} requests, {} decode steps, {} layers, top_k {}, initial state {}\n", r.meta.source,
                   r.requests, r.decode_steps, r.meta.layers, r.meta.top_k, traces::to_string(r.meta.initial_state));
  o += "hit rate = 1 - misses / selected (newest-token hits count as hits); miss mean over every (request, step, "
       "layer); percentiles apart for the steady state and the cold start (a request's first step and its warm-up "
       "steps 1..ceil(H/K), while the buffer fills: what a new request costs, not what a running batch sustains); "
       "H2D = misses x row bytes summed over layers, per decode step of one request\n\n";
  o += fmt::format("{:<11} {:>7} {:>9} {:>10} {:>11} {:>11} {:>9} {:>14} {:>16} {:>14} {:>10}\n", "policy", "buffer",
                   "hit rate", "miss mean", "steady p50", "steady p99", "cold p99", "H2D/step mean", "H2D steady p99",
                   "H2D cold p99", "fast path");
  const double rb = static_cast<double>(row_bytes);
  for (const auto& s : r.configs) {
    const std::vector<int64_t> steady = steady_histogram(s.miss_hist, s.cold_miss_hist);
    const std::vector<int64_t> steady_step = steady_histogram(s.step_miss_hist, s.cold_step_miss_hist);
    const std::string hit = std::isnan(s.hit_rate()) ? "n/a" : fmt::format("{:.2f}%", 100.0 * s.hit_rate());
    o += fmt::format("{:<11} {:>7} {:>9} {:>10.2f} {:>11} {:>11} {:>9} {:>14} {:>16} {:>14} {:>9.1f}%\n", s.policy,
                     s.buffer_size, hit, s.mean_misses_per_step_layer(), quantile_text(steady, 0.5),
                     quantile_text(steady, 0.99), quantile_text(s.cold_miss_hist, 0.99),
                     human_bytes(s.mean_misses_per_decode_step() * rb), bytes_quantile_text(steady_step, 0.99, rb),
                     bytes_quantile_text(s.cold_step_miss_hist, 0.99, rb), 100.0 * s.fast_path_fraction());
  }
  return o;
}

std::string format_lookahead(const ReplayResult& r) {
  std::string o = fmt::format(
      "belady look-ahead: windows of up to {} steps per request, peak {} held (step records + next-use indexes; "
      "--lookahead-mb bounds it)\n",
      r.lookahead_steps, human_bytes(static_cast<double>(r.peak_lookahead_bytes)));
  if (r.lookahead_cut_requests > 0)
    o += fmt::format("  {} of {} requests are longer than a window: their belady is the optimum for a sliding look-ahead "
                     "of at least {} steps (an upper bound on the true optimum's misses); raise --lookahead-mb to "
                     "replay them with their whole future\n",
                     r.lookahead_cut_requests, r.requests, std::max<int64_t>(1, r.lookahead_steps / 2));
  return o;
}

std::string format_replay_speed(const ReplayResult& r, double command_seconds) {
  const double secs = std::max(command_seconds, 1e-9);
  return fmt::format(
      "speed: {} entries ({} configurations) in {:.3f} s: {:.1f} M entries/s for the whole command ({} thread{}; "
      "replay {:.3f} s, of which reading the trace {:.3f} s)\n",
      r.entries, r.configs.size(), command_seconds, static_cast<double>(r.entries) / secs / 1e6, r.threads,
      r.threads == 1 ? "" : "s", r.seconds, r.read_seconds);
}

std::string replay_json(const ReplayResult& r, int64_t row_bytes, const std::string& recommendation_json,
                        const std::string& step_time_json) {
  using Layout = JsonWriter::Layout;
  JsonWriter j(2);
  j.begin_object().key("trace").begin_object(Layout::kInline).member("source", r.meta.source);
  j.member("layers", r.meta.layers).member("top_k", r.meta.top_k);
  j.member("initial_state", traces::to_string(r.meta.initial_state)).member("requests", r.requests);
  j.member("decode_steps", r.decode_steps).end_object().member("row_bytes", row_bytes).key("results").begin_array();
  for (const auto& s : r.configs) {
    const std::vector<int64_t> steady = steady_histogram(s.miss_hist, s.cold_miss_hist);
    const std::vector<int64_t> steady_step = steady_histogram(s.step_miss_hist, s.cold_step_miss_hist);
    const double rb = static_cast<double>(row_bytes);
    j.begin_object(Layout::kInline).member("policy", s.policy).member("buffer_size", s.buffer_size);
    j.member("selected", s.selected).member("hits", s.hits).member("newest_hits", s.newest_hits);
    j.member("misses", s.misses).member("h2d_bytes", s.h2d_bytes).key("hit_rate").fixed(s.hit_rate(), 6);
    j.member("step_layers", s.step_layers).member("decode_steps", s.decode_steps);
    j.key("misses_per_step_layer").begin_object(Layout::kInline).key("mean").fixed(s.mean_misses_per_step_layer(), 6);
    j.member("p50", histogram_quantile(s.miss_hist, 0.5)).member("p99", histogram_quantile(s.miss_hist, 0.99));
    j.member("max", histogram_quantile(s.miss_hist, 1.0)).key("steady");
    phase_json(j, steady, "step_layers", 1);
    j.key("cold_start");
    phase_json(j, s.cold_miss_hist, "step_layers", 1);
    j.end_object().key("h2d_bytes_per_decode_step").begin_object(Layout::kInline);
    j.key("mean").fixed(s.mean_misses_per_decode_step() * rb, 3);
    j.member("p50", histogram_quantile(s.step_miss_hist, 0.5) * row_bytes);
    j.member("p99", histogram_quantile(s.step_miss_hist, 0.99) * row_bytes).key("steady");
    phase_json(j, steady_step, "decode_steps", rb);
    j.key("cold_start");
    phase_json(j, s.cold_step_miss_hist, "decode_steps", rb);
    j.end_object().key("fast_path_fraction").fixed(s.fast_path_fraction(), 6).key("miss_histogram");
    hist_json(j, s.miss_hist);
    j.key("cold_start_miss_histogram");
    hist_json(j, s.cold_miss_hist);
    j.end_object();
  }
  j.end_array();
  // The step-time and recommendation objects are written by their own reports (replay_step_time.cpp, replay_advice.cpp).
  if (!step_time_json.empty()) j.key("step_time").raw(step_time_json);
  j.key("recommendation").raw(recommendation_json).end_object();
  return j.str() + "\n";
}

std::string no_deployment_recommendation_json() {
  JsonWriter j;
  j.begin_object(JsonWriter::Layout::kInline).key("device_buffer_size").null();
  j.member("reason", "no deployment given: a device_buffer_size recommendation weighs HBM, PCIe shared by the batch and "
                     "the TPOT SLO of a deployment; pass --scenario S, or run hisparse advise");
  return j.end_object().str();
}


std::string replay_csv(const ReplayResult& r) {
  std::string o =
      "policy,buffer_size,selected,hits,newest_hits,misses,hit_rate,misses_mean,misses_p50,misses_p99,"
      "h2d_bytes,h2d_bytes_per_step_mean,fast_path_fraction,misses_steady_p50,misses_steady_p99,misses_cold_start_p99\n";
  for (const auto& s : r.configs) {
    const double row_bytes = s.misses ? static_cast<double>(s.h2d_bytes) / static_cast<double>(s.misses) : 0.0;
    const std::vector<int64_t> steady = steady_histogram(s.miss_hist, s.cold_miss_hist);
    // A phase without samples leaves its cells empty.
    auto q = [](const std::vector<int64_t>& h, double p) {
      return total(h) > 0 ? std::to_string(histogram_quantile(h, p)) : std::string();
    };
    o += fmt::format("{},{},{},{},{},{},{},{:.6f},{},{},{},{:.3f},{:.6f},{},{},{}\n", s.policy, s.buffer_size,
                     s.selected, s.hits, s.newest_hits, s.misses, hit_rate_text(s, ""), s.mean_misses_per_step_layer(),
                     histogram_quantile(s.miss_hist, 0.5), histogram_quantile(s.miss_hist, 0.99), s.h2d_bytes,
                     s.mean_misses_per_decode_step() * row_bytes, s.fast_path_fraction(), q(steady, 0.5),
                     q(steady, 0.99), q(s.cold_miss_hist, 0.99));
  }
  return o;
}

StepCsvWriter::StepCsvWriter(std::string path) : out_(std::move(path), "--per-step-csv") {
  out_.write("policy,buffer_size,request,layer,step,seq_len,selected,hits,newest_hits,misses,h2d_bytes\n");
}

void StepCsvWriter::write(const ReplayRequestRows& rows, const std::vector<ReplayConfigStats>& configs,
                          int64_t row_bytes) {
  std::string buf;
  for (size_t c = 0; c < rows.rows.size(); ++c) {
    for (size_t l = 0; l < rows.rows[c].size(); ++l) {
      const auto& v = rows.rows[c][l];
      for (size_t j = 0; j < v.size(); ++j) {
        const ReplayStepRow& r = v[j];
        fmt::format_to(std::back_inserter(buf), "{},{},{},{},{},{},{},{},{},{},{}\n", configs[c].policy,
                       configs[c].buffer_size, rows.request_id, l, rows.steps[j], r.seq_len, r.selected, r.hits,
                       r.newest_hits, r.misses, static_cast<int64_t>(r.misses) * row_bytes);
      }
      if (buf.size() > (1u << 20)) {
        out_.write(buf);
        buf.clear();
      }
    }
  }
  out_.write(buf);
}

void StepCsvWriter::finish() { out_.commit(); }

}  // namespace hisparse::sim

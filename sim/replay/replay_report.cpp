// @brief Text, JSON and CSV of a replay (see replay_report.h). Numbers are printed with fixed precision so the
// files are byte-identical for any thread count.
#include "sim/replay/replay_report.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/output_file.h"

namespace hisparse::sim {

namespace {

std::string human_bytes(double b) {
  if (b >= 1024.0 * 1024.0) return fmt::format("{:.2f} MiB", b / (1024.0 * 1024.0));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
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
  o += "hit rate = 1 - misses / selected (newest-token hits count as hits); misses per step-layer over every "
       "(request, step, layer); H2D = misses x row bytes summed over layers, per decode step of one request\n\n";
  o += fmt::format("{:<11} {:>7} {:>9} {:>10} {:>6} {:>6} {:>14} {:>14} {:>10}\n", "policy", "buffer", "hit rate",
                   "miss mean", "p50", "p99", "H2D/step mean", "H2D/step p99", "fast path");
  for (const auto& s : r.configs) {
    const double h2d_mean = s.mean_misses_per_decode_step() * static_cast<double>(row_bytes);
    const double h2d_p99 =
        static_cast<double>(histogram_quantile(s.step_miss_hist, 0.99)) * static_cast<double>(row_bytes);
    o += fmt::format("{:<11} {:>7} {:>8.2f}% {:>10.2f} {:>6} {:>6} {:>14} {:>14} {:>9.1f}%\n", s.policy,
                     s.buffer_size, 100.0 * s.hit_rate(), s.mean_misses_per_step_layer(),
                     histogram_quantile(s.miss_hist, 0.5), histogram_quantile(s.miss_hist, 0.99),
                     human_bytes(h2d_mean), human_bytes(h2d_p99), 100.0 * s.fast_path_fraction());
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
  std::string o = "{\n";
  o += fmt::format("  \"trace\": {{\"source\": {}, \"layers\": {}, \"top_k\": {}, \"initial_state\": \"{}\", "
                   "\"requests\": {}, \"decode_steps\": {}}},\n",
                   json_quote(r.meta.source), r.meta.layers, r.meta.top_k, traces::to_string(r.meta.initial_state),
                   r.requests, r.decode_steps);
  o += fmt::format("  \"row_bytes\": {},\n", row_bytes);
  o += "  \"results\": [\n";
  for (size_t i = 0; i < r.configs.size(); ++i) {
    const auto& s = r.configs[i];
    std::string hist;
    for (size_t m = 0; m < s.miss_hist.size(); ++m) {
      if (!s.miss_hist[m]) continue;
      hist += fmt::format("{}[{}, {}]", hist.empty() ? "" : ", ", m, s.miss_hist[m]);
    }
    o += fmt::format(
        "    {{\"policy\": {}, \"buffer_size\": {}, \"selected\": {}, \"hits\": {}, \"newest_hits\": {}, "
        "\"misses\": {}, \"h2d_bytes\": {}, \"hit_rate\": {:.6f}, \"step_layers\": {}, \"decode_steps\": {}, "
        "\"misses_per_step_layer\": {{\"mean\": {:.6f}, \"p50\": {}, \"p99\": {}, \"max\": {}}}, "
        "\"h2d_bytes_per_decode_step\": {{\"mean\": {:.3f}, \"p50\": {}, \"p99\": {}}}, "
        "\"fast_path_fraction\": {:.6f}, \"miss_histogram\": [{}]}}{}\n",
        json_quote(s.policy), s.buffer_size, s.selected, s.hits, s.newest_hits, s.misses, s.h2d_bytes, s.hit_rate(),
        s.step_layers, s.decode_steps, s.mean_misses_per_step_layer(), histogram_quantile(s.miss_hist, 0.5),
        histogram_quantile(s.miss_hist, 0.99), histogram_quantile(s.miss_hist, 1.0),
        s.mean_misses_per_decode_step() * static_cast<double>(row_bytes),
        histogram_quantile(s.step_miss_hist, 0.5) * row_bytes,
        histogram_quantile(s.step_miss_hist, 0.99) * row_bytes, s.fast_path_fraction(), hist,
        i + 1 < r.configs.size() ? "," : "");
  }
  o += "  ],\n";
  if (!step_time_json.empty()) o += "  \"step_time\": " + step_time_json + ",\n";
  o += "  \"recommendation\": " + recommendation_json + "\n}\n";
  return o;
}

std::string no_deployment_recommendation_json() {
  return "{\"device_buffer_size\": null, \"reason\": \"no deployment given: a device_buffer_size recommendation "
         "weighs HBM, PCIe shared by the batch and the TPOT SLO of a deployment; pass --scenario S, or run hisparse "
         "advise\"}";
}

std::string replay_csv(const ReplayResult& r) {
  std::string o =
      "policy,buffer_size,selected,hits,newest_hits,misses,hit_rate,misses_mean,misses_p50,misses_p99,"
      "h2d_bytes,h2d_bytes_per_step_mean,fast_path_fraction\n";
  for (const auto& s : r.configs) {
    const double row_bytes = s.misses ? static_cast<double>(s.h2d_bytes) / static_cast<double>(s.misses) : 0.0;
    o += fmt::format("{},{},{},{},{},{},{:.6f},{:.6f},{},{},{},{:.3f},{:.6f}\n", s.policy, s.buffer_size, s.selected,
                     s.hits, s.newest_hits, s.misses, s.hit_rate(), s.mean_misses_per_step_layer(),
                     histogram_quantile(s.miss_hist, 0.5), histogram_quantile(s.miss_hist, 0.99), s.h2d_bytes,
                     s.mean_misses_per_decode_step() * row_bytes, s.fast_path_fraction());
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

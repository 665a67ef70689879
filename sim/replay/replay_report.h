// @brief What `hisparse replay` prints and writes: the PCIe budget, the recommendation, the table, replay.json,
// replay.csv and the per-step CSV.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "sim/replay/replay_engine.h"

namespace hisparse::sim {

/// Misses one layer may load in its time slot: budget_rows = floor(link_bytes_per_s * layer_time_s / row_bytes).
struct MissBudget {
  double link_bytes_per_s = 0;  // host->device rate of one PCIe link for scattered rows
  double layer_time_s = 0;      // time the loads of one layer of one request may take
  int64_t row_bytes = 0;
  int64_t rows = 0;
  std::string link_source;      // where the rate came from ("scenario h200: pcie.gather_row_bytes_per_s")
};

MissBudget make_miss_budget(double link_bytes_per_s, double layer_time_s, int64_t row_bytes, std::string source);

/// The smallest buffer size of `policy` whose p99 misses per step-layer fit the budget (nullopt: none fits).
std::optional<int32_t> recommend_buffer_size(const ReplayResult& r, const std::string& policy, const MissBudget& b);

/// The policy the recommendation is made for: sglang-lru if replayed (it is what the system runs), else the first.
std::string recommended_policy(const ReplayResult& r);

/// Human-readable table, budget formula and recommendation.
std::string format_replay_table(const ReplayResult& r, const MissBudget& b);

/// replay.json / replay.csv contents (deterministic: no timings, no thread count).
std::string replay_json(const ReplayResult& r, const MissBudget& b);
std::string replay_csv(const ReplayResult& r);

/// Streams the per-step CSV to "<path>.tmp"; finish() renames it to `path`.
class StepCsvWriter {
 public:
  explicit StepCsvWriter(std::string path);
  ~StepCsvWriter();
  /// Rows in the order (policy, buffer size, layer, step) within each request; requests in trace order.
  void write(const ReplayRequestRows& rows, const std::vector<ReplayConfigStats>& configs, int64_t row_bytes);
  void finish();

 private:
  std::string path_;
  std::string tmp_;
  std::ofstream out_;
  bool finished_ = false;
};

}  // namespace hisparse::sim

// @brief The grid of `hisparse sweep GRID.yaml` (docs/sweep.md): jobs of one kind (plan, replay, simulate), each a
// cartesian product of axes (scenario, workload, trace, context, device_buffer_size, host_to_device_ratio, policy,
// concurrency, mode), optional zipped axes and explicit points, read strictly (every error names the file, the key
// path, the value and what was expected) and expanded into points in one deterministic order: jobs in file order;
// within a job the product with its first axis outermost, zip groups after the grid axes, then explicit points.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse::sim::sweep {

enum class JobKind { kPlan, kReplay, kSimulate };
const char* to_string(JobKind kind);

/// Scalar settings shared by every point of a job (the `settings:` mapping); which apply depends on the kind.
struct JobSettings {
  // plan, simulate: the miss surface (scenarios/miss_models/<name>.yaml or a path); "" = the default for the
  // scenario's top_k (sim/miss/miss_surface.h default_miss_surface).
  std::string miss_curve;
  // plan: "all" | "memory" (as `hisparse plan --limits`).
  std::string limits = "all";
  // replay: bytes of one KV row per layer; 0 = the scenario's latent row in its kv_dtype, else 1152.
  int64_t row_bytes = 0;
  // replay: a trace with more requests than this is replayed in shards of this many requests (exact: every
  // request starts from an empty policy state, and the counters are integer sums).
  int64_t shard_requests = 0;  // 0 = the grid's replay_shard_requests
  // replay: belady's look-ahead window (as `hisparse replay --lookahead-mb`).
  int64_t lookahead_mb = 1024;
  // simulate: keep the workload's arrivals of the first duration_s seconds (0 = all of it).
  double duration_s = 0;
  // simulate, closed loop (concurrency > 0): requests sent per point (0 = 4 per client, at least 64).
  int64_t num_requests = 0;
};

/// One point of the grid: its kind and every axis value (text as written in the grid, resolved where needed).
struct GridPoint {
  int64_t index = 0;        // position in grid order (the table's row order)
  JobKind kind = JobKind::kPlan;
  std::string job;          // the job's name
  int32_t job_index = 0;
  std::string scenario;     // deployment name or path; "" = none (replay without one)
  std::string workload;     // simulate
  std::string trace;        // replay: path as written; trace_path resolved against the grid file's directory
  std::string trace_path;
  int64_t context = 0;      // plan: sequence length in tokens
  int32_t device_buffer_size = 0;    // 0 = the scenario's
  int32_t host_to_device_ratio = 0;  // 0 = the scenario's
  std::string policy = "sglang-lru";
  int32_t concurrency = 0;  // simulate: closed-loop clients; 0 = the workload's open-loop arrivals
  std::string mode = "hisparse";  // simulate: hisparse | full | dynamic (simulate's --mode)
  JobSettings settings;
};

struct Grid {
  std::string file;         // the grid file, as given
  std::string text;         // its bytes (part of the spec a resumed sweep's journal must match)
  std::string name;         // `sweep:`
  std::string description;
  int64_t replay_shard_requests = 64;
  std::vector<GridPoint> points;
};

/// Reads and validates `path` and expands it. Throws hisparse::Error naming file, key path, value and expectation.
/// Scenarios are loaded, traces opened (header only) and policies looked up here, so a typo fails before any work.
Grid load_grid(const std::string& path);
/// The same from text (`file` names it in errors; relative trace paths resolve against `base_dir`).
Grid parse_grid(const std::string& yaml_text, const std::string& file, const std::string& base_dir);

/// The axes a kind accepts, in the order the table prints them.
const std::vector<std::string>& axis_names();
bool axis_applies(JobKind kind, const std::string& axis);
/// The point's value of `axis` as the table prints it ("" when the axis does not apply or is the scenario's own).
std::string axis_value(const GridPoint& p, const std::string& axis);
/// "kind=plan scenario=dsv32-8xh200-1tb context=32768 ..." (what a failure message names).
std::string describe_point(const GridPoint& p);

/// "16K" → 16384, "2M" → 2 MiB of tokens, "4096" → 4096; false when not such a count.
bool parse_token_count(const std::string& text, int64_t* out);

}  // namespace hisparse::sim::sweep

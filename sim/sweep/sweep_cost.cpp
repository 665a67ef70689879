// @brief A sweep item's estimated cost: a plan point, a replay shard (its entries × the buffer sizes it carries), a
// serving simulation (sim/serving/run_estimate.h), each from a measured rate.
#include "sim/sweep/sweep_cost.h"

#include <algorithm>
#include <filesystem>
#include <exception>
#include <map>
#include <utility>

#include "sim/serving/run_estimate.h"
#include "sim/workload/workload.h"
#include "traces/trace_source.h"

namespace hisparse::sim::sweep {

namespace {

namespace fs = std::filesystem;

// Measured 2026-11-28 with the release build on the 2-core development machine, `hisparse sweep --jobs 1`:
// - the 168 plan points of scenarios/sweeps/dsv32-8xh200-1tb.yaml's capacity job: 8.6 s, 0.051 s a point;
// - its miss-curves job on traces/bundled/default.hstrace (2 requests × 256 steps × 8 layers × top_k 2048 =
//   8,388,608 entries in 1,872,626 bytes): 12 items of one request and 6 buffer sizes each in 9.2 s, 0.77 s an item,
//   so 0.77 / (4,194,304 × 6) s per entry and buffer size;
// - a serving point's set-up (scenario, workload, miss model) before its run: 0.2 s (simulate at 64 clients, 256
//   requests: 0.52 s against 0.32 s by run_estimate's rates).
constexpr double kPlanPointSeconds = 8.6 / 168;
constexpr double kReplaySecondsPerEntryBuffer = 0.77 / (4194304.0 * 6);
constexpr double kSimulateSetupSeconds = 0.2;

/// Entries per byte of a trace file: native measured on the bundled trace (8,388,608 entries in 1,872,626 bytes);
/// .npy holds raw int32 (4 bytes an entry); JSON lines assumed 7 bytes an entry (a 5-6 digit position and ", ").
double entries_per_byte(const std::string& path) {
  switch (traces::detect_trace_format(path)) {
    case traces::TraceFormat::kNative: return 8388608.0 / 1872626;
    case traces::TraceFormat::kNpy: return 0.25;
    case traces::TraceFormat::kJsonl: break;
  }
  return 1.0 / 7;
}

double path_bytes(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    const uintmax_t n = fs::file_size(path, ec);
    return ec ? 0.0 : static_cast<double>(n);
  }
  double sum = 0;
  for (const auto& e : fs::recursive_directory_iterator(path, ec))
    if (e.is_regular_file(ec)) sum += static_cast<double>(e.file_size(ec));
  return sum;
}

}  // namespace

const char* work_item_basis() {
  return "rates measured: plan points, replay entries × buffer sizes and simulate's decode tokens, 2 cores "
         "(sim/sweep/sweep_cost.cpp, sim/serving/run_estimate.cpp); within a factor of about 2";
}

std::vector<double> work_item_seconds(const Grid& grid, const std::vector<WorkItem>& items) {
  std::map<std::string, std::pair<double, int64_t>> traces_seen;  // path → (entries, requests)
  std::map<std::pair<std::string, double>, Workload> workloads;   // (name, duration_s) → the workload, cut
  std::vector<double> out;
  out.reserve(items.size());
  for (const WorkItem& item : items) {
    const GridPoint& p = grid.points[static_cast<size_t>(item.point)];
    double s = 0;
    switch (p.kind) {
      case JobKind::kPlan: s = kPlanPointSeconds * static_cast<double>(item.points.size()); break;
      case JobKind::kReplay: {
        auto it = traces_seen.find(p.trace_path);
        if (it == traces_seen.end()) {
          const auto requests = static_cast<int64_t>(traces::open_trace(p.trace_path)->request_ids().size());
          it = traces_seen.emplace(p.trace_path, std::make_pair(path_bytes(p.trace_path) * entries_per_byte(p.trace_path),
                                                                requests)).first;
        }
        const auto [entries, requests] = it->second;
        const double share = item.requests > 0 && requests > 0 ? static_cast<double>(item.requests) / requests : 1.0;
        s = entries * share * static_cast<double>(item.points.size()) * kReplaySecondsPerEntryBuffer;
        break;
      }
      case JobKind::kSimulate: {
        const double duration = p.settings.duration_s;
        auto it = workloads.find({p.workload, duration});
        if (it == workloads.end()) {
          Workload w;
          try {
            w = load_workload(p.workload);
          } catch (const std::exception&) {
            // The point fails when it runs, with its own message; its estimate is only its set-up.
          }
          if (duration > 0 && duration < 9e9) truncate_workload(w, static_cast<SimTime>(duration * 1e9));
          it = workloads.emplace(std::make_pair(p.workload, duration), std::move(w)).first;
        }
        ClientSpec clients;
        if (p.concurrency > 0) {
          clients.concurrency = p.concurrency;
          clients.requests = p.settings.num_requests > 0 ? p.settings.num_requests
                                                         : std::max<int64_t>(64, 4 * static_cast<int64_t>(p.concurrency));
        }
        s = kSimulateSetupSeconds +
            estimate_serving_work(it->second, p.mode == "full"      ? KvMode::kFull
                                              : p.mode == "dynamic" ? KvMode::kDynamic
                                                                    : KvMode::kHiSparse,
                                  clients)
                .seconds;
        break;
      }
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace hisparse::sim::sweep

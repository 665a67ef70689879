// @brief Running a sweep's points: the work list (a point, or one request shard of a large replay), what one work item
// computes (its result as deterministic text, the same whichever process runs it), and the row a point becomes once
// all its items are back. The local process pool and the MPI ranks (apps/sweep*.cpp) only move these texts around.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/sweep/sweep_grid.h"

namespace hisparse::sim::sweep {

struct WorkItem {
  int64_t point = 0;  // the first of `points`
  int32_t shard = 0, shards = 1;
  // Replay shards: requests [first_request, first_request + requests) of the trace in file order; requests 0 = all.
  int64_t first_request = 0, requests = 0;
  // Every point this item computes: one, or the replay points of one trace, policy and settings that differ only in
  // buffer size (at most kMaxBuffersPerReplay), replayed in one pass as `hisparse replay --buffer-sizes` does.
  std::vector<int64_t> points;
};

/// Buffer sizes one replay item carries: one pass over the trace serves them all (read and decoded once, the step's
/// selection marked once), yet a group stays small enough that a grid of one trace still spreads over the workers.
inline constexpr size_t kMaxBuffersPerReplay = 8;

/// Every work item in grid order of its first point (a replay group's shards in request order). Opens each replay
/// trace (its index only) to count requests.
std::vector<WorkItem> plan_work(const Grid& grid);

/// Computes one item (single-threaded); throws hisparse::Error (or anything) on failure. Deterministic given the grid.
std::string run_work_item(const Grid& grid, const WorkItem& item);

/// One metric of a row: its key (the column) and its value as printed.
struct Metric {
  std::string key;
  std::string value;
};

struct PointRow {
  int64_t point = 0;
  bool ok = false;
  std::string error;   // failed: what went wrong (the first failing shard's message)
  std::string basis;   // "modelled" | "measured (trace replay)"
  std::vector<Metric> metrics;
};

/// The row of `point` from the texts of the items that computed it, in shard order (throws on malformed text).
PointRow finish_point(const Grid& grid, const GridPoint& point, const std::vector<std::string>& item_texts);
/// The row of a point one of whose items failed.
PointRow failed_point(const GridPoint& point, const std::string& error);

/// The metric columns of a kind, in table order, with their units in the name.
const std::vector<std::string>& metric_columns(JobKind kind);

}  // namespace hisparse::sim::sweep

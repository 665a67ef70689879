// @brief Op tables: the engine's own kernels (DeepGEMM, FlashMLA, DeepEP, NCCL, SGLang's) timed on one GPU type by
// the collector of issue 38 (scenarios/measurements/engine_ops_*.csv, listed with their provenance in
// engine_ops.yaml), read strictly, grouped into one series per op and shape, and looked up by op, shape and grid
// point with a label saying whether the time is measured, extrapolated (modelled) or absent.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/optables/op_interpolation.h"

namespace hisparse::sim {

/// A row's fixed shape parameters: `key=value` pairs of the `params` column (keys sorted there, unique).
using OpParams = std::map<std::string, std::string>;

/// "a=1;b=2" -> {a: 1, b: 2}; throws naming `where` unless every part is key=value with a non-empty key and value,
/// the keys are sorted and unique. The empty text is the empty map.
OpParams parse_op_params(const std::string& text, const std::string& where);
/// {a: 1, b: 2} -> "a=1;b=2".
std::string format_op_params(const OpParams& params);

/// One table of the index (scenarios/measurements/engine_ops.yaml `tables:`): every field is provenance and required.
struct OpTableEntry {
  std::string file;        // as the index names it (relative to the index's folder)
  std::string path;        // resolved
  std::string hardware;    // the hardware YAML stem the run was on (h100-sxm, h200)
  int gpus = 0;            // GPUs in the run (1, 2, 4): collectives and DeepEP measured over that many
  std::string date;        // YYYY-MM-DD
  std::string command;     // the collector's command line
  std::map<std::string, std::string> libraries;  // library -> commit or version
  std::string device_log;  // the device run's log under bench/results/
};

/// One CSV row, as read (line = its line in the file, 1 = the header).
struct OpRow {
  std::string op, library, commit, gpu, driver;
  int sm_clock_mhz = 0;
  OpParams params;
  int64_t batch = 0, context = 0, bytes = 0;
  double median_us = 0, p10_us = 0, p90_us = 0;
  int iters = 0;
  std::string method;
  int line = 0;
};

/// The grid variables a series varies over (those with at least two distinct values among its rows; a column
/// with one value is that shape's fixed point).
enum class OpGrid { kPoint, kBatch, kContext, kBatchContext, kBytes };

/// One op at one shape (op + params): its rows over the grid, from one table, one library commit, one GPU.
struct OpSeries {
  std::string op;
  OpParams params;
  const OpTableEntry* table = nullptr;
  std::string library, commit, gpu, driver;
  OpGrid grid = OpGrid::kPoint;
  std::vector<OpRow> rows;              // sorted by (context, batch, bytes)
  std::vector<double> batches, contexts, bytes;  // the distinct grid values, ascending
  int first_line() const;
  int last_line() const;
  /// "batch 1–256" / "batch 1–64 × context 4096–131072" / "bytes 1024–1.6e+07" / "one point".
  std::string grid_text() const;
};

enum class OpLabel { kMeasured, kExtrapolated, kFromRanks, kAbsent };
/// measured | modelled (extrapolated) | modelled (from fewer-GPU measurements) | absent
const char* to_string(OpLabel label);

/// The answer to a lookup: the time per call and where it came from.
struct OpLookup {
  double us = 0;
  OpLabel label = OpLabel::kAbsent;
  const OpSeries* series = nullptr;  // null when absent
  int first_line = 0, last_line = 0; // the rows read (their lines in series->table->path)
  std::string note;                  // why absent ("no row of … with …", "2 shapes match …")
  double ns() const { return us * 1e3; }
};

/// Every table of an index for one hardware (or all): the series, and the lookups the step model asks.
class OpTableSet {
 public:
  /// The series of `op` whose params hold every key of `params` with that value; when several do, those that also
  /// hold every key of `prefer` it holds (keys the candidates lack are skipped); null when none or still several
  /// (`*why` says which).
  const OpSeries* find(const std::string& op, const OpParams& params, const OpParams& prefer = {},
                       std::string* why = nullptr) const;
  /// The time of one call of `op` at a shape and grid point (a grid variable the series does not vary is ignored):
  /// measured on or between grid points and below the smallest (the floor), modelled (extrapolated) above the
  /// largest, absent when no series has the shape or a one-point axis is exceeded (op_interpolation.h).
  OpLookup lookup(const std::string& op, const OpParams& params, double batch, double context = 0, double bytes = 0,
                  const OpParams& prefer = {}) const;
  /// The same on a series already found.
  static OpLookup at(const OpSeries& series, double batch, double context = 0, double bytes = 0);

  /// The series of `op` (every shape), and all series.
  std::vector<const OpSeries*> series_of(const std::string& op) const;
  const std::vector<OpSeries>& series() const { return series_; }
  const std::vector<std::shared_ptr<const OpTableEntry>>& tables() const { return tables_; }
  const std::string& index_path() const { return index_; }
  bool empty() const { return series_.empty(); }

  /// Groups rows of `entry` (one file, already checked row by row) into series; throws naming the file and lines
  /// on a grid point given twice, a series mixing libraries/commits/GPUs, a series varying bytes together with
  /// batch or context, or a two-variable series that is not a full rectangle.
  void add_table(std::shared_ptr<const OpTableEntry> entry, std::vector<OpRow> rows);
  void set_index_path(std::string path) { index_ = std::move(path); }

 private:
  std::string index_;
  std::vector<std::shared_ptr<const OpTableEntry>> tables_;
  std::vector<OpSeries> series_;
};

/// The rows of one table CSV, strictly: the header must be exactly the collector's
///   op,library,commit,gpu,driver,sm_clock_mhz,params,batch,context,bytes,median_us,p10_us,p90_us,iters,method
/// and a bad row is an error naming the file, line, column and value: an empty op/library/commit/gpu/driver
/// (provenance), a library the index entry does not list or a commit other than its, params not key=value sorted,
/// negative or non-integer grid values, times not finite and > 0 with p10 <= median <= p90, iters < 1, a method
/// other than graph or events, or a file mixing GPUs or drivers.
std::vector<OpRow> read_op_table_csv(const OpTableEntry& entry);

}  // namespace hisparse::sim

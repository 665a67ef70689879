// @brief What the two ways of running a sweep share (apps/sweep.cpp: the local process pool; apps/sweep_mpi.cpp: MPI
// ranks): the item results, the progress and the up-front estimate, and turning the results into the one table both write.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/sweep/sweep_grid.h"
#include "sim/sweep/sweep_journal.h"
#include "sim/sweep/sweep_progress.h"
#include "sim/sweep/sweep_run.h"

namespace hisparse::apps {

struct SweepInvocation {
  std::string grid_path;
  std::string out_dir;
  bool quiet = false;
  bool resume = false;       // --resume: skip the items DIR/sweep.journal holds
  int64_t stop_after = 0;    // hidden --stop-after N (tests): SIGKILL this process once N items are journaled
  bool force = false;        // --force: run even when the up-front estimate is over an hour
};

/// What came back for one work item.
struct ItemResult {
  bool done = false;
  bool ok = false;
  std::string text;  // ok: the item's result text; else the error
};

/// One run of a sweep on the coordinating process: the journal (opened, or resumed, before any computing: a bad
/// --out fails here), the progress, and the results as they arrive.
class SweepRun {
 public:
  /// `computing`: the processes computing items at once (the up-front estimate divides the items' cost by it).
  SweepRun(const SweepInvocation& inv, const sim::sweep::Grid& grid, const std::vector<sim::sweep::WorkItem>& items,
           const std::string& who, int computing);
  /// The items still to compute, in grid order.
  std::vector<size_t> pending() const;
  /// An item's result: kept, journaled (fsync'd) when it succeeded (a failure is computed again by --resume), and
  /// counted in the progress.
  void item_done(size_t item, ItemResult result);
  /// Writes the tables (write_sweep_results), then removes the journal; returns the exit code.
  int finish(const std::string& how);

 private:
  const SweepInvocation& inv_;
  const sim::sweep::Grid& grid_;
  const std::vector<sim::sweep::WorkItem>& items_;
  std::unique_ptr<sim::sweep::SweepJournal> journal_;
  std::unique_ptr<sim::sweep::SweepProgress> progress_;
  std::vector<ItemResult> results_;
  int64_t journaled_ = 0;
};

/// Assembles the rows (grid order), writes sweep.csv/json/md atomically into inv.out_dir, prints the Markdown table
/// and every failed point; returns the exit code (0: every point ok, 1: some failed; their rows are still written).
int write_sweep_results(const sim::sweep::Grid& grid, const std::vector<sim::sweep::WorkItem>& items,
                        const std::vector<ItemResult>& results, const SweepInvocation& inv, const std::string& how);

/// The item result as one message: "<ok 0|1>\n<text>" (worker pipes and MPI messages carry the same bytes).
std::string run_item_message(const sim::sweep::Grid& grid, const sim::sweep::WorkItem& item);
ItemResult parse_item_message(const std::string& message);

/// True when an MPI launcher started this process (OpenMPI's OMPI_COMM_WORLD_SIZE, PMI's PMI_SIZE, PMIx's
/// PMIX_RANK).
bool launched_by_mpi();
/// Runs the sweep across the MPI ranks (rank 0 hands out items, gathers and writes); throws when MPI support was not
/// built. Returns the exit code.
int run_sweep_mpi(const SweepInvocation& inv);

}  // namespace hisparse::apps

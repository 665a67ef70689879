// @brief The journal of a running sweep (docs/sweep.md, "Interrupted sweeps"): DIR/sweep.journal holds one line per
// finished work item, appended and fsync'd as its result arrives, so a sweep killed at any moment keeps every item that
// finished. `--resume` reads it back and runs only the rest; the table then has the same bytes as an uninterrupted run,
// because an item's result text is deterministic and the journal holds it exactly.
//
// Format (text, one record a line):
//   hisparse-sweep-journal 1 spec <16 hex digits> items <n>
//   item <index> <bytes> <16 hex digits: FNV-1a of the text> <the item's result text, '\' and newline escaped>
// The spec is a hash of the grid file's bytes and the work list (points, shards and request ranges, so a trace that
// gained requests changes it); a journal of another spec is refused. A line cut short by a kill (no newline, a wrong
// length or checksum) ends the journal: it and anything after it are dropped and recomputed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/io/checked_file.h"
#include "sim/sweep/sweep_grid.h"
#include "sim/sweep/sweep_run.h"

namespace hisparse::sim::sweep {

/// The journal's file name inside the sweep's output directory.
inline constexpr const char* kJournalName = "sweep.journal";

/// 16 hex digits identifying the sweep: the grid's bytes and its work list.
std::string sweep_spec_hash(const Grid& grid, const std::vector<WorkItem>& items);

/// The journal as parsed: the spec and the finished items' texts (by item index).
struct JournalContents {
  std::string spec;
  size_t items = 0;
  std::vector<std::optional<std::string>> finished;
  uint64_t valid_bytes = 0;  // the prefix of the file made of whole, intact lines
  size_t records = 0;        // intact item lines read
};
/// Parses a journal's bytes; `where` names it in errors. A header that is not a journal's is an error; a torn or
/// corrupt item line ends the valid prefix.
JournalContents parse_journal(const std::string& bytes, const std::string& where);
/// One item line (with its newline).
std::string journal_record(size_t item, const std::string& text);

class SweepJournal {
 public:
  /// Opens DIR/sweep.journal for a sweep of `spec` over `items` work items. Without `resume`, an existing journal is
  /// an error (it holds finished work: resume it or remove it); with `resume`, an existing journal of the same spec
  /// is read back (a torn last line cut off) and appended to, one of another spec is an error, and none means a start
  /// from scratch. `dir` is created when missing; one that is not a directory fails here, before any computing.
  SweepJournal(const std::string& dir, const std::string& spec, size_t items, bool resume);

  /// The items finished by an earlier run (by item index); empty optionals for the others.
  const std::vector<std::optional<std::string>>& finished() const { return finished_; }
  size_t resumed_count() const { return resumed_; }
  const std::string& path() const { return path_; }

  /// Appends item `item`'s result text and fsyncs it before returning.
  void append(size_t item, const std::string& text);
  /// Removes the journal (the tables it fed are written).
  void remove();

 private:
  std::string path_;
  std::vector<std::optional<std::string>> finished_;
  size_t resumed_ = 0;
  std::unique_ptr<CheckedFile> file_;
};

}  // namespace hisparse::sim::sweep

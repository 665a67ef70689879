// @brief AtomicOutput: the one way the project writes an output file, decided by what `path` names:
//  - a regular file, or nothing yet: bytes go to "<path>.tmp.<pid>" (the pid keeps two concurrent runs writing the
//    same output apart) next to it, which commit() fsyncs and renames over `path`; until then a reader of `path` sees
//    the previous file or none, never half of one. A replaced file's permissions carry over. A symbolic link to a
//    regular file is followed: its target is replaced, the link stays.
//  - a character device (/dev/null, a terminal) or a FIFO: written in place (opened O_WRONLY, never created,
//    truncated or renamed over), so `--out /dev/null` leaves /dev/null a device. A write error (/dev/full: ENOSPC)
//    is reported; bytes a reader already took cannot be taken back.
//  - a name of an open descriptor (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N): written to that descriptor,
//    after what the process printed there, whatever it is (a redirected stdout's file is not replaced).
//  - a directory, a block device or a socket: refused at once with a message saying what it is (writing a report over
//    a disk partition is never what was meant).
// Every write, fsync and close is checked (core/io/checked_file.h). Dropped without commit() (an error), the
// temporary file is removed; on SIGINT/SIGTERM/SIGHUP it is removed by core/io/interrupt_cleanup.h.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/io/checked_file.h"
#include "core/io/interrupt_cleanup.h"

namespace hisparse {

class AtomicOutput {
 public:
  /// Checks the target and opens the temporary file (or the in-place target); throws naming `path` (and `what`, the
  /// flag or report it is for, when given) if it cannot.
  explicit AtomicOutput(std::string path, std::string what = "");
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  void write(const char* data, size_t size);
  void write(const std::string& text) { write(text.data(), text.size()); }
  /// Flushes, fsyncs and closes (each checked), then renames the temporary file over the output (atomic mode).
  void commit();

  const std::string& path() const { return path_; }
  /// True when the target is written in place (a character device or a FIFO): no temporary file, no rename.
  bool in_place() const { return in_place_; }
  /// The temporary file ("" when written in place).
  const std::string& temporary_path() const { return tmp_; }
  uint64_t bytes_written() const { return file_->bytes_written(); }

 private:
  std::string path_, what_;
  std::string target_;  // what the rename replaces: `path`, or the regular file a symbolic link at `path` names
  std::string tmp_;
  bool in_place_ = false;
  std::optional<InterruptCleanup> cleanup_;
  std::unique_ptr<CheckedFile> file_;
  bool committed_ = false;
};

}  // namespace hisparse

// @brief AtomicOutput: the one way the project writes an output file. Bytes go to "<path>.tmp.<pid>" (the pid keeps two
// concurrent runs writing the same output apart), which commit() renames over `path`; until then a reader of `path`
// sees the previous file or none, never half of one. Dropped without commit() (an error), the temporary file is
// removed; on SIGINT/SIGTERM/SIGHUP it is removed by core/io/interrupt_cleanup.h.
#pragma once

#include <fstream>
#include <string>

#include "core/io/interrupt_cleanup.h"

namespace hisparse {

class AtomicOutput {
 public:
  /// Opens the temporary file; throws naming it (and `what`, the flag or report it is for, when given) if it cannot.
  explicit AtomicOutput(std::string path, std::string what = "");
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  std::ofstream& stream() { return out_; }
  void write(const char* data, size_t size);
  void write(const std::string& text) { write(text.data(), text.size()); }
  /// Flushes, checks every write succeeded and renames the temporary file over the output.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temporary_path() const { return tmp_; }

 private:
  [[noreturn]] void fail(const std::string& doing) const;

  std::string path_, what_, tmp_;
  InterruptCleanup cleanup_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace hisparse

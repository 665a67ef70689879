// @brief Temporary output files that an interrupted run must not leave behind. Writers put their output in a
// temporary file and rename it when done; a destructor removes it on an error, but Ctrl-C (SIGINT), SIGTERM or SIGHUP
// end the process without destructors. A registered path is unlinked by a signal handler before the process dies
// with the same signal.
#pragma once

#include <string>

namespace hisparse {

/// Registers `path` (a file, not a directory) for removal on SIGINT/SIGTERM/SIGHUP; installs the handlers on first
/// use. The guard unregisters it when destroyed (after the rename, or after the destructor removed the file itself).
/// At most 64 paths are registered at once; more are simply not covered.
class InterruptCleanup {
 public:
  explicit InterruptCleanup(const std::string& path);
  ~InterruptCleanup();
  InterruptCleanup(const InterruptCleanup&) = delete;
  InterruptCleanup& operator=(const InterruptCleanup&) = delete;

 private:
  int slot_ = -1;
};

}  // namespace hisparse

// @brief Temporary outputs that an interrupted run must not leave behind. Writers put their output in a temporary
// file (or directory) and rename it when done; a destructor removes it on an error, but Ctrl-C (SIGINT), SIGTERM or
// SIGHUP end the process without destructors. A registered path is removed by a signal handler before the process
// dies with the same signal.
#pragma once

#include <string>

namespace hisparse {

/// Registers `path` for removal on SIGINT/SIGTERM/SIGHUP; installs the handler for each of them that is at its
/// default action (one someone else installed, or an ignored signal, is left alone). The guard unregisters
/// it when destroyed or released (after the rename, or after the destructor removed the path itself). At most 64
/// paths are registered at once; more are simply not covered.
class InterruptCleanup {
 public:
  enum class Kind {
    kFile,  // unlink(path)
    kTree,  // a directory: its entries (recursively, up to 8 levels), then the directory itself
  };
  explicit InterruptCleanup(const std::string& path, Kind kind = Kind::kFile);
  ~InterruptCleanup();
  InterruptCleanup(const InterruptCleanup&) = delete;
  InterruptCleanup& operator=(const InterruptCleanup&) = delete;

  /// Stops covering the path (it was renamed into place); idempotent.
  void release();

 private:
  int slot_ = -1;
};

/// While alive, the same signals first write `text` to stderr (one write(2), before the clean-up): what a user
/// should know on the way out, such as the command that resumes an interrupted sweep. One note at a time (a newer
/// one replaces it until destroyed); at most 4095 bytes are kept.
class InterruptNote {
 public:
  explicit InterruptNote(const std::string& text);
  ~InterruptNote();
  InterruptNote(const InterruptNote&) = delete;
  InterruptNote& operator=(const InterruptNote&) = delete;
};

namespace detail {
/// What the signal handler runs for a kTree path; exposed for tests. Only system calls (open, getdents64, unlinkat,
/// close, lseek): no allocation, no locks, no errno left changed, so it is safe inside a signal handler.
void remove_tree_signal_safe(const char* path);
}  // namespace detail

}  // namespace hisparse

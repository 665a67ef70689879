// @brief CheckedFile: a written file descriptor whose every write, fsync and close is checked, so a full disk, a
// quota or an I/O error is an error naming the file and the system's reason, never a short file reported as written.
// Bytes are buffered (a trace writer emits many small pieces). AtomicOutput (core/io/atomic_output.h) writes its
// temporary file or an in-place target through it; the `.npy` trace writer its files inside the temporary directory;
// the sweep journal appends through it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse {

class CheckedFile {
 public:
  enum class Mode {
    kCreate,    // O_CREAT | O_TRUNC | O_NOFOLLOW: a new (temporary) file
    kAppend,    // O_CREAT | O_APPEND: a journal that grows
    kExisting,  // O_WRONLY alone: an existing character device or FIFO written in place (never created, truncated
                // or replaced); opening a FIFO waits for its reader, as a shell's `> fifo` does
  };
  /// Opens `path`; throws naming it (and `what`, the flag or report it is for, when given) and the reason.
  CheckedFile(std::string path, Mode mode, std::string what = "");
  /// Writes to a duplicate of the open descriptor `fd` (what /dev/stdout or /dev/fd/N names), at its current offset.
  CheckedFile(int fd, std::string path, std::string what);
  /// Closes without checking: only reached on an error path (a caller that succeeds calls close()).
  ~CheckedFile();
  CheckedFile(const CheckedFile&) = delete;
  CheckedFile& operator=(const CheckedFile&) = delete;

  void write(const char* data, size_t size);
  void write(const std::string& text) { write(text.data(), text.size()); }
  /// Writes `size` bytes at `offset` (after flushing what is buffered); for patching a header written earlier.
  void write_at(uint64_t offset, const char* data, size_t size);
  void flush();
  /// flush() then fsync(): the bytes are on the device when it returns. A descriptor that cannot be synchronised
  /// (fsync's EINVAL: a character device, a FIFO) has nothing to wait for and is not an error.
  void sync();
  /// flush() then close(), both checked. Idempotent.
  void close();
  /// fchmod() of the open file (AtomicOutput gives a replaced file's permissions to its successor).
  void chmod(mode_t mode);

  const std::string& path() const { return path_; }
  /// Bytes written so far (buffered ones included).
  uint64_t bytes_written() const { return written_; }

 private:
  [[noreturn]] void fail(const std::string& doing, int err) const;
  void write_fully(const char* data, size_t size);

  std::string path_, what_;
  int fd_ = -1;
  std::vector<char> buf_;
  uint64_t written_ = 0;
};

/// fsync() of the directory holding `path`, so a rename or a new file in it survives a crash; checked like sync().
void sync_parent_directory(const std::string& path, const std::string& what = "");

}  // namespace hisparse

// @brief CheckedFile (see checked_file.h).
#include "core/io/checked_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/io_error.h"

namespace hisparse {

namespace {

// Large enough that a trace's many small pieces become few system calls, small enough to be nothing next to a trace.
constexpr size_t kBufferBytes = size_t{1} << 18;

int open_flags(CheckedFile::Mode mode) {
  switch (mode) {
    case CheckedFile::Mode::kCreate: return O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC;
    case CheckedFile::Mode::kAppend: return O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
    case CheckedFile::Mode::kExisting: return O_WRONLY | O_CLOEXEC;
  }
  return O_WRONLY;
}

}  // namespace

CheckedFile::CheckedFile(std::string path, Mode mode, std::string what) : path_(std::move(path)), what_(std::move(what)) {
  do {
    fd_ = ::open(path_.c_str(), open_flags(mode), 0666);
  } while (fd_ < 0 && errno == EINTR);  // a FIFO's open waits for a reader and may be interrupted
  if (fd_ < 0) fail("cannot open it for writing (is the directory there and writable?)", errno);
  buf_.reserve(kBufferBytes);
}

CheckedFile::CheckedFile(int fd, std::string path, std::string what) : path_(std::move(path)), what_(std::move(what)) {
  fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (fd_ < 0) fail(fmt::format("descriptor {} is not open", fd), errno);
  buf_.reserve(kBufferBytes);
}

CheckedFile::~CheckedFile() {
  if (fd_ >= 0) ::close(fd_);
}

void CheckedFile::fail(const std::string& doing, int err) const {
  const std::string reason = err ? std::string(": ") + std::strerror(err) : std::string();
  if (what_.empty()) throw_io_error(err, "{}: {}{}", path_, doing, reason);
  throw_io_error(err, "{} ({}): {}{}", path_, what_, doing, reason);
}

void CheckedFile::write_fully(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    // write() returning 0 for a non-empty request is a device that takes no more: report it as the full disk it is.
    if (n <= 0) fail("writing failed", n < 0 ? errno : ENOSPC);
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void CheckedFile::write(const char* data, size_t size) {
  if (fd_ < 0) fail("write after close", 0);
  written_ += size;
  if (buf_.size() + size > kBufferBytes) flush();
  if (size >= kBufferBytes) {
    write_fully(data, size);
    return;
  }
  buf_.insert(buf_.end(), data, data + size);
}

void CheckedFile::write_at(uint64_t offset, const char* data, size_t size) {
  flush();
  while (size > 0) {
    const ssize_t n = ::pwrite(fd_, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("writing failed", n < 0 ? errno : ENOSPC);
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

void CheckedFile::flush() {
  if (buf_.empty()) return;
  // Emptied first: after a failed write the destructor must not try the same bytes again.
  std::vector<char> pending;
  pending.swap(buf_);
  buf_.reserve(kBufferBytes);
  write_fully(pending.data(), pending.size());
}

void CheckedFile::sync() {
  flush();
  if (::fsync(fd_) != 0 && errno != EINVAL) fail("fsync failed", errno);
}

void CheckedFile::close() {
  if (fd_ < 0) return;
  flush();
  const int fd = fd_;
  fd_ = -1;
  // close() is not retried on EINTR (Linux has released the descriptor already); its error is the last word on a
  // write-back that failed (NFS, a quota).
  if (::close(fd) != 0) fail("closing failed", errno);
}

void CheckedFile::chmod(mode_t mode) {
  if (::fchmod(fd_, mode) != 0) fail("cannot set its permissions", errno);
}

void sync_parent_directory(const std::string& path, const std::string& what) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (what.empty()) throw_io_error(err, "{}: cannot open its directory to sync it: {}", path, std::strerror(err));
    throw_io_error(err, "{} ({}): cannot open its directory to sync it: {}", path, what, std::strerror(err));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) {
    if (what.empty()) throw_io_error(err, "{}: fsync of its directory failed: {}", path, std::strerror(err));
    throw_io_error(err, "{} ({}): fsync of its directory failed: {}", path, what, std::strerror(err));
  }
}

}  // namespace hisparse

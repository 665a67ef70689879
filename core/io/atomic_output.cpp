// @brief AtomicOutput (see atomic_output.h).
#include "core/io/atomic_output.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/io/io_error.h"

namespace hisparse {

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& what, const std::string& why, int err = 0) {
  if (what.empty()) throw_io_error(err, "{}: {}", path, why);
  throw_io_error(err, "{} ({}): {}", path, what, why);
}

/// The open descriptor `path` names (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N), or -1.
int named_descriptor(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const size_t n = std::strlen(prefix);
    if (path.compare(0, n, prefix) != 0 || path.size() == n || path.size() > n + 9) continue;
    if (path.find_first_not_of("0123456789", n) != std::string::npos) continue;
    return std::atoi(path.c_str() + n);
  }
  return -1;
}

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file, character device or FIFO";
}

}  // namespace

AtomicOutput::AtomicOutput(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)), target_(path_) {
  if (const int fd = named_descriptor(path_); fd >= 0) {
    std::fflush(nullptr);  // what the process printed there comes first
    in_place_ = true;
    file_ = std::make_unique<CheckedFile>(fd, path_, what_);
    return;
  }
  struct stat st {};
  std::optional<mode_t> keep_mode;  // a replaced regular file's permissions
  if (::stat(path_.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      in_place_ = true;
    } else if (S_ISREG(st.st_mode)) {
      keep_mode = st.st_mode & 07777;
      struct stat lst {};
      if (::lstat(path_.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
        char resolved[PATH_MAX];
        if (!::realpath(path_.c_str(), resolved)) {
          const int err = errno;
          refuse(path_, what_, std::string("cannot resolve the symbolic link: ") + std::strerror(err), err);
        }
        target_ = resolved;
      }
    } else {
      refuse(path_, what_,
             fmt::format("is {}: refusing to write over it (give a file path, a character device such as /dev/null, "
                         "or a FIFO)",
                         kind_of(st.st_mode)),
             S_ISDIR(st.st_mode) ? EISDIR : 0);
    }
  } else if (errno != ENOENT) {
    const int err = errno;
    refuse(path_, what_, std::string("cannot write there: ") + std::strerror(err), err);
  }
  if (in_place_) {
    file_ = std::make_unique<CheckedFile>(path_, CheckedFile::Mode::kExisting, what_);
    return;
  }
  tmp_ = target_ + ".tmp." + std::to_string(::getpid());
  cleanup_.emplace(tmp_);  // registered before the file exists: no window without cover
  file_ = std::make_unique<CheckedFile>(tmp_, CheckedFile::Mode::kCreate, what_);
  try {
    if (keep_mode) file_->chmod(*keep_mode);
  } catch (...) {
    file_.reset();
    std::remove(tmp_.c_str());
    throw;
  }
}

AtomicOutput::~AtomicOutput() {
  if (committed_) return;
  file_.reset();
  if (!in_place_) std::remove(tmp_.c_str());  // an error before commit leaves no half file behind
}

void AtomicOutput::write(const char* data, size_t size) { file_->write(data, size); }

void AtomicOutput::commit() {
  if (committed_) return;
  if (in_place_) {
    file_->close();
    committed_ = true;
    return;
  }
  file_->sync();
  file_->close();
  if (std::rename(tmp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    refuse(tmp_, what_, fmt::format("cannot rename it to {}: {}", target_, std::strerror(err)), err);
  }
  cleanup_->release();
  committed_ = true;
  sync_parent_directory(target_, what_);  // the rename itself survives a crash
}

}  // namespace hisparse

// @brief The registry behind InterruptCleanup: fixed slots that a signal handler can read without allocating.
//
// Async-signal safety. The handler reads the slots (plain arrays published with an atomic flag) and calls only
// system calls that POSIX lists as async-signal-safe (unlink, unlinkat, openat, close, lseek, raise, sigaction),
// plus getdents64 through syscall(2), a register-shuffling wrapper that takes no lock and allocates nothing. A
// directory tree is removed without opendir/readdir (which allocate): the entries are read with getdents64 into a
// buffer on the stack, each is unlinked relative to the directory's descriptor (no path building), and a
// subdirectory is opened relative to its parent and emptied the same way, at most kMaxDepth levels deep (the npy
// writer's temporary directory is flat). Removing entries while reading a directory may make the kernel skip some,
// so a directory is re-read from the start until a pass removes nothing. A writer thread still running while the
// handler runs could create a file after its pass; then rmdir fails and that directory stays (a window of
// microseconds, before the process dies).
#include "core/io/interrupt_cleanup.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <mutex>

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace hisparse {

namespace {

constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;
constexpr int kMaxDepth = 8;

struct Slot {
  std::atomic<bool> used{false};
  InterruptCleanup::Kind kind = InterruptCleanup::Kind::kFile;
  char path[kPathMax] = {};
};

Slot g_slots[kSlots];

#ifdef SYS_getdents64
/// Empties the directory open as `dir` (entries first, subdirectories recursively).
void remove_entries(int dir, int depth) {
  // linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen, u8 d_type, char d_name[] (NUL-terminated).
  constexpr size_t kRecLenAt = 16, kTypeAt = 18, kNameAt = 19;
  constexpr unsigned char kDirType = 4;      // DT_DIR
  constexpr unsigned char kUnknownType = 0;  // DT_UNKNOWN (some file systems): try a file first
  alignas(8) char buf[2048];  // kMaxDepth levels of these on the handler's stack
  for (int pass = 0; pass < 64; ++pass) {
    bool removed = false;
    for (;;) {
      const long got = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
      if (got <= 0) break;
      for (long at = 0; at < got;) {
        const char* rec = buf + at;
        uint16_t reclen = 0;
        std::memcpy(&reclen, rec + kRecLenAt, sizeof reclen);
        if (reclen == 0) break;
        at += reclen;
        const unsigned char type = static_cast<unsigned char>(rec[kTypeAt]);
        const char* name = rec + kNameAt;
        if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
        if (type != kDirType && ::unlinkat(dir, name, 0) == 0) {
          removed = true;
          continue;
        }
        if (type != kDirType && type != kUnknownType) continue;  // could not unlink a file: leave it
        if (depth + 1 < kMaxDepth) {
          const int sub = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (sub >= 0) {
            remove_entries(sub, depth + 1);
            ::close(sub);
          }
        }
        if (::unlinkat(dir, name, AT_REMOVEDIR) == 0) removed = true;
      }
    }
    if (!removed) break;
    ::lseek(dir, 0, SEEK_SET);
  }
}
#endif

// The note: its bytes are written before its size is published, and the handler reads the size first.
constexpr size_t kNoteMax = 4096;
char g_note[kNoteMax];
std::atomic<size_t> g_note_size{0};

extern "C" void remove_registered_and_die(int sig) {
  const int saved_errno = errno;
  if (const size_t n = g_note_size.load(std::memory_order_acquire); n > 0) {
    const ssize_t ignored = ::write(STDERR_FILENO, g_note, n);
    (void)ignored;
  }
  for (Slot& s : g_slots) {
    if (!s.used.load(std::memory_order_acquire)) continue;
    if (s.kind == InterruptCleanup::Kind::kTree) {
      detail::remove_tree_signal_safe(s.path);
    } else {
      ::unlink(s.path);
    }
  }
  errno = saved_errno;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

/// Checked at every registration (not once), so a signal reset to its default since (a forked child, a library)
/// is covered again.
void install_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    // A handler someone else installed (or an ignored signal) is left alone.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_registered_and_die;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

namespace detail {

void remove_tree_signal_safe(const char* path) {
  const int saved_errno = errno;
#ifdef SYS_getdents64
  const int dir = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir >= 0) {
    remove_entries(dir, 0);
    ::close(dir);
    ::rmdir(path);
  } else {
    ::unlink(path);  // not a directory (or gone): a file at that path is removed like a kFile one
  }
#else
  ::rmdir(path);  // no getdents64: only an empty directory can be removed without allocating
#endif
  errno = saved_errno;
}

}  // namespace detail

InterruptCleanup::InterruptCleanup(const std::string& path, Kind kind) {
  if (path.size() >= kPathMax) return;
  static std::mutex claim;
  std::lock_guard<std::mutex> lock(claim);
  install_handlers();
  for (int i = 0; i < kSlots; ++i) {
    if (g_slots[i].used.load(std::memory_order_relaxed)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].kind = kind;
    g_slots[i].used.store(true, std::memory_order_release);
    slot_ = i;
    return;
  }
}

InterruptNote::InterruptNote(const std::string& text) {
  g_note_size.store(0, std::memory_order_release);
  const size_t n = std::min(text.size(), kNoteMax - 1);
  std::memcpy(g_note, text.data(), n);
  g_note_size.store(n, std::memory_order_release);
  install_handlers();
}

InterruptNote::~InterruptNote() { g_note_size.store(0, std::memory_order_release); }

void InterruptCleanup::release() {
  if (slot_ >= 0) g_slots[slot_].used.store(false, std::memory_order_release);
  slot_ = -1;
}

InterruptCleanup::~InterruptCleanup() { release(); }

}  // namespace hisparse

// @brief The registry behind InterruptCleanup: fixed slots that a signal handler can read without allocating.
#include "core/interrupt_cleanup.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>

#include <unistd.h>

namespace hisparse {

namespace {

constexpr int kSlots = 64;
constexpr size_t kPathMax = 4096;

struct Slot {
  std::atomic<bool> used{false};
  char path[kPathMax] = {};
};

Slot g_slots[kSlots];
std::once_flag g_install;

extern "C" void remove_registered_and_die(int sig) {
  // unlink and raise are async-signal-safe; the slots are plain arrays, read without locks.
  for (Slot& s : g_slots)
    if (s.used.load(std::memory_order_acquire)) ::unlink(s.path);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

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

InterruptCleanup::InterruptCleanup(const std::string& path) {
  if (path.size() >= kPathMax) return;
  std::call_once(g_install, install_handlers);
  static std::mutex claim;
  std::lock_guard<std::mutex> lock(claim);
  for (int i = 0; i < kSlots; ++i) {
    if (g_slots[i].used.load(std::memory_order_relaxed)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].used.store(true, std::memory_order_release);
    slot_ = i;
    return;
  }
}

InterruptCleanup::~InterruptCleanup() {
  if (slot_ >= 0) g_slots[slot_].used.store(false, std::memory_order_release);
}

}  // namespace hisparse

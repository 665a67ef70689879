// @brief Interrupted writers leave nothing behind (issue 17): the signal-safe tree removal on its own, and a forked
// child that is writing an .npy directory (a tree) or a native file when SIGINT, SIGTERM or SIGHUP arrives.
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "core/io/interrupt_cleanup.h"
#include "tests/traces/trace_test_util.h"
#include "traces/trace_writer.h"

namespace fs = std::filesystem;
using namespace hisparse;
using namespace hisparse::traces;

namespace {

int count_tmp_entries(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string().find(".tmp") != std::string::npos;
  return n;
}

/// Runs `body` in a forked child with SIGINT/SIGTERM/SIGHUP at their defaults (doctest installs its own handlers; a
/// real run starts without them); the child exits 3 if `body` returns. Returns the child's wait status.
template <class Body>
int in_child(Body&& body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (int s : {SIGINT, SIGTERM, SIGHUP}) std::signal(s, SIG_DFL);
    try {
      body();
    } catch (...) {
    }
    ::_exit(3);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

/// Opens a writer at `out`, writes three requests of three steps (the npy writer's temporary directory then holds
/// five files) and raises `sig` before finish().
void write_then_raise(const std::string& out, TraceFormat format, int sig) {
  TraceMeta meta;
  meta.layers = 2;
  meta.top_k = 4;
  auto w = make_trace_writer(out, format, meta);
  for (int64_t req = 0; req < 3; ++req) {
    for (int64_t step = 0; step < 3; ++step) {
      StepRecord r;
      r.request_id = req;
      r.step = step;
      r.seq_len = 10 + static_cast<int32_t>(step);
      r.positions = {0, 1, 2, -1, 3, 4, -1, -1};
      w->write(r);
    }
  }
  std::raise(sig);
}

}  // namespace

TEST_CASE("remove_tree_signal_safe: many files, nested directories, an empty one; a plain file; a missing path") {
  const fs::path root = testing::scratch_dir("tree_removal");
  const fs::path tree = root / "out.tmp.123";
  fs::create_directories(tree / "a" / "b" / "c");
  fs::create_directories(tree / "empty");
  // More entries than one getdents64 buffer holds, with long names, so the directory is read in several rounds.
  for (int i = 0; i < 300; ++i)
    testing::spit((tree / ("req_" + std::to_string(i) + "_topk_with_a_long_name.npy")).string(), "x");
  testing::spit((tree / "a" / "one").string(), "1");
  testing::spit((tree / "a" / "b" / "c" / "deep").string(), "2");
  detail::remove_tree_signal_safe(tree.c_str());
  CHECK_FALSE(fs::exists(tree));

  const fs::path file = root / "plain.tmp.1";
  testing::spit(file.string(), "x");
  detail::remove_tree_signal_safe(file.c_str());
  CHECK_FALSE(fs::exists(file));
  errno = 0;
  detail::remove_tree_signal_safe((root / "missing").c_str());
  CHECK(errno == 0);  // errno is left as it was
  CHECK(fs::is_empty(root));
}

TEST_CASE("an interrupted .npy or native write leaves no temporary directory or file (SIGINT, SIGTERM, SIGHUP)") {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    for (TraceFormat format : {TraceFormat::kNpy, TraceFormat::kNative}) {
      INFO("signal " << sig << " format " << (format == TraceFormat::kNpy ? "npy" : "native"));
      const fs::path dir = testing::scratch_dir("interrupted_write");
      const fs::path out = dir / (format == TraceFormat::kNpy ? "trace_npy" : "trace.hstrace");
      const int status = in_child([&] { write_then_raise(out.string(), format, sig); });
      REQUIRE(WIFSIGNALED(status));  // the handler re-raises: the child dies of the signal, as without it
      CHECK(WTERMSIG(status) == sig);
      CHECK_FALSE(fs::exists(out));
      CHECK(count_tmp_entries(dir) == 0);
    }
  }
}

TEST_CASE("a finished .npy write is released: a later interrupt removes nothing") {
  const fs::path dir = testing::scratch_dir("finished_write");
  const fs::path out = dir / "trace_npy";
  const int status = in_child([&] {
    TraceMeta meta;
    meta.layers = 1;
    meta.top_k = 2;
    auto w = make_npy_writer(out.string(), meta);
    StepRecord r;
    r.seq_len = 5;
    r.positions = {4, 0};
    w->write(r);
    w->finish();
    const InterruptCleanup other((dir / "other.tmp").string());  // keeps the handler installed
    std::raise(SIGTERM);
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(fs::exists(out / "req_0_topk.npy"));
  CHECK(fs::exists(out / "meta.json"));
}

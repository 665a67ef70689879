// @brief Every `hisparse` output path against targets that are not plain files (issue 28): `--out` naming a character
// device leaves it a device (exit 0), a full device (/dev/full's numbers) or a full disk (RLIMIT_FSIZE) fails with
// the reason and leaves no temporary file, a FIFO receives the same bytes a file would, and standard output that
// cannot be written makes the exit status non-zero. The device nodes are made here (mknod needs root, as in CI;
// without it those cases say so and are skipped).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "tests/apps/cli_test_util.h"

using namespace hisparse::test;
namespace fs = std::filesystem;

namespace {

const std::string kTrace = std::string(HISPARSE_SOURCE_DIR) + "/traces/bundled/default.hstrace";

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

bool make_char_device(const fs::path& p, unsigned major, unsigned minor) {
  if (::mknod(p.c_str(), S_IFCHR | 0666, makedev(major, minor)) == 0) return true;
  MESSAGE("skipped: mknod " << p.string() << " needs root (" << std::strerror(errno) << ")");
  return false;
}

bool is_char_device(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

/// The names in `dir` other than the captured stdout/stderr of run().
std::string listing(const fs::path& dir) {
  std::string s;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n != "stdout.txt" && n != "stderr.txt") s += n + " ";
  }
  return s;
}

}  // namespace

TEST_CASE("output targets cli: a character device stays a device, with exit 0, for every file-writing flag") {
  const fs::path d = scratch_dir("out_nul");
  const fs::path nul = d / "nul";
  if (!make_char_device(nul, 1, 3)) return;
  const std::string n = nul.string();
  for (const std::string& args :
       {"trace gen --preset tiny --out " + n, "trace convert " + kTrace + " " + n, "trace info " + kTrace + " --json " + n,
        "replay --trace " + kTrace + " --buffer-sizes 2048 --policy sglang-lru --quiet --per-step-csv " + n}) {
    CAPTURE(args);
    const Run r = run(args, d);
    CHECK(exit_code(r.status) == 0);
    CHECK(r.err == "");
    CHECK(is_char_device(nul));
    CHECK(listing(d) == "nul ");
  }
  // The byte count trace gen reports is what it wrote, not what the device kept (nothing).
  const Run file = run("trace gen --preset tiny --out " + (d / "t.hstrace").string(), d);
  const Run dev = run("trace gen --preset tiny --out " + n, d);
  const auto bytes = [](const std::string& out) { return out.substr(out.find("top_k")); };
  CHECK(bytes(file.out) == bytes(dev.out));
  // A command whose --out is a directory refuses a device, naming it, and leaves it alone.
  const Run plan = run("plan --scenario dsv32-8xh200-1tb --no-plots --out " + n, d);
  CHECK(exit_code(plan.status) != 0);
  CHECK(plan.err.find(n) != std::string::npos);
  CHECK(is_char_device(nul));
}

TEST_CASE("output targets cli: a full device fails with the reason and leaves no temporary file") {
  const fs::path d = scratch_dir("out_full");
  const fs::path full = d / "full";
  if (!make_char_device(full, 1, 7)) return;
  for (const std::string& args : {"trace gen --preset tiny --out " + full.string(),
                                  "trace info " + kTrace + " --json " + full.string()}) {
    CAPTURE(args);
    const Run r = run(args, d);
    CHECK(exit_code(r.status) == 1);
    CHECK(r.err.find("No space left on device") != std::string::npos);
    CHECK(is_char_device(full));
    CHECK(listing(d) == "full ");
  }
  // Standard output on a full device: the command's own work succeeds, the lost output makes the exit non-zero.
  const fs::path err = d / "replay_err.txt";
  const int status = std::system((cli() + " replay --trace " + kTrace + " --buffer-sizes 2048 --policy sglang-lru --quiet > " +
                                  full.string() + " 2> " + err.string())
                                     .c_str());
  CHECK(exit_code(status) == 1);
  CHECK(slurp(err).find("hisparse replay: error: writing standard output failed: No space left on device") !=
        std::string::npos);
}

TEST_CASE("output targets cli: plan on a full disk fails and leaves no plan.json.tmp") {
  // RLIMIT_FSIZE (ulimit -f, in blocks of 512 or 1024 bytes) stands in for a full disk: a write past it fails with
  // EFBIG once SIGXFSZ is ignored. plan.json is far larger than one block.
  const fs::path d = scratch_dir("out_fsize");
  const fs::path out = d / "plan";
  const Run r = run("plan --scenario dsv32-8xh200-1tb --no-plots --out " + out.string(), d);
  REQUIRE(exit_code(r.status) == 0);
  fs::remove_all(out);
  const int status = std::system(("sh -c 'ulimit -f 1; trap \"\" XFSZ; exec " + cli() +
                                  " plan --scenario dsv32-8xh200-1tb --no-plots --out " + out.string() + "' > " +
                                  (d / "o.txt").string() + " 2> " + (d / "e.txt").string())
                                     .c_str());
  CHECK(exit_code(status) == 1);
  CHECK(slurp(d / "e.txt").find("File too large") != std::string::npos);
  for (const auto& e : fs::directory_iterator(out)) {
    CAPTURE(e.path().string());
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  }
}

TEST_CASE("output targets cli: a FIFO receives the bytes a file would, and stays a FIFO") {
  const fs::path d = scratch_dir("out_fifo");
  const fs::path fifo = d / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0666) == 0);
  std::string got;
  std::atomic<bool> read_all{false};
  std::thread reader([&] {
    got = slurp(fifo);
    read_all = true;
  });
  const Run r = run("trace gen --preset tiny --out " + fifo.string(), d);
  // Had the command failed before opening the FIFO, the reader would wait forever: a writer that opens and closes
  // releases it (with nothing read).
  while (!read_all) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reader.join();
  CHECK(exit_code(r.status) == 0);
  const Run f = run("trace gen --preset tiny --out " + (d / "t.hstrace").string(), d);
  REQUIRE(exit_code(f.status) == 0);
  CHECK(!got.empty());
  CHECK(got == slurp(d / "t.hstrace"));
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
}

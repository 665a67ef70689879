// @brief AtomicOutput for each kind of target (core/io/atomic_output.h): a new path and a regular file are replaced
// atomically (permissions kept, nothing left on an error or a full disk), a symbolic link keeps pointing at its
// replaced target, a character device and a FIFO are written in place and stay what they are, a directory is refused,
// and a device that takes no bytes (/dev/full) is an error naming the reason. Device nodes are made by the test
// (mknod needs root: without it those cases say so and are skipped).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/io/atomic_output.h"

using namespace hisparse;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  const auto dir = fs::path(HISPARSE_BINARY_DIR) / "test_scratch" / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The names in `dir` (to see that no "<name>.tmp.<pid>" is left).
std::string listing(const fs::path& dir) {
  std::string s;
  for (const auto& e : fs::directory_iterator(dir)) s += e.path().filename().string() + " ";
  return s;
}

/// mknod of a character device (major, minor); false (with a message) where the test may not make device nodes.
bool make_char_device(const fs::path& p, unsigned major, unsigned minor) {
  if (::mknod(p.c_str(), S_IFCHR | 0666, makedev(major, minor)) == 0) return true;
  MESSAGE("skipped: mknod " << p.string() << " needs root (" << std::strerror(errno) << ")");
  return false;
}

bool is_char_device(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

}  // namespace

TEST_CASE("atomic output: a new path and a regular file are replaced whole; an error leaves no temporary file") {
  const fs::path d = scratch("atomic_regular");
  const std::string p = (d / "out.txt").string();
  {
    AtomicOutput out(p);
    // Atomic mode: the bytes go to "<path>.tmp.<pid>" until commit.
    CHECK(!out.in_place());
    CHECK(out.temporary_path() == p + ".tmp." + std::to_string(::getpid()));
    out.write("first\n");
    CHECK(!fs::exists(p));
    out.commit();
  }
  CHECK(slurp(p) == "first\n");
  // An existing file's permissions carry over to its successor.
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
  {
    AtomicOutput out(p);
    out.write("second\n");
    out.commit();
  }
  CHECK(slurp(p) == "second\n");
  CHECK(fs::status(p).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
  // Dropped without commit (an error): the old file stays, the temporary one is gone.
  {
    AtomicOutput out(p);
    out.write("half");
  }
  CHECK(slurp(p) == "second\n");
  CHECK(listing(d) == "out.txt ");
}

TEST_CASE("atomic output: a symbolic link to a file has its target replaced and stays a link") {
  const fs::path d = scratch("atomic_link");
  {
    std::ofstream(d / "target.txt") << "old";
  }
  fs::create_symlink("target.txt", d / "link.txt");
  AtomicOutput out((d / "link.txt").string());
  out.write("new");
  out.commit();
  CHECK(fs::is_symlink(d / "link.txt"));
  CHECK(slurp(d / "target.txt") == "new");
}

TEST_CASE("atomic output: a directory is refused, naming what it is") {
  const fs::path d = scratch("atomic_dir");
  fs::create_directories(d / "sub");
  CHECK_THROWS_WITH_AS(AtomicOutput((d / "sub").string(), "--out"),
                       doctest::Contains("(--out): is a directory: refusing to write over it"), Error);
}

TEST_CASE("atomic output: a character device (/dev/null's numbers) is written in place and stays a device") {
  const fs::path d = scratch("atomic_null");
  const fs::path nul = d / "nul";
  if (!make_char_device(nul, 1, 3)) return;
  AtomicOutput out(nul.string());
  CHECK(out.in_place());
  CHECK(out.temporary_path().empty());
  out.write(std::string(1 << 20, 'x'));  // more than the buffer: written through
  out.commit();
  CHECK(out.bytes_written() == (1u << 20));
  CHECK(is_char_device(nul));
  CHECK(listing(d) == "nul ");
}

TEST_CASE("atomic output: a full device (/dev/full's numbers) is an error naming ENOSPC; nothing is left behind") {
  const fs::path d = scratch("atomic_full");
  const fs::path full = d / "full";
  if (!make_char_device(full, 1, 7)) return;
  // A small write is buffered: the failure shows at commit, which must not report success.
  AtomicOutput out(full.string(), "--out");
  out.write("a few bytes");
  CHECK_THROWS_WITH_AS(out.commit(), doctest::Contains("No space left on device"), Error);
  CHECK(is_char_device(full));
  CHECK(listing(d) == "full ");
}

TEST_CASE("atomic output: a regular file on a full disk leaves no temporary file") {
  // RLIMIT_FSIZE stands in for a full disk (write fails with EFBIG past the limit, SIGXFSZ ignored); in a child
  // process, so the limit does not reach the other tests.
  const fs::path d = scratch("atomic_fsize");
  const std::string p = (d / "big.bin").string();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    int code = 3;
    try {
      AtomicOutput out(p);
      out.write(std::string(1 << 20, 'x'));
      out.commit();
      code = 2;  // reported success: the failure went unseen
    } catch (const Error& e) {
      code = std::string(e.what()).find("File too large") != std::string::npos ? 0 : 4;
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(listing(d).empty());
}

TEST_CASE("atomic output: a FIFO is written in place for its reader and stays a FIFO") {
  const fs::path d = scratch("atomic_fifo");
  const fs::path fifo = d / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0666) == 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });  // opening for writing waits for this reader
  const std::string text(300000, 'y');
  {
    AtomicOutput out(fifo.string());
    CHECK(out.in_place());
    out.write(text);
    out.commit();
  }
  reader.join();
  CHECK(got == text);
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(listing(d) == "pipe ");
}

TEST_CASE("atomic output: /dev/fd/N writes to that descriptor after what it holds; a redirected file is not replaced") {
  const fs::path d = scratch("atomic_fd");
  const fs::path p = d / "stdout.txt";
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, "printed\n", 8) == 8);
  struct stat before {};
  REQUIRE(::stat(p.c_str(), &before) == 0);
  {
    AtomicOutput out("/dev/fd/" + std::to_string(fd));
    CHECK(out.in_place());
    out.write("report\n");
    out.commit();
  }
  ::close(fd);
  struct stat after {};
  REQUIRE(::stat(p.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);
  CHECK(slurp(p) == "printed\nreport\n");
  CHECK(listing(d) == "stdout.txt ");
}

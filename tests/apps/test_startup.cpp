// @brief Start-up loads no CUDA library (issue 40): a CPU command (`info`) opens none of libcudart, libcublas,
// libcublasLt or libcuda, and `--version` opens at most the driver, to say whether it would load. The dynamic loader
// names every object it opens under LD_DEBUG=files; no time is measured here (bench/startup.py times start-up).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/apps/cli_test_util.h"

namespace fs = std::filesystem;
using hisparse::test::cli;
using hisparse::test::slurp;

namespace {

/// The objects the dynamic loader opened for `hisparse <args>` ("file=<name>" lines of LD_DEBUG=files), and the
/// command's standard output.
struct Opened {
  int status = 0;
  std::vector<std::string> files;
  std::string out;
};

Opened opened_by(const std::string& args, const fs::path& dir) {
  const fs::path o = dir / "stdout.txt", e = dir / "stderr.txt";
  Opened r;
  r.status = std::system(("LD_DEBUG=files " + cli() + " " + args + " > " + o.string() + " 2> " + e.string()).c_str());
  r.out = slurp(o);
  const std::string err = slurp(e);
  for (size_t at = err.find("file="); at != std::string::npos; at = err.find("file=", at + 5)) {
    const size_t end = err.find_first_of(" \t\n;", at);
    r.files.push_back(err.substr(at + 5, end - at - 5));
  }
  return r;
}

bool is_cuda_library(const std::string& file, bool driver_too) {
  const std::string name = fs::path(file).filename().string();
  for (const char* lib : {"libcudart", "libcublas"})  // libcublas also covers libcublasLt
    if (name.rfind(lib, 0) == 0) return true;
  return driver_too && name.rfind("libcuda.", 0) == 0;
}

}  // namespace

TEST_CASE("a CPU command loads no CUDA library; --version loads at most the driver, to say whether it would load") {
  const fs::path dir = hisparse::test::scratch_dir("startup");
  // `info` reads YAML and prints arithmetic: no object whose name starts with libcudart, libcublas or libcuda.
  const Opened info = opened_by("info --scenario dsv32-8xh200-1tb", dir);
  CHECK(info.status == 0);
  CHECK(info.files.size() > 0);  // the loader did report (libc at least), so an empty match below means something
  for (const std::string& f : info.files) {
    CAPTURE(f);
    CHECK_FALSE(is_cuda_library(f, true));
  }
  // `--version` may probe the driver (dlopen + dlclose), never the runtime or cuBLAS.
  const Opened version = opened_by("--version", dir);
  CHECK(version.status == 0);
  for (const std::string& f : version.files) {
    CAPTURE(f);
    CHECK_FALSE(is_cuda_library(f, false));
  }
  // It says whether the backend was built, and in a CUDA build whether the driver would load.
#ifdef HISPARSE_HAVE_CUDA
  CHECK(version.out.find("CUDA backend built for sm_90a, loaded by the first GPU command: ") != std::string::npos);
  const bool says_driver = version.out.find("the CUDA driver (libcuda.so.1) loads") != std::string::npos ||
                           version.out.find("the CUDA driver cannot be loaded here: ") != std::string::npos;
  CHECK(says_driver);
#else
  CHECK(version.out.find("CUDA backend not built") != std::string::npos);
#endif
  fs::remove_all(dir);
}

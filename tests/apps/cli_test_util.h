// @brief What the end-to-end CLI tests share: where the `hisparse` binary is, reading a file whole, and a scratch
// directory per test and process.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <unistd.h>

namespace hisparse::test {

/// $HISPARSE_CLI, else the binary of this build.
inline std::string cli() {
  const char* env = std::getenv("HISPARSE_CLI");
  return env ? env : std::string(HISPARSE_BINARY_DIR) + "/apps/hisparse";
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// An empty <build>/test_scratch/<name>_<pid>.
inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::path(HISPARSE_BINARY_DIR) / "test_scratch" / (name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// What a `hisparse` run printed and its exit status.
struct Run {
  int status = 0;
  std::string out, err;
};

/// Runs `hisparse <args>`, its stdout and stderr captured in files under `dir`.
inline Run run(const std::string& args, const std::filesystem::path& dir) {
  Run r;
  const auto o = dir / "stdout.txt", e = dir / "stderr.txt";
  r.status = std::system((cli() + " " + args + " > " + o.string() + " 2> " + e.string()).c_str());
  r.out = slurp(o);
  r.err = slurp(e);
  return r;
}

}  // namespace hisparse::test

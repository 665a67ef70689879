// @brief Locating and running the plot scripts (see plot_script.h).
#include "sim/report/plot_script.h"

#include <cstdlib>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/scenario_loader.h"

namespace hisparse::sim {

namespace {

namespace fs = std::filesystem;

std::string find_script(const std::string& script, const std::string& command) {
  if (const char* env = std::getenv("HISPARSE_SCRIPTS_DIR")) {
    const fs::path p = fs::path(env) / script;
    if (fs::exists(p)) return p.string();
  }
  for (const auto& dir : scenario_dirs()) {
    const fs::path p = fs::path(dir).parent_path() / "scripts" / script;
    if (fs::exists(p)) return p.string();
  }
  const fs::path local = fs::path("scripts") / script;
  if (fs::exists(local)) return local.string();
  throw_error("{}: scripts/{} not found (set HISPARSE_SCRIPTS_DIR, or pass --no-plots)", command, script);
}

// Single quotes keep every byte of a path literal for /bin/sh; an embedded quote is closed, escaped, reopened.
std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

}  // namespace

void run_plot_script(const std::string& script, const std::string& out_dir, const std::string& command) {
  const std::string cmd =
      fmt::format("/usr/bin/python3 {} {}", shell_quote(find_script(script, command)), shell_quote(out_dir));
  // What this process printed so far goes out first: the script writes to the same stdout, unbuffered at its exit,
  // and would otherwise land before the command's own first lines when stdout is a file or a pipe.
  std::fflush(stdout);
  if (std::system(cmd.c_str()) != 0) throw_error("{}: plotting failed: {}", command, cmd);
}

}  // namespace hisparse::sim

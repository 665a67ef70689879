// @brief Locating and running the plot scripts (see plot_script.h).
#include "sim/report/plot_script.h"

#include <sys/wait.h>

#include <cstdlib>
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
  const int status = std::system(cmd.c_str());
  if (status == 0) return;
  // The script names the file and the cause on its own line of stderr (scripts/plot_output.py run_main); this line
  // says which step failed, what is already written and how to go on without the plots.
  const std::string how = status == -1                            ? "could not be started"
                          : WIFEXITED(status)                     ? fmt::format("exited with status {}", WEXITSTATUS(status))
                          : WIFSIGNALED(status)                   ? fmt::format("was killed by signal {}", WTERMSIG(status))
                                                                  : "failed";
  throw_error("{}: plotting into {} failed: {} {} (its message, if any, is on the line above); the data files are "
              "written, --no-plots skips the plots",
              command, out_dir, script, how);
}

}  // namespace hisparse::sim

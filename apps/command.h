// @brief The subcommand table of the `hisparse` CLI: one entry per file in apps/.
#pragma once

#include <string>
#include <vector>

namespace hisparse::apps {

/// A subcommand receives its own arguments (argv[0] is the subcommand name) and returns the exit code.
using CommandFn = int (*)(int argc, char** argv);

struct Command {
  const char* name;
  const char* summary;
  CommandFn run;
};

/// The explicit registration list (STYLE.md: no static self-registration). Defined in main.cpp.
const std::vector<Command>& commands();

// One declaration per subcommand file.
int run_info(int argc, char** argv);

}  // namespace hisparse::apps

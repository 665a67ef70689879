// @brief The command line as typed, quoted where a shell would need it: the provenance a written file carries must
// rerun as written (fit-miss-model, calibrate); the surface name those commands take.
#pragma once

#include <string>

namespace hisparse::apps {

/// "hisparse <command> <args…>"; argv[0] is replaced by `command`. `skip_flag` (e.g. "--note"), if not empty, is
/// left out with its value, in both the "--flag value" and "--flag=value" forms.
std::string quoted_command_line(const char* command, int argc, char** argv, const std::string& skip_flag = "");

/// Throws unless `name` (a miss surface's --name) is letters, digits, '-', '_' or '.', naming `command`.
void check_surface_name(const char* command, const std::string& name);

}  // namespace hisparse::apps

// @brief The command line as typed, quoted where a shell would need it: the provenance a written file carries must
// rerun as written (fit-miss-model, calibrate); the surface name those commands take; storing parsed flags with
// messages that name the flag, the value and the range a numeric flag takes; the parse every command shares.
#pragma once

#include <string>

#include <boost/program_options.hpp>

namespace hisparse::apps {

/// "hisparse <command> <args…>"; argv[0] is replaced by `command`. `skip_flag` (e.g. "--note"), if not empty, is
/// left out with its value, in both the "--flag value" and "--flag=value" forms.
std::string quoted_command_line(const char* command, int argc, char** argv, const std::string& skip_flag = "");

/// "hisparse <command> <args…>" joined by spaces and not quoted: the line the plan, advise and fidelity reports
/// print (argv[0] is replaced by `command`).
std::string typed_command_line(const char* command, int argc, char** argv);

/// Throws unless `name` (a miss surface's --name) is letters, digits, '-', '_' or '.', naming `command`.
void check_surface_name(const char* command, const std::string& name);

/// Every command's command-line parse (boost's, with `pos` for positional arguments when given), in SGLang's words
/// too: a flag SGLang spells otherwise is taken under its name here where it means the same (--kv-cache-dtype is
/// --kv-dtype; bench_serving's --max-concurrency is simulate's --concurrency), one that has no counterpart says where
/// its setting lives (--tp-size: the deployment YAML), and an unknown flag is answered with the nearest ones by edit
/// distance ("did you mean --concurrency?").
boost::program_options::parsed_options parse_args(
    int argc, char** argv, const boost::program_options::options_description& desc,
    const boost::program_options::positional_options_description* pos = nullptr);

/// Levenshtein distance between `a` and `b` (insertions, deletions and substitutions of one character).
size_t edit_distance(const std::string& a, const std::string& b);

/// boost::program_options::store, every command's: a value its flag's type cannot hold (boost: "the argument ('X')
/// for option '--f' is invalid") is rethrown as "--f 'X' is not <what the type takes, with its range>"; a value
/// given empty ("--out ''", "--seq-lens ''") is refused rather than read as the flag left out.
void store_flags(const boost::program_options::parsed_options& parsed, boost::program_options::variables_map& vm);

/// A command's flag parse: store_flags, then on --help print `desc` (the flags the help lists; `parsed` may hold
/// hidden or positional ones too) to stdout and return false, the command then returning 0; else po::notify and
/// true. Help comes first so that `--help` never fails on a required flag it is asking about; boost's errors are
/// rethrown as hisparse::Error with boost's message.
bool parse_flags(const boost::program_options::parsed_options& parsed,
                 const boost::program_options::options_description& desc, boost::program_options::variables_map& vm);

}  // namespace hisparse::apps

// @brief write_file_atomically (a whole text through core/io/atomic_output.h, so readers never see half a file) and
// the small deterministic text helpers every report writer shares.
#pragma once

#include <string>

namespace hisparse {

void write_file_atomically(const std::string& path, const std::string& contents);
/// Creates the output directory `dir` (and its parents) if missing; throws naming it (and `what`, the flag it came
/// from) when it exists and is not a directory or cannot be created.
void create_output_directory(const std::string& dir, const std::string& what = "--out");
/// Throws unless `output` and `input` name different files: the same path, a hard link or a symbolic link to it
/// (compared by device and inode where both exist, by canonical path otherwise), or `output` inside an `input`
/// directory (an .npy trace). "<output_flag> X is the <input_flag> input: writing it would overwrite what is read
/// (expected another path)". An empty path is never the same.
void refuse_output_over_input(const std::string& output, const std::string& output_flag, const std::string& input,
                              const std::string& input_flag);

/// JSON string literal of `s` (quotes and control characters escaped).
std::string json_quote(const std::string& s);
/// YAML double-quoted scalar of `s`: JSON's string escaping is valid YAML, so the same text as json_quote.
inline std::string yaml_quote(const std::string& s) { return json_quote(s); }
/// Fixed-point text of ns as µs with 3 decimals ("1234.567"), from integers only.
std::string ns_as_us(int64_t ns);

}  // namespace hisparse

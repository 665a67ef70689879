// @brief A command's first screen: each provenance line (miss model, cost model, prefill, ranks) folded to one short
// line, file paths shortened to their file names and the text cut at a word boundary, ending in "… (--verbose)";
// `--verbose` prints the line in full. The fold depends on the text alone, not on where the tree is checked out.
#pragma once

#include <string>

namespace hisparse::sim {

/// Bytes a folded line keeps at most before its "… (--verbose)" tail.
inline constexpr size_t kFoldWidth = 150;

/// `line` unchanged when `verbose`, else folded as above (a line already short enough keeps its text, paths
/// shortened).
std::string fold_line(const std::string& line, bool verbose);

}  // namespace hisparse::sim

// @brief Reader of SGLang server logs for `hisparse calibrate --from-metrics` (docs/capture.md).
//
// Two kinds of lines are used; every other line is ignored (a server log has many):
//  * SGLang's decode log line, "... Decode batch. #running-req: R, #token: T, ..." (T / R is the mean context
//    length n of the running requests; the T tokens of shared prefixes count once, so this is an estimate);
//  * a HiSparse swap-in statistics line (SGLang prints none of its own today; this is the format this project
//    defines and docs/capture.md shows how to emit it):
//      "... HiSparse swap-in: hits=H, misses=M[, h2d_bytes=B][, seq_len=N][, device_buffer_size=H][, top_k=K]"
//    with counts since the previous such line of the same log (per-interval deltas, as SGLang's decode line
//    reports throughput per interval), fields separated by ',' and/or blanks, in any order.
// A leading "[YYYY-MM-DD HH:MM:SS" (SGLang's log prefix, any suffix up to ']') gives the time of a line (UTC).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hisparse::sim::counters {

struct LogInterval {
  std::string file;
  int64_t line = 0;
  std::optional<double> time_s;         // from the line's timestamp prefix
  double hits = 0, misses = 0;
  std::optional<double> h2d_bytes;
  std::optional<double> seq_len;        // from the stats line, else the mean of the decode lines since the last one
  int64_t decode_lines = 0;             // decode lines averaged into seq_len (0 when the stats line gave it)
  std::optional<int32_t> H, K;
};

/// Marker of a stats line (also how `calibrate --from-metrics` tells a log from a Prometheus file).
inline constexpr const char* kHiSparseLogMarker = "HiSparse swap-in:";
inline constexpr const char* kDecodeLogMarker = "Decode batch.";

/// Throws hisparse::Error "file:line: ..." for a stats or decode line that does not follow the format.
std::vector<LogInterval> parse_sglang_log(const std::string& text, const std::string& file);

/// Whether `text` looks like a log (holds a stats or decode line) rather than a Prometheus exposition.
bool looks_like_sglang_log(const std::string& text);

}  // namespace hisparse::sim::counters

// @brief ChromeTrace: collects spans of a chosen time window and writes them as Chrome-trace JSON (Perfetto).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/sim_time.h"

namespace hisparse::sim {

class ChromeTrace {
 public:
  /// Spans overlapping [begin, end) are kept (clipped); end <= begin disables recording.
  ChromeTrace(SimTime begin = 0, SimTime end = 0) : begin_(begin), end_(end) {}

  bool enabled() const { return end_ > begin_; }
  bool overlaps(SimTime a, SimTime b) const { return enabled() && b > begin_ && a < end_ && b >= a; }
  /// A complete ("X") event; `name` and `category` are copied. Zero-length spans are dropped.
  void span(const std::string& name, const char* category, int pid, int tid, SimTime start, SimTime end);
  void name_process(int pid, const std::string& name);
  void name_thread(int pid, int tid, const std::string& name);

  size_t size() const { return spans_.size(); }
  /// Writes {"traceEvents": [...], "displayTimeUnit": "ns"} to `path` (temp file + rename). Timestamps are µs
  /// with 3 decimals, printed from integers so the bytes never depend on float formatting.
  void write(const std::string& path) const;

 private:
  struct Span {
    std::string name;
    const char* category;
    int pid, tid;
    SimTime start, end;
  };
  SimTime begin_, end_;
  std::vector<Span> spans_;
  std::vector<std::pair<int, std::string>> processes_;
  std::vector<std::pair<std::pair<int, int>, std::string>> threads_;
};

}  // namespace hisparse::sim

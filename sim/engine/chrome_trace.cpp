// @brief Chrome-trace JSON writer (the "traceEvents" array format that Perfetto and chrome://tracing open).
#include "sim/engine/chrome_trace.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/io/output_file.h"

namespace hisparse::sim {

void ChromeTrace::span(const std::string& name, const char* category, int pid, int tid, SimTime start, SimTime end) {
  if (!overlaps(start, end) || end <= start) return;
  spans_.push_back(Span{name, category, pid, tid, std::max(start, begin_), std::min(end, end_)});
}

void ChromeTrace::name_process(int pid, const std::string& name) { processes_.emplace_back(pid, name); }
void ChromeTrace::name_thread(int pid, int tid, const std::string& name) { threads_.push_back({{pid, tid}, name}); }

void ChromeTrace::write(const std::string& path) const {
  using Layout = JsonWriter::Layout;
  // One event per line, unindented; timestamps in microseconds with the nanoseconds kept as decimals (ns_as_us).
  JsonWriter j(/*indent=*/0);
  j.begin_object(Layout::kInline).member("displayTimeUnit", "ns").key("traceEvents").begin_array();
  for (const auto& [pid, name] : processes_) {
    j.begin_object(Layout::kInline).member("ph", "M").member("name", "process_name").member("pid", pid);
    j.key("args").begin_object(Layout::kInline).member("name", name).end_object().end_object();
  }
  for (const auto& [ids, name] : threads_) {
    j.begin_object(Layout::kInline).member("ph", "M").member("name", "thread_name").member("pid", ids.first);
    j.member("tid", ids.second).key("args").begin_object(Layout::kInline).member("name", name).end_object().end_object();
  }
  for (const auto& s : spans_) {
    j.begin_object(Layout::kInline).member("ph", "X").member("name", s.name).member("cat", s.category);
    j.member("pid", s.pid).member("tid", s.tid).key("ts").raw(ns_as_us(s.start));
    j.key("dur").raw(ns_as_us(s.end - s.start)).end_object();
  }
  j.end_array().end_object();
  write_file_atomically(path, j.str() + "\n");
}

}  // namespace hisparse::sim

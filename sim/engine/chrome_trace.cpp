// @brief Chrome-trace JSON writer (the "traceEvents" array format that Perfetto and chrome://tracing open).
#include "sim/engine/chrome_trace.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/io/output_file.h"

namespace hisparse::sim {

void ChromeTrace::span(const std::string& name, const char* category, int pid, int tid, SimTime start, SimTime end) {
  if (!overlaps(start, end) || end <= start) return;
  spans_.push_back(Span{name, category, pid, tid, std::max(start, begin_), std::min(end, end_)});
}

void ChromeTrace::name_process(int pid, const std::string& name) { processes_.emplace_back(pid, name); }
void ChromeTrace::name_thread(int pid, int tid, const std::string& name) { threads_.push_back({{pid, tid}, name}); }

void ChromeTrace::write(const std::string& path) const {
  std::string o = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  auto sep = [&] { o += first ? "" : ",\n"; first = false; };
  for (const auto& [pid, name] : processes_) {
    sep();
    o += fmt::format("{{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": {}, \"args\": {{\"name\": {}}}}}", pid, json_quote(name));
  }
  for (const auto& [ids, name] : threads_) {
    sep();
    o += fmt::format("{{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": {}}}}}",
                     ids.first, ids.second, json_quote(name));
  }
  for (const auto& s : spans_) {
    sep();
    o += fmt::format("{{\"ph\": \"X\", \"name\": {}, \"cat\": \"{}\", \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}}}",
                     json_quote(s.name), s.category, s.pid, s.tid, ns_as_us(s.start), ns_as_us(s.end - s.start));
  }
  o += "\n]}\n";
  write_file_atomically(path, o);
}

}  // namespace hisparse::sim

// @brief Traces held in numpy arrays: a TraceSource over them (what the replay engine reads), the readers' checks,
// writing them with the project's writers, and reading any trace whole into arrays.
#include "python/bindings/array_trace.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/error.h"
#include "traces/step_validation.h"
#include "traces/trace_limits.h"
#include "traces/trace_writer.h"

namespace hisparse::python {

namespace {

/// The name arrays go by in messages and in replay.json's "source".
constexpr const char* kArraySource = "topk arrays";

traces::TraceMeta meta_of(const ArrayTrace& t) {
  traces::TraceMeta m;
  m.layers = t.layers;
  m.top_k = t.top_k > 0 ? t.top_k : t.width;
  m.initial_state = traces::parse_initial_state(t.initial_state, "initial_state");
  m.source = kArraySource;
  return m;
}

}  // namespace

ArrayTraceSource::ArrayTraceSource(const ArrayTrace& trace) : trace_(trace), meta_(meta_of(trace)) {}

bool ArrayTraceSource::next(traces::StepRecord& out) {
  while (request_ < trace_.requests.size() && step_ >= trace_.requests[request_].steps) {
    ++request_;
    step_ = 0;
  }
  if (request_ >= trace_.requests.size()) return false;
  const ArrayRequest& r = trace_.requests[request_];
  const size_t entries = static_cast<size_t>(trace_.layers) * static_cast<size_t>(trace_.width);
  out.request_id = r.id;
  out.step = step_;
  out.seq_len = r.seq_lens[step_];
  out.positions.assign(r.topk + static_cast<size_t>(step_) * entries, r.topk + static_cast<size_t>(step_ + 1) * entries);
  // A narrower --top-k packs each list's valid entries, as every reader does (traces/step_validation.h).
  if (meta_.top_k != trace_.width)
    traces::refit_width(out.positions, trace_.layers, trace_.width, meta_.top_k, meta_.source, r.id, step_);
  ++step_;
  return true;
}

std::vector<int64_t> ArrayTraceSource::request_ids() {
  std::vector<int64_t> ids;
  for (const auto& r : trace_.requests) ids.push_back(r.id);
  return ids;
}

void ArrayTraceSource::seek_request(int64_t request_id) {
  for (size_t i = 0; i < trace_.requests.size(); ++i) {
    if (trace_.requests[i].id == request_id) {
      request_ = i;
      step_ = 0;
      return;
    }
  }
  throw_error("{}: no request {}", meta_.source, request_id);
}

void check_array_trace(const ArrayTrace& trace) {
  try {
    if (trace.layers < 1 || trace.layers > traces::kMaxLayers)
      throw_error("{}: {} layers (expected 1..{})", kArraySource, trace.layers, traces::kMaxLayers);
    if (trace.width < 1 || trace.width > traces::kMaxTopK)
      throw_error("{}: lists of width {} (expected 1..{})", kArraySource, trace.width, traces::kMaxTopK);
    if (static_cast<int64_t>(trace.layers) * trace.width > traces::kMaxStepEntries)
      throw_error("{}: layers x K = {} entries per step (at most {})", kArraySource,
                  static_cast<int64_t>(trace.layers) * trace.width, traces::kMaxStepEntries);
    if (trace.top_k < 0 || trace.top_k > traces::kMaxTopK)
      throw_error("top_k {} (expected 1..{})", trace.top_k, traces::kMaxTopK);
    std::vector<int64_t> ids;
    for (const auto& r : trace.requests) ids.push_back(r.id);
    std::sort(ids.begin(), ids.end());
    if (const auto dup = std::adjacent_find(ids.begin(), ids.end()); dup != ids.end())
      throw_error("request_ids: request {} appears twice", *dup);
    ArrayTraceSource source(trace);
    traces::StepRecord rec;
    std::vector<int32_t> scratch;
    while (source.next(rec)) traces::validate_step(source.meta(), rec, scratch);
  } catch (const Error& e) {
    throw std::invalid_argument(e.what());
  }
}

void write_array_trace(const std::string& path, const std::string& format, const ArrayTrace& trace,
                       int32_t topk_dtype_bytes, int32_t seq_lens_dtype_bytes, int32_t zstd_level) {
  check_array_trace(trace);
  traces::TraceMeta meta = meta_of(trace);
  meta.source = path;
  meta.topk_dtype_bytes = topk_dtype_bytes;
  meta.seq_lens_dtype_bytes = seq_lens_dtype_bytes;
  traces::TraceWriteOptions options;
  options.zstd_level = zstd_level;
  ArrayTraceSource source(trace);
  auto writer = traces::make_trace_writer(path, traces::parse_trace_format(format), meta, options);
  traces::copy_trace(source, *writer);
}

LoadedTrace read_trace(const std::string& path, int32_t top_k, const std::string& initial_state, bool meta_only) {
  traces::TraceOpenOptions options;
  if (top_k > 0) options.top_k = top_k;
  if (!initial_state.empty()) options.initial_state = traces::parse_initial_state(initial_state, "initial_state");
  const traces::TraceFormat format = traces::detect_trace_format(path);
  auto source = traces::open_trace(path, options);
  const traces::TraceMeta& m = source->meta();
  LoadedTrace out;
  out.layers = m.layers;
  out.top_k = m.top_k;
  out.initial_state = traces::to_string(m.initial_state);
  out.source = m.source;
  out.format = format == traces::TraceFormat::kNative ? "native" : format == traces::TraceFormat::kNpy ? "npy" : "jsonl";
  out.topk_dtype_bytes = m.topk_dtype_bytes;
  out.seq_lens_dtype_bytes = m.seq_lens_dtype_bytes;
  out.request_ids = source->request_ids();
  if (meta_only) return out;
  traces::StepRecord rec;
  while (source->next(rec)) {
    if (out.requests.empty() || out.requests.back().id != rec.request_id) {
      out.requests.emplace_back();
      out.requests.back().id = rec.request_id;
    }
    LoadedRequest& r = out.requests.back();
    if (rec.step != static_cast<int64_t>(r.seq_lens.size()))
      throw_error("{}: request {} step {} follows step {} (expected consecutive steps from 0)", m.source,
                  rec.request_id, rec.step, static_cast<int64_t>(r.seq_lens.size()) - 1);
    r.topk.insert(r.topk.end(), rec.positions.begin(), rec.positions.end());
    r.seq_lens.push_back(rec.seq_len);
  }
  return out;
}

}  // namespace hisparse::python

// @brief JSON-lines trace reader: one indexing pass (offsets only), then one step's lines parsed per next().
#include <algorithm>
#include <fstream>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.h"
#include "traces/json_value.h"
#include "traces/jsonl_trace.h"
#include "traces/step_validation.h"
#include "traces/trace_limits.h"

namespace hisparse::traces {
namespace {

constexpr size_t kMaxLineBytes = size_t{64} << 20;  // a K = 2048 record is ~15 kB; 64 MB is far beyond real

/// One record line: where it is and what it is about.
struct LineRef {
  uint64_t offset;
  int64_t step_idx;
  int32_t layer;
  int32_t line_no;  // 1-based, for messages (saturates)
};

/// The fields of one record, checked.
struct Record {
  int64_t request_id = 0, step_idx = 0;
  int32_t layer = 0, seq_len = 0;
  const JsonValue* positions = nullptr;
};

int64_t int_field(const JsonValue& obj, const char* key, int64_t lo, int64_t hi, const std::string& what) {
  const JsonValue* v = obj.find(key);
  if (!v) throw_error("{}: missing \"{}\"", what, key);
  if (!v->is_integer || v->integer < lo || v->integer > hi) {
    throw_error("{}: \"{}\" must be an integer in {}..{}", what, key, lo, hi);
  }
  return v->integer;
}

Record parse_record(const JsonValue& v, const std::string& what) {
  if (v.kind != JsonValue::Kind::kObject) throw_error("{}: expected a JSON object", what);
  Record r;
  r.request_id = int_field(v, "request_id", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), what);
  r.step_idx = int_field(v, "step_idx", 0, std::numeric_limits<int64_t>::max(), what);
  r.layer = static_cast<int32_t>(int_field(v, "layer_id", 0, kMaxLayers - 1, what));
  r.seq_len = static_cast<int32_t>(int_field(v, "seq_len", 1, kMaxSeqLen, what));
  r.positions = v.find("selected_token_pos");
  if (!r.positions || r.positions->kind != JsonValue::Kind::kArray) {
    throw_error("{}: \"selected_token_pos\" must be an array", what);
  }
  if (r.positions->items.size() > static_cast<size_t>(kMaxTopK)) {
    throw_error("{}: {} selected positions (limit {})", what, r.positions->items.size(), kMaxTopK);
  }
  return r;
}

class JsonlTraceSource final : public TraceSource {
 public:
  JsonlTraceSource(std::unique_ptr<std::istream> in, const std::string& path, const TraceOpenOptions& options)
      : path_(path), in_(std::move(in)) {
    meta_.source = path;
    index_file();
    meta_.top_k = options.top_k ? *options.top_k : std::max<int32_t>(max_list_, 1);
    if (meta_.top_k < 1 || meta_.top_k > kMaxTopK || int64_t{meta_.top_k} * meta_.layers > kMaxStepEntries) {
      throw_error("{}: top_k {} x layers {} out of range", path, meta_.top_k, meta_.layers);
    }
    meta_.initial_state = options.initial_state.value_or(InitialState::kIdentity);
  }

  const TraceMeta& meta() const override { return meta_; }
  std::vector<int64_t> request_ids() override { return ids_; }

  void seek_request(int64_t request_id) override {
    const auto it = std::find(ids_.begin(), ids_.end(), request_id);
    if (it == ids_.end()) throw_error("{}: no request {} in this trace", path_, request_id);
    cur_ = static_cast<size_t>(it - ids_.begin());
    step_ = 0;
  }

  bool next(StepRecord& out) override {
    while (cur_ < ids_.size()) {
      const std::vector<LineRef>& lines = lines_[cur_];
      const size_t layers = static_cast<size_t>(meta_.layers);
      if (step_ * layers < lines.size()) {
        read_step(lines.data() + step_ * layers, out);
        ++step_;
        return true;
      }
      ++cur_;
      step_ = 0;
    }
    return false;
  }

 private:
  /// Reads the line at the stream's position into line_; false at end of file.
  bool read_line() {
    line_.clear();
    char c;
    while (in_->get(c)) {
      if (c == '\n') return true;
      if (line_.size() >= kMaxLineBytes) throw_error("{}: a line longer than {} bytes", path_, kMaxLineBytes);
      line_.push_back(c);
    }
    return !line_.empty();
  }

  static bool blank(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
  }

  void index_file() {
    std::unordered_map<int64_t, size_t> slot;
    uint64_t offset = 0;
    int64_t line_no = 0;
    int32_t max_layer = -1;
    for (;;) {
      in_->clear();
      in_->seekg(static_cast<std::streamoff>(offset));
      if (!read_line()) break;
      ++line_no;
      const uint64_t here = offset;
      offset += line_.size() + 1;
      if (blank(line_)) continue;
      const std::string what = fmt::format("{}:{}", path_, line_no);
      const JsonValue v = parse_json(line_, what);
      const Record r = parse_record(v, what);
      auto [it, fresh] = slot.emplace(r.request_id, ids_.size());
      if (fresh) {
        ids_.push_back(r.request_id);
        lines_.emplace_back();
      }
      lines_[it->second].push_back(
          {here, r.step_idx, r.layer, static_cast<int32_t>(std::min<int64_t>(line_no, std::numeric_limits<int32_t>::max()))});
      max_layer = std::max(max_layer, r.layer);
      max_list_ = std::max(max_list_, static_cast<int32_t>(r.positions->items.size()));
    }
    if (ids_.empty()) throw_error("{}: no records (expected JSON lines with request_id, step_idx, ...)", path_);
    meta_.layers = max_layer + 1;
    // Every step of every request must have each layer exactly once.
    for (size_t q = 0; q < ids_.size(); ++q) {
      auto& lines = lines_[q];
      std::sort(lines.begin(), lines.end(), [](const LineRef& a, const LineRef& b) {
        return a.step_idx != b.step_idx ? a.step_idx < b.step_idx : a.layer < b.layer;
      });
      for (size_t i = 0; i < lines.size(); ++i) {
        const LineRef& e = lines[i];
        const auto want_layer = static_cast<int32_t>(i % static_cast<size_t>(meta_.layers));
        const LineRef& first = lines[i - static_cast<size_t>(want_layer)];
        if (want_layer == 0 && i > 0 && e.step_idx == lines[i - 1].step_idx) {
          throw_error("{}:{}: request {}, step_idx {}, layer {}: a second record for this layer", path_, e.line_no,
                      ids_[q], e.step_idx, lines[i - 1].layer);
        }
        if (e.layer != want_layer || e.step_idx != first.step_idx) {
          const int32_t missing = e.step_idx == first.step_idx && e.layer > want_layer ? want_layer : -1;
          if (missing >= 0) {
            throw_error("{}: request {}, step_idx {}: no record for layer {} (the trace has {} layers)", path_, ids_[q],
                        first.step_idx, missing, meta_.layers);
          }
          if (e.step_idx == first.step_idx) {
            throw_error("{}:{}: request {}, step_idx {}, layer {}: a second record for this layer", path_, e.line_no,
                        ids_[q], e.step_idx, e.layer);
          }
          throw_error("{}: request {}, step_idx {}: records for {} of {} layers", path_, ids_[q], first.step_idx,
                      want_layer, meta_.layers);
        }
      }
      if (lines.size() % static_cast<size_t>(meta_.layers) != 0) {
        const LineRef& last = lines[lines.size() - lines.size() % static_cast<size_t>(meta_.layers)];
        throw_error("{}: request {}, step_idx {}: records for {} of {} layers", path_, ids_[q], last.step_idx,
                    lines.size() % static_cast<size_t>(meta_.layers), meta_.layers);
      }
    }
  }

  void read_step(const LineRef* refs, StepRecord& out) {
    const int64_t rid = ids_[cur_];
    out.request_id = rid;
    out.step = static_cast<int64_t>(step_);
    out.positions.assign(static_cast<size_t>(meta_.layers) * meta_.top_k, -1);
    for (int32_t l = 0; l < meta_.layers; ++l) {
      const LineRef& ref = refs[l];
      in_->clear();
      in_->seekg(static_cast<std::streamoff>(ref.offset));
      if (!read_line()) throw_error("{}: line {} vanished (file changed while reading?)", path_, ref.line_no);
      const std::string what = fmt::format("{}:{}: request {}, step_idx {}, layer {}", path_, ref.line_no, rid,
                                           ref.step_idx, l);
      const JsonValue v = parse_json(line_, what);
      const Record r = parse_record(v, what);
      if (l == 0) {
        out.seq_len = r.seq_len;
      } else if (r.seq_len != out.seq_len) {
        throw_error("{}: seq_len {} but layer 0 of this step says {}", what, r.seq_len, out.seq_len);
      }
      const auto& items = r.positions->items;
      int32_t* row = out.positions.data() + static_cast<size_t>(l) * meta_.top_k;
      const bool compact = items.size() > static_cast<size_t>(meta_.top_k);
      int32_t n = 0;
      for (size_t i = 0; i < items.size(); ++i) {
        const JsonValue& p = items[i];
        if (!p.is_integer || p.integer < -1 || p.integer > std::numeric_limits<int32_t>::max()) {
          throw_error("{}: selected_token_pos[{}] is not a position (expected an integer >= -1)", what, i);
        }
        if (compact && p.integer == -1) continue;
        if (n == meta_.top_k) {
          throw_error("{}: more than top_k = {} valid positions", where(path_, rid, ref.step_idx, l), meta_.top_k);
        }
        row[n++] = static_cast<int32_t>(p.integer);
      }
      validate_layer(row, meta_.top_k, meta_.top_k, out.seq_len, path_, rid, ref.step_idx, l, scratch_);
    }
  }

  std::string path_;
  TraceMeta meta_;
  std::unique_ptr<std::istream> in_;
  std::string line_;
  std::vector<int64_t> ids_;                  // in order of first appearance
  std::vector<std::vector<LineRef>> lines_;   // per request, sorted by (step_idx, layer)
  int32_t max_list_ = 0;
  size_t cur_ = 0, step_ = 0;
  std::vector<int32_t> scratch_;
};

}  // namespace

std::unique_ptr<TraceSource> open_jsonl_trace(const std::string& path, const TraceOpenOptions& options) {
  auto in = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*in) throw_error("{}: cannot open for reading", path);
  return std::make_unique<JsonlTraceSource>(std::move(in), path, options);
}

std::unique_ptr<TraceSource> open_jsonl_trace(std::unique_ptr<std::istream> in, const std::string& name,
                                              const TraceOpenOptions& options) {
  return std::make_unique<JsonlTraceSource>(std::move(in), name, options);
}

}  // namespace hisparse::traces

// @brief Streaming reader of `.npy` directory traces: one step of one request in memory at a time.
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "traces/json_value.h"
#include "traces/memory_stream.h"
#include "traces/npy_array.h"
#include "traces/npy_trace.h"
#include "traces/step_validation.h"
#include "traces/trace_limits.h"

namespace hisparse::traces {
namespace {

namespace fs = std::filesystem;

struct RequestFiles {
  int64_t id = 0;
  std::string topk;      // name of req_<id>_topk.npy
  std::string seq_lens;  // name of req_<id>_seq_lens.npy
};

/// The id in "req_<id>_topk.npy", or false if the name does not have that form.
bool parse_request_name(const std::string& name, int64_t& id) {
  static const std::string kPrefix = "req_", kSuffix = "_topk.npy";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return false;
  }
  const char* b = name.data() + kPrefix.size();
  const char* e = name.data() + name.size() - kSuffix.size();
  auto r = std::from_chars(b, e, id);
  return r.ec == std::errc() && r.ptr == e;
}

class DiskFiles final : public NpyFiles {
 public:
  explicit DiskFiles(std::string dir) : dir_(std::move(dir)) {}
  std::vector<std::string> names() override {
    std::error_code ec;
    fs::directory_iterator it(dir_, ec);
    if (ec) throw_error("{}: cannot list directory: {}", dir_, ec.message());
    std::vector<std::string> out;
    for (const auto& entry : it) out.push_back(entry.path().filename().string());
    return out;
  }
  bool exists(const std::string& name) override { return fs::exists(path(name)); }
  uint64_t size(const std::string& name) override {
    std::error_code ec;
    const auto size = fs::file_size(path(name), ec);
    if (ec) throw_error("{}: cannot stat: {}", path(name), ec.message());
    return size;
  }
  std::unique_ptr<std::istream> open(const std::string& name) override {
    auto in = std::make_unique<std::ifstream>(path(name), std::ios::binary);
    if (!*in) throw_error("{}: cannot open for reading", path(name));
    return in;
  }
  std::string path(const std::string& name) const override { return (fs::path(dir_) / name).string(); }

 private:
  std::string dir_;
};

class MemoryFiles final : public NpyFiles {
 public:
  MemoryFiles(std::string dir, std::map<std::string, std::string_view> files)
      : dir_(std::move(dir)), files_(std::move(files)) {}
  std::vector<std::string> names() override {
    std::vector<std::string> out;
    for (const auto& f : files_) out.push_back(f.first);
    return out;
  }
  bool exists(const std::string& name) override { return files_.count(name) != 0; }
  uint64_t size(const std::string& name) override { return bytes(name).size(); }
  std::unique_ptr<std::istream> open(const std::string& name) override {
    const std::string_view b = bytes(name);
    return std::make_unique<MemoryInputStream>(b.data(), b.size());
  }
  std::string path(const std::string& name) const override { return dir_ + "/" + name; }

 private:
  std::string_view bytes(const std::string& name) const {
    const auto it = files_.find(name);
    if (it == files_.end()) throw_error("{}: cannot open for reading", path(name));
    return it->second;
  }
  std::string dir_;
  std::map<std::string, std::string_view> files_;
};

constexpr bool kLittleEndian = [] {
  // C++17 has no std::endian: every platform this builds on (x86-64, aarch64) is little-endian; the GCC/Clang macro
  // says so at compile time.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return true;
#else
  return false;
#endif
}();

int64_t read_element(const unsigned char* p, int32_t itemsize) {
  uint64_t v = 0;
  for (int32_t i = 0; i < itemsize; ++i) v |= uint64_t{p[i]} << (8 * i);
  if (itemsize == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

class NpyTraceSource final : public TraceSource {
 public:
  NpyTraceSource(std::unique_ptr<NpyFiles> files, const std::string& dir, const TraceOpenOptions& options)
      : dir_(dir), files_(std::move(files)) {
    meta_.source = dir;
    std::map<int64_t, RequestFiles> by_id;
    for (const std::string& name : files_->names()) {
      int64_t id = 0;
      if (!parse_request_name(name, id)) continue;
      const std::string stem = name.substr(0, name.size() - std::string("_topk.npy").size());
      RequestFiles f{id, name, stem + "_seq_lens.npy"};
      if (!by_id.emplace(id, f).second) {
        throw_error("{}: two files name request {} ({} and {})", dir, id, files_->path(by_id[id].topk),
                    files_->path(f.topk));
      }
      if (!files_->exists(f.seq_lens)) {
        throw_error("{}: missing {} (the seq_len of each step)", dir, files_->path(f.seq_lens));
      }
    }
    if (by_id.empty()) throw_error("{}: no req_<id>_topk.npy files (not an .npy trace directory)", dir);
    for (auto& [id, f] : by_id) requests_.push_back(f);

    std::optional<InitialState> declared_state;
    std::optional<int32_t> declared_top_k;
    read_meta_json(declared_state, declared_top_k);

    // The first request fixes layers and width; the others must agree (checked as they are reached).
    const std::string first_topk = files_->path(requests_[0].topk);
    const NpyHeader h = read_npy_header(*files_->open(requests_[0].topk), first_topk, files_->size(requests_[0].topk));
    check_topk_shape(h, first_topk);
    if (h.shape[1] < 1 || h.shape[1] > kMaxLayers || h.shape[2] < 1 || h.shape[2] > kMaxTopK ||
        h.shape[1] * h.shape[2] > kMaxStepEntries) {
      throw_error("{}: shape [{}, {}, {}]: layers must be 1..{} and K 1..{}", first_topk, h.shape[0], h.shape[1],
                  h.shape[2], kMaxLayers, kMaxTopK);
    }
    meta_.layers = static_cast<int32_t>(h.shape[1]);
    width_ = static_cast<int32_t>(h.shape[2]);
    meta_.topk_dtype_bytes = h.itemsize;
    const std::string& first_seq_lens = requests_[0].seq_lens;
    meta_.seq_lens_dtype_bytes =
        read_npy_header(*files_->open(first_seq_lens), files_->path(first_seq_lens), files_->size(first_seq_lens)).itemsize;
    meta_.top_k = options.top_k ? *options.top_k : declared_top_k ? *declared_top_k : width_;
    if (meta_.top_k < 1 || meta_.top_k > kMaxTopK || int64_t{meta_.top_k} * meta_.layers > kMaxStepEntries) {
      throw_error("{}: top_k {} out of range 1..{}", dir, meta_.top_k, kMaxTopK);
    }
    meta_.initial_state = options.initial_state ? *options.initial_state
                                                : declared_state.value_or(InitialState::kIdentity);
  }

  const TraceMeta& meta() const override { return meta_; }

  std::vector<int64_t> request_ids() override {
    std::vector<int64_t> ids;
    for (const auto& r : requests_) ids.push_back(r.id);
    return ids;
  }

  void seek_request(int64_t request_id) override {
    for (size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i].id == request_id) {
        cur_ = i;
        opened_ = false;
        return;
      }
    }
    throw_error("{}: no request {} in this trace", dir_, request_id);
  }

  bool next(StepRecord& out) override {
    while (cur_ < requests_.size()) {
      if (!opened_) open_request();
      if (step_ < steps_) {
        read_step(out);
        ++step_;
        return true;
      }
      ++cur_;
      opened_ = false;
    }
    return false;
  }

 private:
  void read_meta_json(std::optional<InitialState>& state, std::optional<int32_t>& top_k) {
    if (!files_->exists("meta.json")) return;
    const std::string path = files_->path("meta.json");
    const uint64_t size = files_->size("meta.json");
    if (size > (1u << 20)) throw_error("{}: {} bytes, too large for a meta.json", path, size);
    std::string text(size, '\0');
    files_->open("meta.json")->read(text.data(), static_cast<std::streamsize>(size));
    const JsonValue v = parse_json(text, path);
    if (v.kind != JsonValue::Kind::kObject) throw_error("{}: expected a JSON object", path);
    if (const JsonValue* s = v.find("initial_state")) {
      if (s->kind != JsonValue::Kind::kString) throw_error("{}: initial_state must be a string", path);
      state = parse_initial_state(s->text, path + ": initial_state");
    }
    if (const JsonValue* k = v.find("top_k")) {
      if (!k->is_integer || k->integer < 1 || k->integer > kMaxTopK) {
        throw_error("{}: top_k must be an integer in 1..{}", path, kMaxTopK);
      }
      top_k = static_cast<int32_t>(k->integer);
    }
  }

  void check_topk_shape(const NpyHeader& h, const std::string& path) const {
    if (h.shape.size() != 3) {
      throw_error("{}: {}-dimensional array, expected [steps, layers, K]", path, h.shape.size());
    }
  }

  void open_request() {
    const RequestFiles& r = requests_[cur_];
    topk_path_ = files_->path(r.topk);
    const std::string seq_lens_path = files_->path(r.seq_lens);
    topk_ = files_->open(r.topk);
    topk_header_ = read_npy_header(*topk_, topk_path_, files_->size(r.topk));
    check_topk_shape(topk_header_, topk_path_);
    if (topk_header_.shape[1] != meta_.layers || topk_header_.shape[2] != width_) {
      throw_error("{}: shape [{}, {}, {}] but the trace has {} layers of width {} (from {})", topk_path_,
                  topk_header_.shape[0], topk_header_.shape[1], topk_header_.shape[2], meta_.layers, width_,
                  files_->path(requests_[0].topk));
    }
    const std::unique_ptr<std::istream> sl = files_->open(r.seq_lens);
    const NpyHeader sh = read_npy_header(*sl, seq_lens_path, files_->size(r.seq_lens));
    if (sh.shape.size() != 1 || sh.shape[0] != topk_header_.shape[0]) {
      throw_error("{}: shape ({}) but {} has {} steps (expected [steps])", seq_lens_path, fmt::join(sh.shape, ", "),
                  topk_path_, topk_header_.shape[0]);
    }
    // Bounded by the file size (read_npy_header checked the shape against it).
    std::vector<unsigned char> raw(static_cast<size_t>(sh.elements()) * sh.itemsize);
    if (!sl->read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()))) {
      throw_error("{}: truncated data", seq_lens_path);
    }
    seq_lens_.resize(static_cast<size_t>(sh.elements()));
    for (size_t s = 0; s < seq_lens_.size(); ++s) {
      const int64_t v = read_element(raw.data() + s * sh.itemsize, sh.itemsize);
      if (v < 1 || v > kMaxSeqLen) {
        throw_error("{}: seq_len {} out of range 1..{} (above any real context length)",
                    where(seq_lens_path, r.id, static_cast<int64_t>(s)), v, kMaxSeqLen);
      }
      seq_lens_[s] = static_cast<int32_t>(v);
    }
    steps_ = topk_header_.shape[0];
    step_ = 0;
    next_offset_ = topk_header_.data_offset;  // read_npy_header left the stream at the first element
    opened_ = true;
  }

  void read_step(StepRecord& out) {
    const RequestFiles& r = requests_[cur_];
    const size_t n = static_cast<size_t>(meta_.layers) * width_;
    const size_t bytes = n * topk_header_.itemsize;
    out.request_id = r.id;
    out.step = step_;
    out.seq_len = seq_lens_[static_cast<size_t>(step_)];
    out.positions.resize(n);
    // Steps are read in order: seek only when the stream is not already there (after a seek_request or an error).
    const uint64_t at = topk_header_.data_offset + static_cast<uint64_t>(step_) * bytes;
    if (next_offset_ != at) topk_->seekg(static_cast<std::streamoff>(at));
    next_offset_ = at + bytes;
    if (topk_header_.itemsize == 4 && kLittleEndian) {
      // int32 little-endian on a little-endian host: the file's bytes are the record's (every int32 is in range).
      if (!topk_->read(reinterpret_cast<char*>(out.positions.data()), static_cast<std::streamsize>(bytes))) {
        next_offset_ = ~uint64_t{0};
        throw_error("{}: truncated data (file changed while reading?)", where(topk_path_, r.id, step_));
      }
    } else {
      buf_.resize(bytes);
      if (!topk_->read(reinterpret_cast<char*>(buf_.data()), static_cast<std::streamsize>(bytes))) {
        next_offset_ = ~uint64_t{0};
        throw_error("{}: truncated data (file changed while reading?)", where(topk_path_, r.id, step_));
      }
      for (size_t i = 0; i < n; ++i) {
        const int64_t v = read_element(buf_.data() + i * topk_header_.itemsize, topk_header_.itemsize);
        if (v < -1 || v > std::numeric_limits<int32_t>::max()) {
          throw_error("{}: position {} at index {} out of range (expected -1 or 0..seq_len-1)",
                      where(topk_path_, r.id, step_, static_cast<int32_t>(i / width_)), v, i % width_);
        }
        out.positions[i] = static_cast<int32_t>(v);
      }
    }
    refit_width(out.positions, meta_.layers, width_, meta_.top_k, topk_path_, r.id, step_);
    validate_step_with_source(out, topk_path_);
  }

  void validate_step_with_source(const StepRecord& rec, const std::string& path) {
    if (rec.seq_len < 1) throw_error("{}: seq_len {} (expected >= 1)", where(path, rec.request_id, rec.step), rec.seq_len);
    for (int32_t l = 0; l < meta_.layers; ++l) {
      validate_layer(rec.layer(l, meta_.top_k), meta_.top_k, meta_.top_k, rec.seq_len, path, rec.request_id,
                     rec.step, l, scratch_);
    }
  }

  std::string dir_;
  std::unique_ptr<NpyFiles> files_;
  TraceMeta meta_;
  int32_t width_ = 0;  // K of the files (meta_.top_k may differ when overridden)
  std::vector<RequestFiles> requests_;
  size_t cur_ = 0;
  bool opened_ = false;
  std::unique_ptr<std::istream> topk_;
  std::string topk_path_;  // of the current request, for messages
  NpyHeader topk_header_;
  std::vector<int32_t> seq_lens_;  // [steps] of the current request
  int64_t steps_ = 0, step_ = 0;
  uint64_t next_offset_ = ~uint64_t{0};  // where the top-k stream stands (~0: unknown, seek)
  std::vector<unsigned char> buf_;
  std::vector<int32_t> scratch_;
};

}  // namespace

std::unique_ptr<TraceSource> open_npy_trace(const std::string& dir, const TraceOpenOptions& options) {
  return std::make_unique<NpyTraceSource>(std::make_unique<DiskFiles>(dir), dir, options);
}

std::unique_ptr<TraceSource> open_npy_trace_memory(const std::string& dir,
                                                   std::map<std::string, std::string_view> files,
                                                   const TraceOpenOptions& options) {
  return std::make_unique<NpyTraceSource>(std::make_unique<MemoryFiles>(dir, std::move(files)), dir, options);
}

}  // namespace hisparse::traces

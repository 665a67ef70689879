// @brief Writes `.npy` directory traces with numpy's exact header layout, into a temporary directory renamed at the end.
#include <filesystem>
#include <memory>
#include <set>

#include <unistd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/checked_file.h"
#include "core/io/interrupt_cleanup.h"
#include "traces/npy_array.h"
#include "traces/step_validation.h"
#include "traces/trace_limits.h"
#include "traces/trace_writer.h"

namespace hisparse::traces {
namespace {

namespace fs = std::filesystem;

void put_element(std::vector<char>& out, int64_t v, int32_t itemsize) {
  const auto u = static_cast<uint64_t>(v);
  for (int32_t i = 0; i < itemsize; ++i) out.push_back(static_cast<char>(u >> (8 * i)));
}

class NpyTraceWriter final : public TraceWriter {
 public:
  NpyTraceWriter(const std::string& dir, const TraceMeta& meta)
      : dir_(normalized(dir)),
        tmp_(dir_ + ".tmp." + std::to_string(::getpid())),
        cleanup_(tmp_, InterruptCleanup::Kind::kTree),  // before the directory exists: no window without cover
        meta_(meta) {
    if (meta.layers < 1 || meta.layers > kMaxLayers || meta.top_k < 1 || meta.top_k > kMaxTopK) {
      throw_error("{}: cannot write layers {} x top_k {}", dir, meta.layers, meta.top_k);
    }
    if ((meta.topk_dtype_bytes != 4 && meta.topk_dtype_bytes != 8) ||
        (meta.seq_lens_dtype_bytes != 4 && meta.seq_lens_dtype_bytes != 8)) {
      throw_error("{}: element sizes {} / {} (expected 4 or 8 bytes)", dir, meta.topk_dtype_bytes,
                  meta.seq_lens_dtype_bytes);
    }
    std::error_code ec;
    if (fs::exists(dir_, ec) && !(fs::is_directory(dir_, ec) && fs::is_empty(dir_, ec))) {
      throw_error("{}: exists and is not an empty directory (refusing to mix traces)", dir_);
    }
    meta_.source = dir_;
    fs::remove_all(tmp_, ec);
    fs::create_directories(tmp_, ec);
    if (ec) throw_error("{}: cannot create directory: {}", tmp_, ec.message());
  }

  ~NpyTraceWriter() override {
    if (!finished_) {
      topk_.reset();
      std::error_code ec;
      fs::remove_all(tmp_, ec);
    }
  }

  uint64_t bytes_written() const override { return bytes_ + (topk_ ? topk_->bytes_written() : 0); }

  void write(const StepRecord& rec) override {
    if (!open_ || rec.request_id != request_) {
      close_request();
      if (!seen_.insert(rec.request_id).second) {
        throw_error("{}: request {} appears twice (records must be grouped by request)", dir_, rec.request_id);
      }
      if (rec.step != 0) throw_error("{}: request {} starts at step {} (expected 0)", dir_, rec.request_id, rec.step);
      open_request(rec.request_id);
    } else if (rec.step != static_cast<int64_t>(seq_lens_.size())) {
      throw_error("{}: request {} step {} follows step {}", dir_, rec.request_id, rec.step, seq_lens_.size() - 1);
    }
    validate_step(meta_, rec, scratch_);
    buf_.clear();
    for (int32_t p : rec.positions) put_element(buf_, p, meta_.topk_dtype_bytes);
    topk_->write(buf_.data(), buf_.size());
    seq_lens_.push_back(rec.seq_len);
  }

  void finish() override {
    if (finished_) return;
    close_request();
    const std::string meta_json = fmt::format("{{\"initial_state\": \"{}\", \"top_k\": {}}}\n",
                                              to_string(meta_.initial_state), meta_.top_k);
    write_file(tmp_ + "/meta.json", meta_json.data(), meta_json.size());
    sync_parent_directory(tmp_ + "/meta.json");  // the entries of the directory about to be renamed
    std::error_code ec;
    if (fs::exists(dir_, ec)) fs::remove(dir_, ec);  // an empty directory (checked in the constructor)
    fs::rename(tmp_, dir_, ec);
    if (ec) throw_error("{}: cannot rename {} into place: {}", dir_, tmp_, ec.message());
    cleanup_.release();
    sync_parent_directory(dir_);
    finished_ = true;
  }

 private:
  static std::string normalized(const std::string& dir) {
    std::string d = fs::path(dir).lexically_normal().string();
    if (!d.empty() && d.back() == '/') d.pop_back();
    return d;
  }

  std::string file(int64_t id, const char* what) const { return fmt::format("{}/req_{}_{}.npy", tmp_, id, what); }

  // The files are inside the temporary directory, which finish() renames as a whole: each is written, synced and
  // closed with every step checked, not renamed itself.
  void write_file(const std::string& path, const char* data, size_t size) {
    bytes_ += size;
    CheckedFile out(path, CheckedFile::Mode::kCreate);
    out.write(data, size);
    out.sync();
    out.close();
  }

  std::vector<int64_t> shape(int64_t steps) const { return {steps, meta_.layers, meta_.top_k}; }

  void open_request(int64_t id) {
    request_ = id;
    open_ = true;
    seq_lens_.clear();
    topk_path_ = file(id, "topk");
    topk_ = std::make_unique<CheckedFile>(topk_path_, CheckedFile::Mode::kCreate);
    // numpy pads the first axis to 21 digits, so the final header has the same length as this placeholder.
    header_ = format_npy_header(meta_.topk_dtype_bytes, shape(0));
    topk_->write(header_.data(), header_.size());
  }

  void close_request() {
    if (!open_) return;
    const std::string h = format_npy_header(meta_.topk_dtype_bytes, shape(static_cast<int64_t>(seq_lens_.size())));
    if (h.size() != header_.size()) throw_error("{}: header length changed", topk_path_);
    topk_->write_at(0, h.data(), h.size());
    topk_->sync();
    topk_->close();
    bytes_ += topk_->bytes_written();
    topk_.reset();
    std::vector<char> sl;
    const std::string sh = format_npy_header(meta_.seq_lens_dtype_bytes, {static_cast<int64_t>(seq_lens_.size())});
    sl.assign(sh.begin(), sh.end());
    for (int32_t n : seq_lens_) put_element(sl, n, meta_.seq_lens_dtype_bytes);
    write_file(file(request_, "seq_lens"), sl.data(), sl.size());
    open_ = false;
  }

  std::string dir_, tmp_;
  InterruptCleanup cleanup_;  // removes the tmp_ tree if the process is interrupted before finish() renames it
  TraceMeta meta_;
  bool open_ = false, finished_ = false;
  int64_t request_ = 0;
  uint64_t bytes_ = 0;  // of the files closed so far
  std::string topk_path_, header_;
  std::unique_ptr<CheckedFile> topk_;  // the open request's req_<id>_topk.npy
  std::vector<int32_t> seq_lens_;  // [steps] of the open request
  std::set<int64_t> seen_;
  std::vector<char> buf_;
  std::vector<int32_t> scratch_;
};

}  // namespace

std::unique_ptr<TraceWriter> make_npy_writer(const std::string& dir, const TraceMeta& meta) {
  return std::make_unique<NpyTraceWriter>(dir, meta);
}

}  // namespace hisparse::traces

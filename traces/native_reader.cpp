// @brief Streaming reader of the native format: checks header, footer, index and every chunk's checksum.
#include <algorithm>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_set>

#include <zstd.h>

#include <fmt/format.h>

#include "core/error.h"
#include "traces/byte_io.h"
#include "traces/native_codec.h"
#include "traces/native_format.h"
#include "traces/native_trace.h"
#include "traces/step_validation.h"
#include "traces/trace_limits.h"

namespace hisparse::traces {
namespace {

#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
// A fuzzer cannot forge checksums or big records cheaply; let it reach the decoder and keep inputs small.
constexpr bool kCheckCrc = false;
constexpr int64_t kStepEntryLimit = int64_t{1} << 16;
#else
constexpr bool kCheckCrc = true;
constexpr int64_t kStepEntryLimit = kMaxStepEntries;
#endif

struct IndexEntry {
  int64_t request_id;
  uint64_t offset;
  uint64_t steps;
};

class NativeTraceSource final : public TraceSource {
 public:
  NativeTraceSource(std::unique_ptr<std::istream> in, uint64_t size, const std::string& path,
                    const TraceOpenOptions& options)
      : path_(path), in_(std::move(in)), file_size_(size) {
    meta_.source = path;
    dctx_.reset(ZSTD_createDCtx());
    if (!dctx_) throw_error("{}: zstd: out of memory", path);
    read_header();
    read_index();
    if (options.initial_state) meta_.initial_state = *options.initial_state;
    if (options.top_k) {
      if (*options.top_k < 1 || *options.top_k > kMaxTopK || int64_t{*options.top_k} * meta_.layers > kStepEntryLimit) {
        throw_error("{}: top_k override {} out of range 1..{}", path, *options.top_k, kMaxTopK);
      }
      meta_.top_k = *options.top_k;
    }
    coders_.resize(static_cast<size_t>(meta_.layers));
    if (!index_.empty()) position_at(0);
  }

  const TraceMeta& meta() const override { return meta_; }

  std::vector<int64_t> request_ids() override {
    std::vector<int64_t> ids;
    ids.reserve(index_.size());
    for (const auto& e : index_) ids.push_back(e.request_id);
    return ids;
  }

  void seek_request(int64_t request_id) override {
    for (size_t i = 0; i < index_.size(); ++i) {
      if (index_[i].request_id == request_id) {
        position_at(i);
        return;
      }
    }
    throw_error("{}: no request {} in this trace", path_, request_id);
  }

  bool next(StepRecord& out) override {
    if (req_ >= index_.size()) return false;
    const IndexEntry& e = index_[req_];
    if (step_ == e.steps) {
      // The chunk must have been used up exactly; the next request starts at its indexed offset.
      if (chunk_left_ != 0 || (reader_ && !reader_->done())) {
        throw_error("{}: request {}: chunk holds more data than its {} indexed steps", path_, e.request_id, e.steps);
      }
      if (req_ + 1 < index_.size() && pos_ != index_[req_ + 1].offset) {
        throw_error("{}: request {} ends at offset {} but the index puts request {} at {}", path_, e.request_id,
                    pos_, index_[req_ + 1].request_id, index_[req_ + 1].offset);
      }
      if (req_ + 1 >= index_.size()) {
        if (pos_ != index_offset_) throw_error("{}: {} unindexed bytes after the last request", path_, index_offset_ - pos_);
        req_ = index_.size();
        return false;
      }
      position_at(req_ + 1);
      return next(out);
    }
    if (chunk_left_ == 0) load_chunk();
    decode_step(out);
    --chunk_left_;
    ++step_;
    return true;
  }

 private:
  void read_at(uint64_t offset, uint8_t* dst, uint64_t n, const char* what) {
    if (offset > file_size_ || n > file_size_ - offset) {
      throw_error("{}: truncated file: {} at offset {} needs {} bytes, the file has {}", path_, what, offset, n,
                  file_size_);
    }
    in_->clear();
    in_->seekg(static_cast<std::streamoff>(offset));
    if (!in_->read(reinterpret_cast<char*>(dst), static_cast<std::streamsize>(n))) {
      throw_error("{}: read failed: {} at offset {}", path_, what, offset);
    }
  }

  void read_header() {
    uint8_t h[kFileHeaderBytes];
    if (file_size_ < 8) throw_error("{}: truncated file ({} bytes, no header)", path_, file_size_);
    read_at(0, h, 8, "magic");
    if (!std::equal(h, h + 8, reinterpret_cast<const uint8_t*>(kNativeMagic))) {
      throw_error("{}: bad magic (not a native hisparse trace)", path_);
    }
    read_at(0, h, kFileHeaderBytes, "file header");
    const uint32_t version = get_u32(h + 8);
    if (version != kNativeVersion) {
      throw_error("{}: format version {} not supported (this build reads version {})", path_, version, kNativeVersion);
    }
    if (kCheckCrc && crc32(h, kFileHeaderBytes - 4) != get_u32(h + kFileHeaderBytes - 4)) {
      throw_error("{}: file header checksum mismatch (corrupt file)", path_);
    }
    if (get_u32(h + 12) != kFileHeaderBytes) {
      throw_error("{}: header size {} (version 1 has {})", path_, get_u32(h + 12), kFileHeaderBytes);
    }
    const auto layers = static_cast<int32_t>(get_u32(h + 16));
    const auto top_k = static_cast<int32_t>(get_u32(h + 20));
    if (layers < 1 || layers > kMaxLayers || top_k < 1 || top_k > kMaxTopK ||
        int64_t{layers} * top_k > kStepEntryLimit) {
      throw_error("{}: header declares layers {} x top_k {} (limits 1..{} x 1..{}, {} entries per step)", path_,
                  layers, top_k, kMaxLayers, kMaxTopK, kStepEntryLimit);
    }
    const uint32_t flags = get_u32(h + 24);
    if (flags & ~kKnownFlags) throw_error("{}: unknown header flags {:#x}", path_, flags);
    meta_.layers = layers;
    meta_.top_k = top_k;
    file_top_k_ = top_k;
    meta_.initial_state = (flags & kFlagInitialEmpty) ? InitialState::kEmpty : InitialState::kIdentity;
    meta_.topk_dtype_bytes = (flags & kFlagTopkInt64) ? 8 : 4;
    meta_.seq_lens_dtype_bytes = (flags & kFlagSeqLensInt64) ? 8 : 4;
  }

  struct Chunk {
    uint8_t kind = 0;
    int64_t request_id = 0;
    uint64_t first_step = 0;
    uint32_t n_steps = 0;
  };

  /// Reads the chunk at pos_ into raw_ (decompressed, checksum verified) and advances pos_ past it.
  Chunk read_chunk(const char* expected) {
    uint8_t h[kChunkHeaderBytes];
    read_at(pos_, h, kChunkHeaderBytes, expected);
    if (!std::equal(h, h + 4, reinterpret_cast<const uint8_t*>(kChunkMagic))) {
      throw_error("{}: no chunk at offset {} ({} expected; corrupt file or index)", path_, pos_, expected);
    }
    Chunk c;
    c.kind = h[4];
    const uint8_t codec = h[5];
    c.request_id = static_cast<int64_t>(get_u64(h + 8));
    c.first_step = get_u64(h + 16);
    c.n_steps = get_u32(h + 24);
    const uint32_t raw_len = get_u32(h + 28);
    const uint32_t stored_len = get_u32(h + 32);
    if (raw_len > kMaxChunkRaw || (codec != kCodecNone && codec != kCodecZstd) ||
        (codec == kCodecNone && stored_len != raw_len)) {
      throw_error("{}: chunk at offset {}: codec {}, {} bytes decoded from {} stored (corrupt header)", path_, pos_,
                  codec, raw_len, stored_len);
    }
    stored_.resize(stored_len <= file_size_ ? stored_len : 0);
    read_at(pos_ + kChunkHeaderBytes, stored_.data(), stored_len, expected);
    if (kCheckCrc && crc32(stored_.data(), stored_.size(), crc32(h, kChunkHeaderBytes - 4)) != get_u32(h + 36)) {
      throw_error("{}: checksum mismatch in the chunk at offset {} (request {}, steps from {}): corrupt file", path_,
                  pos_, c.request_id, c.first_step);
    }
    if (codec == kCodecZstd) {
      const unsigned long long declared = ZSTD_getFrameContentSize(stored_.data(), stored_.size());
      if (declared != raw_len) {
        throw_error("{}: chunk at offset {}: zstd frame declares {} bytes, header {}", path_, pos_, declared, raw_len);
      }
      raw_.resize(raw_len);
      const size_t n = ZSTD_decompressDCtx(dctx_.get(), raw_.data(), raw_.size(), stored_.data(), stored_.size());
      if (ZSTD_isError(n) || n != raw_len) {
        throw_error("{}: chunk at offset {}: zstd: {}", path_, pos_,
                    ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short output");
      }
    } else {
      raw_.swap(stored_);
    }
    pos_ += kChunkHeaderBytes + stored_len;
    return c;
  }

  void read_index() {
    const uint64_t min_size = kFileHeaderBytes + kChunkHeaderBytes + kFooterBytes;
    if (file_size_ < min_size) {
      throw_error("{}: truncated file ({} bytes; a finished trace has at least {})", path_, file_size_, min_size);
    }
    uint8_t f[kFooterBytes];
    read_at(file_size_ - kFooterBytes, f, kFooterBytes, "footer");
    if (!std::equal(f + 8, f + 16, reinterpret_cast<const uint8_t*>(kEndMagic))) {
      throw_error("{}: truncated file: no end marker (the writer did not finish, or the file was cut)", path_);
    }
    index_offset_ = get_u64(f);
    if (index_offset_ < kFileHeaderBytes || index_offset_ > file_size_ - kFooterBytes - kChunkHeaderBytes) {
      throw_error("{}: index offset {} outside the file ({} bytes)", path_, index_offset_, file_size_);
    }
    pos_ = index_offset_;
    const Chunk c = read_chunk("request index");
    if (c.kind != kChunkIndex) throw_error("{}: chunk at offset {} is not the index", path_, index_offset_);
    if (pos_ != file_size_ - kFooterBytes) throw_error("{}: bytes between the index and the footer", path_);
    const std::string what = path_ + ": request index";
    ByteReader r(raw_.data(), raw_.size(), &what);
    // Each entry takes at least 3 bytes, which bounds the count before reserving.
    const uint64_t n = r.varint_max(raw_.size() / 3, "request count");
    index_.reserve(n);
    std::unordered_set<int64_t> ids;
    uint64_t last_offset = 0;
    for (uint64_t i = 0; i < n; ++i) {
      IndexEntry e{unzigzag(r.varint()), r.varint(), r.varint()};
      if (e.offset < kFileHeaderBytes || e.offset >= index_offset_ || (i > 0 && e.offset <= last_offset)) {
        throw_error("{}: request {} at offset {} (expected increasing offsets in {}..{})", what, e.request_id,
                    e.offset, kFileHeaderBytes, index_offset_);
      }
      if (e.steps == 0) throw_error("{}: request {} has no steps", what, e.request_id);
      if (!ids.insert(e.request_id).second) throw_error("{}: request {} listed twice", what, e.request_id);
      last_offset = e.offset;
      index_.push_back(e);
    }
    if (!r.done()) throw_error("{}: trailing bytes", what);
    if (!index_.empty() && index_[0].offset != kFileHeaderBytes) {
      throw_error("{}: first request at offset {} (expected {})", what, index_[0].offset, kFileHeaderBytes);
    }
  }

  void position_at(size_t i) {
    req_ = i;
    step_ = 0;
    pos_ = index_[i].offset;
    chunk_left_ = 0;
    reader_.reset();
    for (auto& c : coders_) c.reset();
    prev_seq_len_ = 0;
  }

  void load_chunk() {
    const IndexEntry& e = index_[req_];
    if (reader_ && !reader_->done()) {
      throw_error("{}: trailing bytes after step {}", where(path_, e.request_id, static_cast<int64_t>(step_) - 1),
                  step_ - 1);
    }
    if (pos_ >= index_offset_) {
      throw_error("{}: data ends before the {} indexed steps", where(path_, e.request_id, static_cast<int64_t>(step_)),
                  e.steps);
    }
    const uint64_t start = pos_;
    const Chunk c = read_chunk("step chunk");
    if (c.kind != kChunkSteps || c.request_id != e.request_id || c.first_step != step_ || c.n_steps == 0 ||
        c.n_steps > e.steps - step_ || pos_ > index_offset_) {
      throw_error("{}: chunk (kind {}, request {}, first step {}, {} steps) does not continue request {} at step {}",
                  path_, int{c.kind}, c.request_id, c.first_step, c.n_steps, e.request_id, step_);
    }
    chunk_left_ = c.n_steps;
    chunk_what_ = fmt::format("chunk at offset {}", start);
    reader_.emplace(raw_.data(), raw_.size(), &chunk_what_);
  }

  void decode_step(StepRecord& out) {
    const int64_t rid = index_[req_].request_id;
    const auto step = static_cast<int64_t>(step_);
    const int64_t seq_len = prev_seq_len_ + unzigzag(reader_->varint());
    if (seq_len < 1 || seq_len > kMaxSeqLen)
      throw_error("{}: seq_len {} out of range 1..{} (above any real context length)", where(path_, rid, step), seq_len,
                  kMaxSeqLen);
    prev_seq_len_ = seq_len;
    out.request_id = rid;
    out.step = step;
    out.seq_len = static_cast<int32_t>(seq_len);
    out.positions.resize(static_cast<size_t>(meta_.layers) * file_top_k_);
    for (int32_t l = 0; l < meta_.layers; ++l) {
      int32_t* row = out.positions.data() + static_cast<size_t>(l) * file_top_k_;
      try {
        decode_layer(*reader_, file_top_k_, file_top_k_, out.seq_len, coders_[static_cast<size_t>(l)], row, "");
      } catch (const Error& err) {
        // decode_layer's message starts with ": " (empty prefix) or the chunk name; add the full location.
        const std::string msg = err.what();
        throw Error(where(path_, rid, step, l) + (msg.rfind(": ", 0) == 0 ? msg : ": " + msg));
      }
    }
    if (meta_.top_k != file_top_k_) {
      refit_width(out.positions, meta_.layers, file_top_k_, meta_.top_k, path_, rid, step);
    }
  }

  std::string path_;
  TraceMeta meta_;
  int32_t file_top_k_ = 0;
  std::unique_ptr<std::istream> in_;
  uint64_t file_size_ = 0, index_offset_ = 0, pos_ = 0;
  std::vector<IndexEntry> index_;
  size_t req_ = 0;
  uint64_t step_ = 0;
  uint32_t chunk_left_ = 0;
  std::vector<uint8_t> stored_, raw_;
  std::string chunk_what_;
  std::optional<ByteReader> reader_;
  std::vector<LayerCoder> coders_;
  int64_t prev_seq_len_ = 0;
  struct FreeDCtx {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
  };
  std::unique_ptr<ZSTD_DCtx, FreeDCtx> dctx_;
};

}  // namespace

std::unique_ptr<TraceSource> open_native_trace(const std::string& path, const TraceOpenOptions& options) {
  auto in = std::make_unique<std::ifstream>(path, std::ios::binary | std::ios::ate);
  if (!*in) throw_error("{}: cannot open for reading", path);
  const auto size = static_cast<uint64_t>(in->tellg());
  return std::make_unique<NativeTraceSource>(std::move(in), size, path, options);
}

std::unique_ptr<TraceSource> open_native_trace(std::unique_ptr<std::istream> in, uint64_t size,
                                               const std::string& name, const TraceOpenOptions& options) {
  return std::make_unique<NativeTraceSource>(std::move(in), size, name, options);
}

}  // namespace hisparse::traces

// @brief Writes the native format: header, per-request delta-coded zstd chunks, request index, footer.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include <unistd.h>
#include <zstd.h>

#include "core/error.h"
#include "core/io/atomic_output.h"
#include "traces/byte_io.h"
#include "traces/native_codec.h"
#include "traces/native_format.h"
#include "traces/step_validation.h"
#include "traces/trace_writer.h"

namespace hisparse::traces {
namespace {

struct IndexEntry {
  int64_t request_id;
  uint64_t offset;  // of the request's first chunk
  uint64_t steps;
};

class NativeTraceWriter final : public TraceWriter {
 public:
  NativeTraceWriter(const std::string& path, const TraceMeta& meta, const TraceWriteOptions& options)
      : path_(path), meta_(meta), options_(options) {
    if (meta.layers < 1 || meta.layers > kMaxLayers || meta.top_k < 1 || meta.top_k > kMaxTopK ||
        int64_t{meta.layers} * meta.top_k > kMaxStepEntries) {
      throw_error("{}: cannot write layers {} x top_k {} (limits {} x {})", path, meta.layers, meta.top_k,
                  kMaxLayers, kMaxTopK);
    }
    meta_.source = path;
    out_ = std::make_unique<AtomicOutput>(path);
    std::vector<uint8_t> h(kNativeMagic, kNativeMagic + 8);
    put_u32(h, kNativeVersion);
    put_u32(h, kFileHeaderBytes);
    put_u32(h, static_cast<uint32_t>(meta.layers));
    put_u32(h, static_cast<uint32_t>(meta.top_k));
    uint32_t flags = 0;
    if (meta.initial_state == InitialState::kEmpty) flags |= kFlagInitialEmpty;
    if (meta.topk_dtype_bytes == 8) flags |= kFlagTopkInt64;
    if (meta.seq_lens_dtype_bytes == 8) flags |= kFlagSeqLensInt64;
    put_u32(h, flags);
    put_u32(h, 0);
    put_u64(h, 0);
    put_u32(h, 0);
    put_u32(h, crc32(h.data(), h.size()));
    emit(h);
    coders_.resize(static_cast<size_t>(meta.layers));
    cctx_.reset(ZSTD_createCCtx());
    if (!cctx_) throw_error("{}: zstd: out of memory", path);
  }

  // An unfinished trace: out_'s destructor removes its temporary file.
  ~NativeTraceWriter() override = default;

  uint64_t bytes_written() const override { return written_; }

  void write(const StepRecord& rec) override {
    if (finished_) throw_error("{}: write after finish", path_);
    if (index_.empty() || rec.request_id != index_.back().request_id) {
      flush_chunk();
      if (!seen_.insert(rec.request_id).second) {
        throw_error("{}: request {} appears twice (records must be grouped by request)", path_, rec.request_id);
      }
      if (rec.step != 0) throw_error("{}: request {} starts at step {} (expected 0)", path_, rec.request_id, rec.step);
      index_.push_back({rec.request_id, written_, 0});
      for (auto& c : coders_) c.reset();
      prev_seq_len_ = 0;
      chunk_first_step_ = 0;
    } else if (rec.step != static_cast<int64_t>(index_.back().steps)) {
      throw_error("{}: request {} step {} follows step {} (steps must be consecutive)", path_, rec.request_id,
                  rec.step, index_.back().steps - 1);
    }
    validate_step(meta_, rec, scratch_);
    put_varint(raw_, zigzag(int64_t{rec.seq_len} - prev_seq_len_));
    prev_seq_len_ = rec.seq_len;
    for (int32_t l = 0; l < meta_.layers; ++l) {
      encode_layer(rec.layer(l, meta_.top_k), meta_.top_k, coders_[static_cast<size_t>(l)], raw_);
    }
    if (raw_.size() > kMaxChunkRaw) {
      throw_error("{}: one step encodes to {} bytes, above the chunk limit {}", path_, raw_.size(), kMaxChunkRaw);
    }
    ++chunk_steps_;
    ++index_.back().steps;
    if (raw_.size() >= options_.chunk_bytes) flush_chunk();
  }

  void finish() override {
    if (finished_) return;
    flush_chunk();
    std::vector<uint8_t> idx;
    put_varint(idx, index_.size());
    for (const auto& e : index_) {
      put_varint(idx, zigzag(e.request_id));
      put_varint(idx, e.offset);
      put_varint(idx, e.steps);
    }
    const uint64_t index_offset = written_;
    emit_chunk(kChunkIndex, 0, 0, 0, idx);
    std::vector<uint8_t> footer;
    put_u64(footer, index_offset);
    footer.insert(footer.end(), kEndMagic, kEndMagic + 8);
    emit(footer);
    out_->commit();
    finished_ = true;
  }

 private:
  void emit(const std::vector<uint8_t>& bytes) {
    out_->write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    written_ += bytes.size();
  }

  void flush_chunk() {
    if (chunk_steps_ == 0) return;
    emit_chunk(kChunkSteps, index_.back().request_id, chunk_first_step_, chunk_steps_, raw_);
    chunk_first_step_ += chunk_steps_;
    chunk_steps_ = 0;
    raw_.clear();
  }

  void emit_chunk(uint8_t kind, int64_t request_id, uint64_t first_step, uint32_t n_steps,
                  const std::vector<uint8_t>& raw) {
    const uint8_t codec = options_.compress ? kCodecZstd : kCodecNone;
    const std::vector<uint8_t>* stored = &raw;
    if (codec == kCodecZstd) {
      packed_.resize(ZSTD_compressBound(raw.size()));
      const size_t n = ZSTD_compressCCtx(cctx_.get(), packed_.data(), packed_.size(), raw.data(), raw.size(),
                                         options_.zstd_level);
      if (ZSTD_isError(n)) throw_error("{}: zstd compression failed: {}", path_, ZSTD_getErrorName(n));
      packed_.resize(n);
      stored = &packed_;
    }
    std::vector<uint8_t> h(kChunkMagic, kChunkMagic + 4);
    h.push_back(kind);
    h.push_back(codec);
    h.push_back(0);
    h.push_back(0);
    put_u64(h, static_cast<uint64_t>(request_id));
    put_u64(h, first_step);
    put_u32(h, n_steps);
    put_u32(h, static_cast<uint32_t>(raw.size()));
    put_u32(h, static_cast<uint32_t>(stored->size()));
    put_u32(h, crc32(stored->data(), stored->size(), crc32(h.data(), h.size())));
    emit(h);
    emit(*stored);
  }

  std::string path_;
  TraceMeta meta_;
  TraceWriteOptions options_;
  std::unique_ptr<AtomicOutput> out_;  // "<path>.tmp.<pid>" until finish() commits it
  uint64_t written_ = 0;
  std::vector<LayerCoder> coders_;
  std::vector<IndexEntry> index_;
  std::set<int64_t> seen_;
  std::vector<uint8_t> raw_, packed_;
  std::vector<int32_t> scratch_;
  int64_t prev_seq_len_ = 0;
  uint64_t chunk_first_step_ = 0;
  uint32_t chunk_steps_ = 0;
  struct FreeCCtx {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };
  std::unique_ptr<ZSTD_CCtx, FreeCCtx> cctx_;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<TraceWriter> make_native_writer(const std::string& path, const TraceMeta& meta,
                                                const TraceWriteOptions& options) {
  return std::make_unique<NativeTraceWriter>(path, meta, options);
}

}  // namespace hisparse::traces

// @brief Reading the engine-kernel record strictly (engine_record.h): each array by name, its dtype and shape checked
// against the dimensions the first arrays of its case fix, every error naming the file and the array.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/numerics/sparse_attention_args.h"
#include "cpu_ref/block_scaled_gemm.h"
#include "cpu_ref/mla_fp8_cache.h"
#include "traces/npz_reader.h"
#include "validate/engine_record.h"

namespace hisparse::validation {
namespace {

using traces::NumArray;
using Shape = std::vector<int64_t>;

std::string shape_text(const Shape& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += fmt::format("{}{}", i ? ", " : "", s[i]);
  return t + "]";
}

/// Size-1 dimensions dropped: FlashMLA's decode kernel returns [batch, 1, heads, 512] and [batch, heads, 1] where the
/// sparse prefill kernel returns [batch, heads, 512] and [batch, heads]; both are the same C-order data.
Shape squeezed(const Shape& s) {
  Shape out;
  for (int64_t d : s)
    if (d != 1) out.push_back(d);
  return out;
}

class Arrays {
 public:
  Arrays(std::map<std::string, NumArray> arrays, std::string source) : a_(std::move(arrays)), source_(std::move(source)) {}
  bool has(const std::string& name) const { return a_.count(name) != 0; }

  /// The array `name` of numpy dtype `dtype`; its shape returned for the caller to size the rest of the case.
  const NumArray& get(const std::string& name, const std::string& dtype, size_t rank) const {
    const NumArray& x = lookup(name, dtype);
    if (x.shape.size() != rank)
      throw_error("{}: array '{}' has shape {}, expected {} dimensions", source_, name, shape_text(x.shape), rank);
    for (int64_t d : x.shape)
      if (d <= 0) throw_error("{}: array '{}' has shape {}, expected every dimension >= 1", source_, name, shape_text(x.shape));
    return x;
  }

  /// The array `name` with exactly `shape` (up to size-1 dimensions), as a vector of T.
  template <typename T>
  std::vector<T> take(const std::string& name, const std::string& dtype, const Shape& shape) const {
    const NumArray& x = lookup(name, dtype);
    if (squeezed(x.shape) != squeezed(shape))
      throw_error("{}: array '{}' has shape {}, expected {}", source_, name, shape_text(x.shape), shape_text(shape));
    return values<T>(x);
  }

  template <typename T>
  static std::vector<T> values(const NumArray& x) {
    std::vector<T> v(x.bytes.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), x.bytes.data(), v.size() * sizeof(T));  // little-endian, as numpy wrote it
    return v;
  }

  const std::string& source() const { return source_; }

 private:
  const NumArray& lookup(const std::string& name, const std::string& dtype) const {
    const auto it = a_.find(name);
    if (it == a_.end()) throw_error("{}: array '{}' is missing (engine record of bench/engine_ops/engine_checks.py)", source_, name);
    if (it->second.dtype != dtype)
      throw_error("{}: array '{}' has dtype {}, expected {}", source_, name, it->second.dtype, dtype);
    return it->second;
  }
  std::map<std::string, NumArray> a_;
  std::string source_;
};

int64_t blocks(int64_t n) { return (n + cpu_ref::kGemmScaleBlock - 1) / cpu_ref::kGemmScaleBlock; }

MlaRecord read_mla(const Arrays& z) {
  MlaRecord r;
  const NumArray& q = z.get("mla_bf16_q", "<u2", 3);
  const NumArray& idx = z.get("mla_bf16_idx", "<i4", 2);
  const NumArray& kv = z.get("mla_bf16_kv", "<u2", 2);
  r.batch = q.shape[0], r.heads = q.shape[1], r.top_k = idx.shape[1], r.rows = kv.shape[0];
  if (q.shape[2] != kMlaQkDim) throw_error("{}: array 'mla_bf16_q' has shape {}, expected [batch, heads, {}]", z.source(), q.shape_text(), kMlaQkDim);
  if (!attention_heads_supported(static_cast<int>(r.heads)))
    throw_error("{}: array 'mla_bf16_q' has {} heads, expected 64 or 128", z.source(), r.heads);
  r.q = Arrays::values<uint16_t>(q);
  r.kv = z.take<uint16_t>("mla_bf16_kv", "<u2", {r.rows, kMlaQkDim});
  r.idx = z.take<int32_t>("mla_bf16_idx", "<i4", {r.batch, r.top_k});
  for (size_t i = 0; i < r.idx.size(); ++i)
    if (r.idx[i] < -1 || r.idx[i] >= r.rows)
      throw_error("{}: array 'mla_bf16_idx' element {} = {}, expected -1 or a row in [0, {})", z.source(), i, r.idx[i], r.rows);
  const std::vector<float> scale = z.take<float>("mla_bf16_scale", "<f4", {1});
  r.scale = scale[0];
  if (!(r.scale > 0.0f)) throw_error("{}: array 'mla_bf16_scale' = {}, expected a positive softmax scale", z.source(), r.scale);
  r.bf16_out = z.take<uint16_t>("mla_bf16_out", "<u2", {r.batch, r.heads, kMlaVDim});
  r.bf16_lse = z.take<float>("mla_bf16_lse", "<f4", {r.batch, r.heads});
  r.fp8_cache = z.take<uint8_t>("mla_fp8_cache", "|u1", {r.rows, cpu_ref::kMlaFp8RowBytes});
  r.fp8_out = z.take<uint16_t>("mla_fp8_out", "<u2", {r.batch, r.heads, kMlaVDim});
  r.fp8_lse = z.take<float>("mla_fp8_lse", "<f4", {r.batch, r.heads});
  return r;
}

GemmRecord read_gemm(const Arrays& z, const std::string& pre, bool grouped) {
  GemmRecord g;
  const NumArray& a = z.get(pre + "a", "|u1", grouped ? 3 : 2);
  const NumArray& b = z.get(pre + "b", "|u1", grouped ? 3 : 2);
  const size_t o = grouped ? 1 : 0;
  g.groups = grouped ? a.shape[0] : 1, g.m = a.shape[o], g.k = a.shape[o + 1], g.n = b.shape[o];
  const auto with_groups = [&](Shape s) {
    if (grouped) s.insert(s.begin(), g.groups);
    return s;
  };
  if (b.shape != with_groups({g.n, g.k}))
    throw_error("{}: array '{}b' has shape {}, expected {} (the k of '{}a')", z.source(), pre, b.shape_text(),
                shape_text(with_groups({g.n, g.k})), pre);
  g.a = Arrays::values<uint8_t>(a);
  g.b = Arrays::values<uint8_t>(b);
  g.sfa = z.take<float>(pre + "sfa", "<f4", with_groups({g.m, blocks(g.k)}));
  g.sfb = z.take<float>(pre + "sfb", "<f4", with_groups({blocks(g.n), blocks(g.k)}));
  g.d = z.take<uint16_t>(pre + "d", "<u2", with_groups({g.m, g.n}));
  if (grouped) {
    g.masked_m = z.take<int32_t>(pre + "m", "<i4", {g.groups});
    for (size_t i = 0; i < g.masked_m.size(); ++i)
      if (g.masked_m[i] < 0 || g.masked_m[i] > g.m)
        throw_error("{}: array '{}m' element {} = {}, expected valid rows in [0, {}]", z.source(), pre, i, g.masked_m[i], g.m);
  } else {
    g.masked_m = {static_cast<int32_t>(g.m)};
  }
  return g;
}

V2PlanRecord read_v2(const Arrays& z, int c) {
  const std::string pre = fmt::format("v2_case{}_", c);
  V2PlanRecord v;
  const std::vector<int64_t> dims = z.take<int64_t>(pre + "dims", "<i8", {6});
  const char* names[] = {"batch", "seq", "nslot", "topk", "evicted_end", "steps"};
  for (int i = 0; i < 6; ++i)
    if (dims[i] < (i == 4 ? 0 : 1) || dims[i] > INT32_MAX)
      throw_error("{}: array '{}dims' {} = {}, expected a positive int32", z.source(), pre, names[i], dims[i]);
  v.batch = dims[0], v.seq = dims[1], v.nslot = dims[2], v.topk = dims[3], v.evicted_end = dims[4], v.steps = dims[5];
  if (v.evicted_end > v.seq)
    throw_error("{}: array '{}dims' evicted_end = {} is past seq = {}", z.source(), pre, v.evicted_end, v.seq);
  v.topk_idx = z.take<int32_t>(pre + "topk", "<i4", {v.steps, v.batch, v.topk});
  v.plan = z.take<int32_t>(pre + "plan", "<i4", {v.steps, v.batch, v.topk});
  v.slot_pos = z.take<int32_t>(pre + "slot_pos", "<i4", {v.steps, v.batch, v.nslot});
  return v;
}

}  // namespace

EngineRecord parse_engine_record(const std::string& bytes, const std::string& source) {
  const Arrays z(traces::read_npz_memory(bytes, source), source);
  EngineRecord r;
  r.source = source;
  r.mla = read_mla(z);
  r.masked = read_gemm(z, "gemm_masked_", true);
  r.dense = read_gemm(z, "gemm_dense_", false);
  for (int c = 0; z.has(fmt::format("v2_case{}_dims", c)); ++c) r.v2.push_back(read_v2(z, c));
  if (r.v2.empty()) throw_error("{}: array 'v2_case0_dims' is missing (no HiSparse V2 plan case)", source);
  return r;
}

EngineRecord read_engine_record(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error("{}: cannot open the engine record", path);
  return parse_engine_record(std::string(std::istreambuf_iterator<char>(in), {}), path);
}

}  // namespace hisparse::validation

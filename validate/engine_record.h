// @brief `hisparse validate --engine-record FILE`: the engine's own kernels (SGLang's HiSparse V2 plan kernel,
// FlashMLA sparse decode with bf16 and fp8 KV, DeepGEMM's masked grouped and dense fp8 GEMMs), recorded on a GPU by
// bench/engine_ops/engine_checks.py, recomputed on the CPU reference and compared: the V2 plan slot for slot (exact),
// the others within the tolerances of docs/numerics.md ("The engine's kernels against the CPU reference"). CPU only:
// the record carries the kernels' inputs and outputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse::validation {

/// A FlashMLA case: the bf16 inputs shared by both KV dtypes and each kernel's outputs (bf16 as bit patterns).
struct MlaRecord {
  int64_t batch = 0, heads = 0, top_k = 0, rows = 0;
  float scale = 0.0f;                                // softmax scale, 576^-0.5
  std::vector<uint16_t> q;                           // [batch][heads][576] bf16
  std::vector<uint16_t> kv;                          // [rows][576] bf16
  std::vector<int32_t> idx;                          // [batch][top_k]
  std::vector<uint16_t> bf16_out;                    // [batch][heads][512] bf16
  std::vector<float> bf16_lse;                       // [batch][heads]
  std::vector<uint8_t> fp8_cache;                    // [rows][656] (cpu_ref/mla_fp8_cache.h)
  std::vector<uint16_t> fp8_out;                     // [batch][heads][512] bf16
  std::vector<float> fp8_lse;                        // [batch][heads]
};

/// A block-scaled fp8 GEMM: groups × ([m][k] A, [n][k] B); dense = one group with every row valid.
struct GemmRecord {
  int64_t groups = 1, m = 0, n = 0, k = 0;
  std::vector<uint8_t> a;                            // [groups][m][k] E4M3
  std::vector<float> sfa;                            // [groups][m][k/128]
  std::vector<uint8_t> b;                            // [groups][n][k] E4M3
  std::vector<float> sfb;                            // [groups][ceil(n/128)][k/128]
  std::vector<int32_t> masked_m;                     // [groups] valid rows (m for the dense GEMM)
  std::vector<uint16_t> d;                           // [groups][m][n] bf16, zeros before the call
};

/// A V2 plan case as SGLang's swap_in_plan_kernel ran it, steps in order from an empty buffer.
struct V2PlanRecord {
  int64_t batch = 0, seq = 0, nslot = 0, topk = 0, evicted_end = 0, steps = 0;
  std::vector<int32_t> topk_idx;                     // [steps][batch][topk], -1 padding
  std::vector<int32_t> plan;                         // [steps][batch][topk]: hit slot, miss slot + nslot, else -1
  std::vector<int32_t> slot_pos;                     // [steps][batch][nslot] after each step, -1 empty
};

struct EngineRecord {
  std::string source;
  MlaRecord mla;
  GemmRecord masked, dense;
  std::vector<V2PlanRecord> v2;
};

/// Reads the record strictly: every array present with its dtype and shape; an error names the file and the array.
EngineRecord read_engine_record(const std::string& path);
/// The same from the file's bytes held in memory (`source` names it in errors).
EngineRecord parse_engine_record(const std::string& bytes, const std::string& source);

/// One row of the report.
struct EngineCheckRow {
  std::string name;          // "flashmla-bf16 out", "v2 case0 plan", ...
  bool exact = false;        // exact contract (mismatches) or tolerance contract (errors)
  bool info = false;         // no contract: reported, never a failure (a masked GEMM's unread padding rows)
  int64_t elements = 0;
  int64_t mismatches = 0;    // exact: elements that differ; tolerance: elements over the bound; info: as it says
  double max_abs = 0.0;      // tolerance rows: max |got − ref|
  double max_rel = 0.0;      // max |got − ref| / max(|ref|, floor)
  double max_ulp = 0.0;      // max |got − ref| in bf16 ulps of ref (0.5 = correctly rounded)
  std::string bound;         // the bound, as printed
  bool pass = false;
  std::string detail;        // first mismatch (exact) or worst element (tolerance)
};

struct EngineCheckResult {
  std::string source;
  std::vector<EngineCheckRow> rows;
  std::vector<std::string> notes;  // findings that are not pass/fail (FlashMLA's lse base, the fp8 dequant model)
  bool passed() const;
};

/// Runs every case of the record against the CPU reference.
EngineCheckResult check_engine_record(const EngineRecord& record);

// The cases (one file each), appending their rows and notes.
void check_engine_v2(const EngineRecord& record, EngineCheckResult& out);          // engine_record_v2.cpp
void check_engine_flashmla(const EngineRecord& record, EngineCheckResult& out);    // engine_record_flashmla.cpp
void check_engine_deepgemm(const EngineRecord& record, EngineCheckResult& out);    // engine_record_deepgemm.cpp

}  // namespace hisparse::validation

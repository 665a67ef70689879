// @brief The validation library (`hisparse validate`, hisparse.validate()): the table of operations, the
// per-operation report, the bit-for-bit checker and the run over a device backend. A new operation (sparse
// attention, top-k, ...) is one more file defining a `ValidateOp` function and one line in validate_ops()
// (validate.cpp). It links the CPU reference and cuda/ (the CUDA kernels, or their stand-ins that say why not).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/backend.h"
#include "validate/validate_request.h"

namespace hisparse::traces {
class TraceSource;
}

namespace hisparse::validation {

struct ValidateContext {
  Backend& ref;
  Backend& dut;
  const ValidateOptions& options;
};

/// An operation of the table: runs its cases and appends one report per variant.
using ValidateOpFn = void (*)(const ValidateContext&, std::vector<OpReport>&);
struct ValidateOp {
  const char* name;
  const char* summary;
  ValidateOpFn run;
};
const std::vector<ValidateOp>& validate_ops();

/// Runs the operations of `request` (throws hisparse::Error naming the flag on a bad request or a missing GPU).
/// `say` hears the banner lines (backend, device, seed) before the cases run; progress goes to stderr.
ValidateResult run_validation(const ValidateRequest& request, const std::function<void(const std::string&)>& say = nullptr);

// Operations (one file each).
void validate_swap_in(const ValidateContext& ctx, std::vector<OpReport>& out);        // validate_swap_in.cpp
void validate_swap_in_trace(const ValidateContext& ctx, std::vector<OpReport>& out);  // validate_swap_in.cpp
void validate_gather(const ValidateContext& ctx, std::vector<OpReport>& out);         // validate_copy.cpp
void validate_backup(const ValidateContext& ctx, std::vector<OpReport>& out);         // validate_copy.cpp
void validate_attention(const ValidateContext& ctx, std::vector<OpReport>& out);      // validate_attention.cpp
void validate_indexer(const ValidateContext& ctx, std::vector<OpReport>& out);        // validate_indexer_topk.cpp
void validate_indexer_fp8(const ValidateContext& ctx, std::vector<OpReport>& out);    // validate_indexer_topk.cpp
void validate_topk(const ValidateContext& ctx, std::vector<OpReport>& out);           // validate_indexer_topk.cpp
void validate_layout_gather(const ValidateContext& ctx, std::vector<OpReport>& out);  // validate_io.cpp
void validate_layout_backup(const ValidateContext& ctx, std::vector<OpReport>& out);  // validate_io.cpp
void validate_deltakv(const ValidateContext& ctx, std::vector<OpReport>& out);        // validate_io.cpp
void validate_swap_in_v2(const ValidateContext& ctx, std::vector<OpReport>& out);     // validate_swap_in_v2.cpp

/// --trace's spec: a trace file, or "gen:PRESET[:shuffle][:empty]" for the seeded generator (no file needed on the
/// GPU machine). validate_swap_in.cpp.
std::unique_ptr<traces::TraceSource> open_trace_spec(const std::string& spec, uint64_t seed);

/// Seeded generator with our own integer mapping (std distributions differ across standard libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  uint64_t below(uint64_t n) { return n == 0 ? 0 : g_() % n; }
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo + 1))); }
  bool chance(uint64_t num, uint64_t den) { return below(den) < num; }
  uint64_t next() { return g_(); }
  void fill_bytes(uint8_t* p, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const uint64_t v = g_();
      std::memcpy(p + i, &v, 8);
    }
    for (; i < n; ++i) p[i] = static_cast<uint8_t>(g_());
  }

 private:
  std::mt19937_64 g_;
};

/// The seed of case `index` of operation `op`: independent of how many cases ran before it.
uint64_t case_seed(uint64_t seed, const char* op, int64_t index);

/// Compares reference and device results element by element and keeps the first difference of the run.
class Checker {
 public:
  Checker(OpReport& report, uint64_t seed, int64_t case_index, std::string context)
      : report_(report), seed_(seed), case_index_(case_index), context_(std::move(context)) {}

  template <typename T>
  void equal(const char* what, const T* ref, const T* dut, size_t n) {
    report_.values += static_cast<int64_t>(n);
    for (size_t i = 0; i < n; ++i) {
      if (std::memcmp(&ref[i], &dut[i], sizeof(T)) != 0) {
        fail(fmt::format("{}[{}]: reference {} (0x{:x}), device {} (0x{:x})", what, i, ref[i], as_bits(ref[i]), dut[i],
                         as_bits(dut[i])));
        return;
      }
    }
  }
  template <typename T>
  void equal(const char* what, const std::vector<T>& ref, const std::vector<T>& dut) {
    if (ref.size() != dut.size()) return fail(fmt::format("{}: sizes {} vs {}", what, ref.size(), dut.size()));
    equal(what, ref.data(), dut.data(), ref.size());
  }
  void bytes(const char* what, const uint8_t* ref, const uint8_t* dut, size_t n, int64_t row_bytes);
  void counters(const char* what, const SwapInCounters* ref, const SwapInCounters* dut, size_t n);
  void fail(const std::string& message);
  bool ok() const { return ok_; }

 private:
  template <typename T>
  static uint64_t as_bits(const T& v) {
    uint64_t u = 0;
    std::memcpy(&u, &v, sizeof(T));
    return u;
  }
  OpReport& report_;
  uint64_t seed_;
  int64_t case_index_;
  std::string context_;
  bool ok_ = true;
};

}  // namespace hisparse::validation

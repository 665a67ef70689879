// @brief AttentionTable: FlashMLA's sparse decode kernels timed on one GPU over batch × heads per GPU × K (the CSVs
// of scenarios/measurements/), read strictly and interpolated; AttentionPricing: which table prices a run's sparse
// attention and, on a GPU that was not measured, how the table of one that was is carried over (modelled).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "core/hardware_spec.h"

namespace hisparse::sim {

/// The FlashMLA kernel SGLang's flashmla_sparse decode backend runs for a KV dtype: bf16 KV ->
/// flashmla_sparse_fwd, fp8 KV (V3.2's 656-byte rows) -> flashmla_fp8_decode.
const char* attention_kernel_for(KvDtype dtype);

/// One kernel's graph-timed time per call (one layer, one GPU), µs, at a query:
///   batch  piecewise linear between the measured batches; above the largest, linear from the last two
///          (`extrapolated_batch`); below the smallest, the smallest's time.
///   heads  heads per GPU. Rows named <kernel>_pad64 hold the head counts below 64: q is zero-padded to 64 heads and
///          the output sliced back (the shape string's `heads` is the real count), so they are a kernel of their own
///          below 64 and the plain kernel's rows (64 and above) the rest of the axis. Piecewise linear over the union
///          of both sets of head counts (8, 16, 32 padded; 64, 128 plain); below the smallest, its time (padding to
///          64 makes fewer heads no cheaper); above the largest, linear from the last two (`extrapolated_heads`).
///   K      the attended rows per request: piecewise linear between the measured K; above the largest, linear from
///          the last two (FLOPs, bytes and the kernel's serial walk over the K rows all grow linearly in K:
///          `extrapolated_k`, modelled); below the smallest, its time.
struct AttentionLookup {
  double us = 0;
  bool extrapolated_batch = false, extrapolated_heads = false, extrapolated_k = false;
};

class AttentionTable {
 public:
  /// Strict: a bad row is an error naming the file, line, column and value. Every row must be graph-timed, name one
  /// of the four kernels, one device, a shape "batch B heads H K K"; _pad64 rows below 64 heads, plain rows at 64 or
  /// more; every (kernel, heads, K) must carry the same batches (at least two), and each kernel the full heads × K grid.
  static AttentionTable load(const std::string& path);

  AttentionLookup lookup(const std::string& kernel, double batch, double heads, double K) const;
  double time_us(const std::string& kernel, double batch, double heads, double K) const {
    return lookup(kernel, batch, heads, K).us;
  }

  const std::string& file() const { return file_; }
  const std::string& device() const { return device_; }
  /// Measured grid of a kernel (its plain name): batches, head counts (padded and plain), K.
  std::vector<double> batches(const std::string& kernel) const;
  std::vector<double> heads(const std::string& kernel) const;
  std::vector<double> ks(const std::string& kernel) const;

 private:
  using Series = std::vector<std::pair<double, double>>;  // (batch, µs), batch ascending
  struct Kernel {
    std::map<int, std::map<int, Series>> grid;  // heads -> K -> series
  };
  const Kernel& kernel(const std::string& name) const;
  std::string file_, device_;
  std::map<std::string, Kernel> kernels_;
};

/// How a run prices the sparse-attention kernel: a table measured on this GPU, one measured on another GPU carried
/// over (modelled), or none (the roofline at efficiency.attention).
struct AttentionPricing {
  std::shared_ptr<const AttentionTable> table;  // null: roofline
  std::string from_hardware;        // "": the table was measured on this hardware; else the hardware it was measured on
  double from_bf16_flops = 0;       // that hardware's peaks, for the carry-over
  double from_hbm_bytes_per_s = 0;

  /// Time per layer (µs) at this GPU's batch, heads per GPU and mean attended rows per request; `flops` and `bytes`
  /// are the kernel's work at that point (the roofline's), `hw` the GPU priced. Carried over from another GPU:
  ///   t = t_src(1) + (t_src(B) − t_src(1)) · roofline_hw / roofline_src,  roofline = max(flops / bf16, bytes / HBM)
  /// t_src(1), the batch-1 time at the same heads and K, is the kernel's floor (one wave of CTAs each walking its K
  /// rows serially: latency-bound, set by the SM clock, not by the peaks) and is kept; what grows with the batch is
  /// the work above it, scaled by the ratio of the two GPUs' roofline times of that work.
  AttentionLookup layer_us(KvDtype dtype, double batch, double heads, double K, double flops, double bytes,
                           const HardwareSpec& hw) const;
  /// "measured (flashmla_sparse_h200_2026-11-25.csv, NVIDIA H200)" or "modelled (… carried over from h200 …)".
  std::string label() const;
  std::string kind() const { return from_hardware.empty() ? "measured" : "modelled"; }
};

/// The table a run uses: `flag` "auto" (the hardware file's attention_table, else its attention_table_from's), "none"
/// (roofline) or a CSV path (measured on the hardware priced, as the user says).
AttentionPricing choose_attention_pricing(const std::string& flag, const HardwareSpec& hw);

}  // namespace hisparse::sim

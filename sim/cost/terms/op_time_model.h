// @brief The measured per-op time models of a decode layer as the step model reads them (decode_cost_model.cpp):
// each op's time from the work it does (core/decode_layer_ops.h), the set of them for one GPU and model
// (StepCalibration) with its provenance and checks, and the shape evaluation the fit (sim/calibration/
// step_calibration_fit.cpp) searches over, so the fit and the prediction are one formula.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/decode_layer_ops.h"
#include "core/model_spec.h"

namespace hisparse::sim {

/// Time of one op from the work it does (core/decode_layer_ops.h): a roofline shape with fitted constants, plus a
/// per-token term; or, for a kernel whose block count is known, whole waves of blocks.
///   max:        max(fixed, bytes / bytes_per_s, flops / flops_per_s)   (a floor, then whichever bound binds)
///   fixed+max:  fixed + max(bytes / bytes_per_s, flops / flops_per_s)
///   sum:        fixed + bytes / bytes_per_s + flops / flops_per_s
///   smooth:     (fixed^4 + (bytes / bytes_per_s)^4 + (flops / flops_per_s)^4)^(1/4)  (a rounded max: the
///               transition from the floor to the bound is gradual where the grid fills the GPU step by step)
///   each of those + per_token_us x tokens
///                 + (per_wave_us + block_bytes / block_bytes_per_s) x ceil(blocks / wave_blocks), for a kernel
///                 whose block count is known (one block per (token, 64 heads) leaves SMs idle until the grid spans
///                 a wave, then steps up a wave at a time; a wave takes longer the more each block reads: top-k's
///                 slice of a row)
///                 + per_pass_wave_us x ceil(pass_blocks / pass_wave_blocks), for an op with a second launch of
///                 its own block count (top-k's select pass: a block per row)
///   table:      a measured (bytes, µs) table, interpolated log-log, held flat below its first point and extended
///               along its last segment above its last (ops whose time is a staircase in their work alone)
/// A rate or wave size of 0 leaves its term out. An op whose time depends on its work alone (DecodeOpWork::by_work)
/// gets the table or whole waves of its blocks (form sum), whichever predicts fit points better when each work
/// is left out of the fit in turn (left_out_*_loss: sums of squared relative errors).
struct OpTimeModel {
  std::string op, dtype, family, form;
  double fixed_us = 0, bytes_per_s = 0, flops_per_s = 0, per_token_us = 0, wave_blocks = 0, per_wave_us = 0;
  double block_bytes_per_s = 0, pass_wave_blocks = 0, per_pass_wave_us = 0;
  std::vector<std::pair<double, double>> table;  // form table: (bytes, µs), bytes ascending
  double left_out_table_loss = 0, left_out_waves_loss = 0;  // by-work ops: what chose between table and waves
  double fit_max_error = 0, held_out_max_error = 0;  // |predicted - measured| / measured over its points
  int fit_points = 0, held_out_points = 0;
  double predict(const DecodeOpWork& work) const;  // µs
};

/// A sum checked against measurement at one point: an op family's ops, or the whole layer.
struct StepCheck {
  std::string what;  // "family gemm", "layer"
  int batch = 0;
  int64_t context = 0;
  double measured_us = 0, predicted_us = 0;
  bool held_out = false;
  double error() const { return measured_us > 0 ? (predicted_us - measured_us) / measured_us : 0; }
};

struct StepCalibration {
  std::string device, model, date, made_from;
  std::string driver;                // kernel module and CUDA versions of the run ("" in older files)
  int ep = 8;
  double graph_gap_us = 0;           // between two kernels of a CUDA graph, measured
  std::vector<int> fit_batches;
  std::vector<OpTimeModel> ops;
  std::vector<StepCheck> checks;     // family and layer sums at every measured (batch, context)
  const OpTimeModel* find(const std::string& op, const std::string& dtype) const;
  /// Largest |error| of the checks whose `what` starts with `prefix` among held-out (or fit) points.
  double max_check_error(const std::string& prefix, bool held_out) const;
};

/// Predicted time of one MoE layer (all its ops, the projections in fp8) at `batch` and `context`.
double predict_moe_layer_us(const StepCalibration& c, const ModelSpec& model, int batch, int64_t context);


/// The shape evaluation both the fit and OpTimeModel::predict use, in the units the fit searches: µs, µs per byte,
/// per FLOP, per token, per wave, per byte a block reads (in each wave), per wave of the second launch.
namespace op_time {
struct Point {
  double bytes, flops, tokens, blocks, us;
  bool fit;
  bool by_work = false;
  double block_bytes = 0, pass_blocks = 0;  // see DecodeOpWork
};
Point point_of(const DecodeOpWork& w);
/// Log-log interpolation in a (bytes, µs) table (see OpTimeModel::table).
double table_us(const std::vector<std::pair<double, double>>& t, double bytes);
constexpr int kFormCount = 4;
extern const char* const kForms[kFormCount];  // "max", "fixed+max", "sum", "smooth"
int form_index(const std::string& form);
struct Params {
  int form = 0;
  double a = 0, ib = 0, if_ = 0, c = 0, wave_blocks = 0, per_wave = 0, ibb = 0, pass_wave_blocks = 0, per_pass_wave = 0;
};
double shape(const Params& p, const Point& q);
}  // namespace op_time

}  // namespace hisparse::sim

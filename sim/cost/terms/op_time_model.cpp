// @brief The per-op time models' prediction and the shape they share with the fit (op_time_model.h).
#include "sim/cost/terms/op_time_model.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace hisparse::sim {

namespace op_time {

Point point_of(const DecodeOpWork& w) {
  Point p{w.bytes, w.flops, w.tokens, w.blocks, 0, false, w.by_work};
  p.block_bytes = w.block_bytes;
  p.pass_blocks = w.pass_blocks;
  return p;
}

double table_us(const std::vector<std::pair<double, double>>& t, double bytes) {
  if (t.empty()) return 0;
  if (t.size() == 1 || bytes <= t.front().first) return t.front().second;
  size_t i = 1;
  while (i + 1 < t.size() && t[i].first < bytes) ++i;
  const auto [x0, y0] = t[i - 1];
  const auto [x1, y1] = t[i];
  const double f = std::log(bytes / x0) / std::log(x1 / x0);
  return std::exp(std::log(y0) + f * (std::log(y1) - std::log(y0)));
}

const char* const kForms[kFormCount] = {"max", "fixed+max", "sum", "smooth"};

int form_index(const std::string& form) {
  for (int i = 0; i < kFormCount; ++i)
    if (form == kForms[i]) return i;
  return -1;
}

double shape(const Params& p, const Point& q) {
  const double tb = q.bytes * p.ib, tf = q.flops * p.if_;
  double t = 0;
  switch (p.form) {
    case 0: t = std::max({p.a, tb, tf}); break;
    case 1: t = p.a + std::max(tb, tf); break;
    case 2: t = p.a + tb + tf; break;
    default: t = std::sqrt(std::sqrt(p.a * p.a * p.a * p.a + tb * tb * tb * tb + tf * tf * tf * tf)); break;
  }
  t += q.tokens * p.c;
  if (p.wave_blocks > 0) t += (p.per_wave + q.block_bytes * p.ibb) * std::ceil(q.blocks / p.wave_blocks);
  if (p.pass_wave_blocks > 0) t += p.per_pass_wave * std::ceil(q.pass_blocks / p.pass_wave_blocks);
  return t;
}

}  // namespace op_time

using op_time::Params;
using op_time::form_index;
using op_time::point_of;
using op_time::shape;
using op_time::table_us;

double OpTimeModel::predict(const DecodeOpWork& w) const {
  if (form == "table") return table_us(table, w.bytes);
  Params p;
  p.form = std::max(0, form_index(form));
  p.a = fixed_us;
  p.ib = bytes_per_s > 0 ? 1e6 / bytes_per_s : 0;
  p.if_ = flops_per_s > 0 ? 1e6 / flops_per_s : 0;
  p.c = per_token_us;
  p.wave_blocks = wave_blocks;
  p.per_wave = per_wave_us;
  p.ibb = block_bytes_per_s > 0 ? 1e6 / block_bytes_per_s : 0;
  p.pass_wave_blocks = pass_wave_blocks;
  p.per_pass_wave = per_pass_wave_us;
  return shape(p, point_of(w));
}

const OpTimeModel* StepCalibration::find(const std::string& op, const std::string& dtype) const {
  for (const OpTimeModel& m : ops)
    if (m.op == op && m.dtype == dtype) return &m;
  return nullptr;
}

double StepCalibration::max_check_error(const std::string& prefix, bool held_out) const {
  double e = 0;
  for (const StepCheck& c : checks)
    if (c.held_out == held_out && c.what.rfind(prefix, 0) == 0) e = std::max(e, std::abs(c.error()));
  return e;
}

double predict_moe_layer_us(const StepCalibration& c, const ModelSpec& model, int batch, int64_t context) {
  double t = 0;
  for (const DecodeOpWork& w : moe_layer_ops(model, batch, context, c.ep)) {
    const OpTimeModel* m = c.find(w.op, w.dtype);
    if (!m) throw_error("step calibration of {}: no model for op {} ({})", c.device, w.op, w.dtype);
    t += m->predict(w) * w.per_layer;
  }
  return t;
}

}  // namespace hisparse::sim

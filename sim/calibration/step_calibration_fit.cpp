// @brief Fitting the per-op time models of a decode layer to `bench step` rows and checking family and layer sums
// (the file formats: step_calibration_io.cpp).
#include "sim/calibration/step_calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim {
namespace {

using op_time::Params;
using op_time::Point;
using op_time::form_index;
using op_time::kFormCount;
using op_time::kForms;
using op_time::point_of;
using op_time::shape;
using op_time::table_us;

/// Sum of squared relative errors over the fit points.
double loss(const Params& p, const std::vector<Point>& pts) {
  double s = 0;
  for (const Point& q : pts)
    if (q.fit) {
      const double e = (shape(p, q) - q.us) / q.us;
      s += e * e;
    }
  return s;
}

/// Weighted (1/us²) least squares of us = a + k·x(point) over the fit points, both clamped at >= 0.
template <typename X>
std::pair<double, double> line_fit(const std::vector<Point>& pts, X x) {
  double s1 = 0, sx = 0, sxx = 0, sy = 0, sxy = 0;
  for (const Point& q : pts)
    if (q.fit) {
      const double w = 1 / (q.us * q.us), xv = x(q);
      s1 += w, sx += w * xv, sxx += w * xv * xv, sy += w * q.us, sxy += w * xv * q.us;
    }
  const double det = s1 * sxx - sx * sx;
  if (!(std::abs(det) > 0)) return {s1 > 0 ? sy / s1 : 0, 0};
  double k = (s1 * sxy - sx * sy) / det, a = (sy - k * sx) / s1;
  if (k < 0) k = 0, a = sy / s1;
  if (a < 0) a = 0, k = sxx > 0 ? sxy / sxx : 0;
  return {a, k};
}

/// Shrinking multiplicative pattern search over the nonzero parameters the form uses.
void refine(Params& p, double& l, const std::vector<Point>& pts) {
  for (double step = 0.25; step > 1e-4; step /= 2) {
    bool moved = true;
    while (moved) {
      moved = false;
      for (double Params::*field :
           {&Params::a, &Params::ib, &Params::if_, &Params::c, &Params::per_wave, &Params::ibb, &Params::per_pass_wave})
        for (double dir : {1.0, -1.0}) {
          Params q = p;
          if (q.*field == 0) continue;
          q.*field *= std::exp(dir * step);
          const double lq = loss(q, pts);
          if (lq < l - 1e-15) p = q, l = lq, moved = true;
        }
    }
  }
}

/// The largest relative error of `predict` over the fit points and over the held-out ones, and their counts.
template <typename Predict>
void record_errors(OpTimeModel& m, const std::vector<Point>& pts, Predict predict) {
  for (const Point& q : pts) {
    const double e = std::abs(predict(q) - q.us) / q.us;
    if (q.fit) {
      m.fit_max_error = std::max(m.fit_max_error, e);
      ++m.fit_points;
    } else {
      m.held_out_max_error = std::max(m.held_out_max_error, e);
      ++m.held_out_points;
    }
  }
}

/// The table of the fit points: the median time of each distinct work (bytes).
std::vector<std::pair<double, double>> make_table(const std::vector<Point>& pts) {
  std::map<double, std::vector<double>> at;
  for (const Point& q : pts)
    if (q.fit) at[q.bytes].push_back(q.us);
  std::vector<std::pair<double, double>> t;
  for (auto& [x, ys] : at) {
    std::sort(ys.begin(), ys.end());
    t.emplace_back(x, ys[ys.size() / 2]);
  }
  return t;
}

/// Non-negative least squares (Lawson-Hanson) on the normal equations G x = b of a weighted fit: the x >= 0 that
/// minimises the weighted squared residual. Columns are scaled to unit diagonal first; a column of zeros stays 0.
std::vector<double> nnls(std::vector<std::vector<double>> G, std::vector<double> b) {
  const size_t k = b.size();
  std::vector<double> scale(k, 0), x(k, 0);
  std::vector<bool> passive(k, false), excluded(k, false);
  for (size_t i = 0; i < k; ++i) {
    scale[i] = G[i][i] > 0 ? 1 / std::sqrt(G[i][i]) : 0;
    excluded[i] = G[i][i] <= 0;
  }
  for (size_t i = 0; i < k; ++i) {
    b[i] *= scale[i];
    for (size_t j = 0; j < k; ++j) G[i][j] *= scale[i] * scale[j];
  }
  // Solves G_PP z_P = b_P by Gaussian elimination with partial pivoting; false if singular.
  auto solve = [&](std::vector<double>& z) {
    std::vector<size_t> idx;
    for (size_t i = 0; i < k; ++i)
      if (passive[i]) idx.push_back(i);
    const size_t m = idx.size();
    std::vector<std::vector<double>> M(m, std::vector<double>(m + 1));
    for (size_t r = 0; r < m; ++r) {
      for (size_t c = 0; c < m; ++c) M[r][c] = G[idx[r]][idx[c]];
      M[r][m] = b[idx[r]];
    }
    for (size_t c = 0; c < m; ++c) {
      size_t piv = c;
      for (size_t r = c + 1; r < m; ++r)
        if (std::abs(M[r][c]) > std::abs(M[piv][c])) piv = r;
      if (!(std::abs(M[piv][c]) > 1e-12)) return false;
      std::swap(M[c], M[piv]);
      for (size_t r = 0; r < m; ++r)
        if (r != c) {
          const double f = M[r][c] / M[c][c];
          for (size_t j = c; j <= m; ++j) M[r][j] -= f * M[c][j];
        }
    }
    z.assign(k, 0);
    for (size_t r = 0; r < m; ++r) z[idx[r]] = M[r][m] / M[r][r];
    return true;
  };
  for (size_t outer = 0; outer < 4 * k + 4; ++outer) {
    size_t pick = k;
    double best_g = 1e-10;
    for (size_t i = 0; i < k; ++i) {
      if (passive[i] || excluded[i]) continue;
      double g = b[i];
      for (size_t j = 0; j < k; ++j) g -= G[i][j] * x[j];
      if (g > best_g) best_g = g, pick = i;
    }
    if (pick == k) break;
    passive[pick] = true;
    for (size_t inner = 0; inner < 4 * k + 4; ++inner) {
      std::vector<double> z;
      if (!solve(z)) {  // the column adds nothing the others do not: leave it out
        passive[pick] = false;
        excluded[pick] = true;
        break;
      }
      bool all_positive = true;
      for (size_t i = 0; i < k; ++i) all_positive = all_positive && (!passive[i] || z[i] > 0);
      if (all_positive) {
        x = z;
        break;
      }
      double alpha = 1;
      for (size_t i = 0; i < k; ++i)
        if (passive[i] && z[i] <= 0) alpha = std::min(alpha, x[i] / (x[i] - z[i]));
      for (size_t i = 0; i < k; ++i) {
        x[i] += alpha * (z[i] - x[i]);
        if (passive[i] && x[i] <= 1e-15) passive[i] = false, x[i] = 0;
      }
    }
  }
  for (size_t i = 0; i < k; ++i) x[i] = std::max(0.0, x[i]) * scale[i];
  return x;
}

/// Wave sizes worth trying for block counts `blocks`: ceil(blocks / W) only changes where W = ceil(b / k) for a
/// count b and a whole k, so these are the smallest wave size of every distinct assignment of waves to the points.
std::vector<double> wave_sizes(const std::vector<double>& blocks) {
  double top = 0;
  for (double b : blocks) top = std::max(top, b);
  if (!(top >= 1)) return {};
  std::vector<char> seen(size_t(top) + 1, 0);
  for (double b : blocks)
    for (int64_t k = 1; k <= int64_t(b); ++k) seen[size_t((int64_t(b) + k - 1) / k)] = 1;
  std::vector<double> out;
  for (size_t w = 1; w < seen.size(); ++w)
    if (seen[w]) out.push_back(double(w));
  return out;
}

/// Whole waves of the op's blocks, linear in every constant: fixed + bytes/rate + flops/rate + per token
///   + ceil(blocks / W) x (per wave + block_bytes / rate)  + ceil(pass_blocks / W2) x per pass wave
/// (form sum). For every wave size (and second-launch wave size) that changes the fit points' wave counts, the
/// constants come from a weighted (1/us²) non-negative least squares; the smallest fit loss wins, the smallest wave
/// sizes on a tie. Returns the loss through `loss_out`.
Params fit_waves(const std::vector<Point>& pts, double* loss_out) {
  std::vector<double> blocks, pass;
  bool has_block_bytes = false;
  for (const Point& q : pts)
    if (q.fit) {
      if (q.blocks > 0) blocks.push_back(q.blocks);
      if (q.pass_blocks > 0) pass.push_back(q.pass_blocks);
      has_block_bytes = has_block_bytes || q.block_bytes > 0;
    }
  std::vector<double> ws = wave_sizes(blocks), w2s = wave_sizes(pass);
  if (ws.empty()) ws.push_back(0);
  if (w2s.empty()) w2s.push_back(0);
  constexpr size_t kCols = 7;
  Params best;
  double best_l = std::numeric_limits<double>::infinity();
  for (double w : ws)
    for (double w2 : w2s) {
      std::vector<std::vector<double>> G(kCols, std::vector<double>(kCols, 0));
      std::vector<double> rhs(kCols, 0);
      for (const Point& q : pts) {
        if (!q.fit) continue;
        const double waves = w > 0 ? std::ceil(q.blocks / w) : 0;
        const double col[kCols] = {1,
                                   q.bytes,
                                   q.flops,
                                   q.tokens,
                                   waves,
                                   has_block_bytes ? waves * q.block_bytes : 0,
                                   w2 > 0 ? std::ceil(q.pass_blocks / w2) : 0};
        const double wt = 1 / (q.us * q.us);
        for (size_t i = 0; i < kCols; ++i) {
          rhs[i] += wt * col[i] * q.us;
          for (size_t j = 0; j < kCols; ++j) G[i][j] += wt * col[i] * col[j];
        }
      }
      const std::vector<double> x = nnls(G, rhs);
      Params p;
      p.form = 2;
      p.a = x[0], p.ib = x[1], p.if_ = x[2], p.c = x[3];
      p.wave_blocks = w, p.per_wave = x[4], p.ibb = x[5];
      p.pass_wave_blocks = w2, p.per_pass_wave = x[6];
      const double l = loss(p, pts);
      if (l < best_l * (1 - 1e-9)) best_l = l, best = p;
    }
  if (best.per_wave == 0 && best.ibb == 0) best.wave_blocks = 0;
  if (best.per_pass_wave == 0) best.pass_wave_blocks = 0;
  if (loss_out) *loss_out = best_l;
  return best;
}

/// The roofline shapes: for each, rates from a log grid around the measured ratios and the floor from the measured
/// times, then a pattern search (from no per-token term, and from a small one); then the wave shapes where the
/// op's kernel reports its block count. The shape with the smallest fit loss wins.
Params fit_shapes(const std::vector<Point>& pts) {
  double rb_lo = 1e300, rb_hi = 0, rf_lo = 1e300, rf_hi = 0, rc = 0;
  bool has_blocks = true;
  for (const Point& q : pts) {
    has_blocks = has_blocks && q.blocks > 0;
    if (!q.fit) continue;
    if (q.bytes > 0) rb_lo = std::min(rb_lo, q.us / q.bytes), rb_hi = std::max(rb_hi, q.us / q.bytes);
    if (q.flops > 0) rf_lo = std::min(rf_lo, q.us / q.flops), rf_hi = std::max(rf_hi, q.us / q.flops);
    if (q.tokens > 0) rc = std::max(rc, q.us / q.tokens);
  }
  auto grid = [](double lo, double hi) {
    std::vector<double> g{0};  // 0: the term is left out
    if (hi <= 0) return g;
    const double l = std::log(lo / 8), h = std::log(hi * 2);
    for (int i = 0; i <= 32; ++i) g.push_back(std::exp(l + (h - l) * i / 32));
    return g;
  };
  const std::vector<double> gb = grid(rb_lo, rb_hi), gf = grid(rf_lo, rf_hi);
  std::vector<double> floors{0};
  for (const Point& q : pts)
    if (q.fit) floors.push_back(q.us);
  Params best;
  double best_l = std::numeric_limits<double>::infinity();
  for (int form = 0; form < 4; ++form) {
    Params p;
    p.form = form;
    double l = std::numeric_limits<double>::infinity();
    for (double b : gb)
      for (double f : gf)
        for (double a : floors) {
          const Params q{form, a, b, f, 0, 0, 0};
          const double lq = loss(q, pts);
          if (lq < l) l = lq, p = q;
        }
    for (double c0 : {0.0, 0.01 * rc, 0.1 * rc}) {
      Params q = p;
      q.c = c0;
      double lq = loss(q, pts);
      refine(q, lq, pts);
      if (lq < best_l) best_l = lq, best = q;
    }
  }
  // Kernels whose block count is known: the best roofline fit plus whole waves of blocks, the wave size searched
  // (per-wave time in closed form on the residual, then every term refined together).
  if (has_blocks) {
    double max_blocks = 0;
    for (const Point& q : pts) max_blocks = std::max(max_blocks, q.blocks);
    const Params base = best;
    std::vector<std::pair<double, Params>> tried;  // (loss, params) per wave size, before refinement
    for (double w = 1; w <= max_blocks; ++w) {
      Params q = base;
      q.wave_blocks = w;
      q.per_wave = 0;
      double num = 0, den = 0;
      for (const Point& pt : pts)
        if (pt.fit) {
          const double waves = std::ceil(pt.blocks / w), r = pt.us - shape(q, pt);
          num += waves * r / (pt.us * pt.us);
          den += waves * waves / (pt.us * pt.us);
        }
      q.per_wave = den > 0 ? std::max(0.0, num / den) : 0;
      if (q.per_wave == 0) continue;
      // Taking a wave's time out of the floor keeps the total where it was.
      Params shrunk = q;
      shrunk.a = std::max(0.0, q.a - q.per_wave);
      const double lq = loss(q, pts), ls = loss(shrunk, pts);
      tried.emplace_back(std::min(lq, ls), ls < lq ? shrunk : q);
      // Waves alone (a floor and whole waves, no roofline term), in closed form.
      const auto [a0, k0] = line_fit(pts, [w](const Point& pt) { return std::ceil(pt.blocks / w); });
      const Params only{2, a0, 0, 0, 0, w, k0};
      tried.emplace_back(loss(only, pts), only);
    }
    // Refine the most promising wave sizes (refining all of them costs seconds per op). Sizes the fit points
    // cannot tell apart tie; the smallest wins (stable order, strict improvement): the first size that explains
    // every step seen.
    std::stable_sort(tried.begin(), tried.end(), [](const auto& x, const auto& y) { return x.first < y.first * (1 - 1e-9); });
    for (size_t i = 0; i < std::min<size_t>(tried.size(), 32); ++i) {
      auto [lq, q] = tried[i];
      refine(q, lq, pts);
      if (lq < best_l * (1 - 1e-9)) best_l = lq, best = q;
    }
  }
  // A kernel whose work per block or second launch is known: every constant of whole waves at once (fit_waves).
  bool per_block_work = false;
  for (const Point& q : pts) per_block_work = per_block_work || q.block_bytes > 0 || q.pass_blocks > 0;
  if (has_blocks && per_block_work) {
    double lw = 0;
    Params w = fit_waves(pts, &lw);
    refine(w, lw, pts);
    if (lw < best_l * (1 - 1e-9)) best_l = lw, best = w;
  }
  if (best.per_wave < 1e-3 && best.ibb == 0) best.wave_blocks = 0, best.per_wave = 0;  // under a nanosecond a wave
  if (best.per_pass_wave < 1e-3) best.pass_wave_blocks = 0, best.per_pass_wave = 0;
  return best;
}

/// Leave-one-work-out loss of the table and of whole waves on the fit points of a by-work op: each distinct work's
/// fit points predicted by the candidate fitted to the other fit points (the table interpolates across the gap,
/// the waves refit); the sum of squared relative errors.
std::pair<double, double> left_out_losses(const std::vector<Point>& pts) {
  std::set<double> works;
  for (const Point& q : pts)
    if (q.fit) works.insert(q.bytes);
  double table_l = 0, waves_l = 0;
  for (double x : works) {
    std::vector<Point> rest = pts;
    for (Point& q : rest) q.fit = q.fit && q.bytes != x;
    const auto t = make_table(rest);
    const Params w = fit_waves(rest, nullptr);
    if (t.empty()) return {0, std::numeric_limits<double>::infinity()};
    for (const Point& q : pts)
      if (q.fit && q.bytes == x) {
        const double et = (table_us(t, q.bytes) - q.us) / q.us, ew = (shape(w, q) - q.us) / q.us;
        table_l += et * et;
        waves_l += ew * ew;
      }
  }
  return {table_l, waves_l};
}

OpTimeModel to_model(const Params& best) {
  OpTimeModel m;
  m.form = kForms[best.form];
  m.fixed_us = best.a;
  m.bytes_per_s = best.ib > 0 ? 1e6 / best.ib : 0;
  m.flops_per_s = best.if_ > 0 ? 1e6 / best.if_ : 0;
  m.per_token_us = best.c;
  m.wave_blocks = best.wave_blocks;
  m.per_wave_us = best.per_wave;
  m.block_bytes_per_s = best.ibb > 0 ? 1e6 / best.ibb : 0;
  m.pass_wave_blocks = best.pass_wave_blocks;
  m.per_pass_wave_us = best.per_pass_wave;
  return m;
}

/// Fits one op. An op whose time depends on its work alone (by_work) gets the table of its fit points or whole
/// waves of its blocks (fit_waves), whichever predicts left-out fit works better; every other op, fit_shapes.
OpTimeModel fit_op(const std::vector<Point>& pts) {
  bool has_blocks = !pts.empty();
  for (const Point& q : pts) has_blocks = has_blocks && q.blocks > 0;
  if (!pts.empty() && pts.front().by_work) {
    const auto [table_l, waves_l] = has_blocks ? left_out_losses(pts)
                                               : std::pair<double, double>{0, std::numeric_limits<double>::infinity()};
    OpTimeModel m;
    if (waves_l < table_l) {
      const Params w = fit_waves(pts, nullptr);
      m = to_model(w);
      record_errors(m, pts, [&](const Point& q) { return shape(w, q); });
    } else {
      m.form = "table";
      m.table = make_table(pts);
      record_errors(m, pts, [&](const Point& q) { return table_us(m.table, q.bytes); });
    }
    m.left_out_table_loss = table_l;
    m.left_out_waves_loss = waves_l;
    return m;
  }
  const Params best = fit_shapes(pts);
  OpTimeModel m = to_model(best);
  record_errors(m, pts, [&](const Point& q) { return shape(best, q); });
  return m;
}

}  // namespace

StepCalibration fit_step_calibration(const std::vector<StepBenchMeasurement>& rows, const ModelSpec& model,
                                     const std::vector<int>& fit_batches, int ep) {
  StepCalibration c;
  c.fit_batches = fit_batches;
  c.ep = ep;
  c.device = rows.front().device;
  c.model = rows.front().model;
  const std::set<int> fit(fit_batches.begin(), fit_batches.end());
  std::map<std::pair<std::string, std::string>, std::vector<Point>> by_op;
  std::map<std::pair<std::string, std::string>, std::string> family;
  std::map<std::tuple<std::string, std::string, int, int64_t>, double> measured;
  for (const StepBenchMeasurement& r : rows) {
    if (r.op == "graph_gap") c.graph_gap_us = r.median_us;
    if (r.op == "graph_gap" || r.family == "layer") continue;
    // Rows written before top-k's all-selected path had its own name: the same op as core names it now.
    const std::string op = r.op == "topk" && r.context <= model.top_k ? "topk_all" : r.op;
    const DecodeOpWork* work = nullptr;
    const auto ops = decode_layer_ops(model, r.batch, r.context, ep, true);
    for (const DecodeOpWork& w : ops)
      if (w.op == op && w.dtype == r.dtype) work = &w;
    if (!work)
      throw_error("bench step fit: row {} ({}) at batch {} is not an op of core/decode_layer_ops.h for {}", r.op,
                  r.dtype, r.batch, model.name);
    Point pt = point_of(*work);
    pt.us = r.median_us;
    pt.fit = fit.count(r.batch) > 0;
    by_op[{op, r.dtype}].push_back(pt);
    family[{op, r.dtype}] = work->family;
    const bool by_context = work->family == "indexer" || work->family == "topk";
    measured[{op, r.dtype, r.batch, by_context ? r.context : 0}] = r.median_us;
  }
  for (auto& [key, pts] : by_op) {
    int n_fit = 0;
    for (const Point& p : pts) n_fit += p.fit;
    if (n_fit < 2)
      throw_error("bench step fit: {} {} has {} points at the fit batches, need 2 or more", key.first, key.second,
                  n_fit);
    OpTimeModel m = fit_op(pts);
    m.op = key.first;
    m.dtype = key.second;
    m.family = family[key];
    c.ops.push_back(m);
  }
  // Family sums and the whole layer at every (batch, context) that has a measured layer. A bench without the
  // indexer's scoring (a model whose indexer shape the project's kernel lacks) timed its layer without it too.
  const bool indexer_measured =
      std::any_of(rows.begin(), rows.end(), [](const StepBenchMeasurement& r) { return r.family == "indexer"; });
  for (const StepBenchMeasurement& r : rows) {
    if (r.op != "layer") continue;
    std::map<std::string, std::pair<double, double>> fam;  // family -> (measured, predicted)
    double predicted = 0;
    bool complete = true;
    for (const DecodeOpWork& w : moe_layer_ops(model, r.batch, r.context, ep)) {
      if (w.family == "indexer" && !indexer_measured) continue;
      const OpTimeModel* m = c.find(w.op, w.dtype);
      const bool by_context = w.family == "indexer" || w.family == "topk";
      const auto it = measured.find({w.op, w.dtype, r.batch, by_context ? r.context : 0});
      if (!m || it == measured.end()) {
        complete = false;
        continue;
      }
      const double p = m->predict(w) * w.per_layer;
      fam[w.family].first += it->second * w.per_layer;
      fam[w.family].second += p;
      predicted += p;
    }
    if (!complete) continue;
    const bool held = fit.count(r.batch) == 0;
    for (const auto& [f, v] : fam) c.checks.push_back({"family " + f, r.batch, r.context, v.first, v.second, held});
    c.checks.push_back({"layer", r.batch, r.context, r.median_us, predicted, held});
  }
  return c;
}

}  // namespace hisparse::sim

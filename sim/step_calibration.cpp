// @brief Fitting the per-op time models of a decode layer to `bench step` rows, checking sums, YAML in and out.
#include "sim/step_calibration.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/csv_line.h"
#include "core/yaml_reader.h"

namespace hisparse::sim {
namespace {

double to_number(const std::string& text, const std::string& where) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != 0 || !std::isfinite(v) || v < 0)
    throw_error("{}: '{}' is not a non-negative number", where, text);
  return v;
}

struct Point {
  double bytes, flops, tokens, blocks, us;
  bool fit;
  bool by_work = false;
};

/// Log-log interpolation in a (bytes, µs) table (see OpTimeModel::table).
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

constexpr int kFormCount = 4;
const char* kForms[kFormCount] = {"max", "fixed+max", "sum", "smooth"};

int form_index(const std::string& form) {
  for (int i = 0; i < kFormCount; ++i)
    if (form == kForms[i]) return i;
  return -1;
}

/// The model's parameters in the units the search uses: µs, µs per byte, per FLOP, per token, per wave.
struct Params {
  int form = 0;
  double a = 0, ib = 0, if_ = 0, c = 0, wave_blocks = 0, per_wave = 0;
};

double shape(const Params& p, double bytes, double flops, double tokens, double blocks) {
  const double tb = bytes * p.ib, tf = flops * p.if_;
  double t = 0;
  switch (p.form) {
    case 0: t = std::max({p.a, tb, tf}); break;
    case 1: t = p.a + std::max(tb, tf); break;
    case 2: t = p.a + tb + tf; break;
    default: t = std::sqrt(std::sqrt(p.a * p.a * p.a * p.a + tb * tb * tb * tb + tf * tf * tf * tf)); break;
  }
  t += tokens * p.c;
  if (p.wave_blocks > 0) t += p.per_wave * std::ceil(blocks / p.wave_blocks);
  return t;
}

/// Sum of squared relative errors over the fit points.
double loss(const Params& p, const std::vector<Point>& pts) {
  double s = 0;
  for (const Point& q : pts)
    if (q.fit) {
      const double e = (shape(p, q.bytes, q.flops, q.tokens, q.blocks) - q.us) / q.us;
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
      for (double Params::*field : {&Params::a, &Params::ib, &Params::if_, &Params::c, &Params::per_wave})
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

/// Fits one op: for each roofline shape, rates from a log grid around the measured ratios and the floor from the
/// measured times, then a pattern search (from no per-token term, and from a small one); the wave shape where the
/// op's kernel reports its block count. The shape with the smallest fit loss wins.
OpTimeModel fit_op(const std::vector<Point>& pts) {
  if (!pts.empty() && pts.front().by_work) {
    // The table of the fit points (the median time of each distinct work).
    std::map<double, std::vector<double>> at;
    for (const Point& q : pts)
      if (q.fit) at[q.bytes].push_back(q.us);
    OpTimeModel m;
    m.form = "table";
    for (auto& [x, ys] : at) {
      std::sort(ys.begin(), ys.end());
      m.table.emplace_back(x, ys[ys.size() / 2]);
    }
    record_errors(m, pts, [&](const Point& q) { return table_us(m.table, q.bytes); });
    return m;
  }
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
          const double waves = std::ceil(pt.blocks / w), r = pt.us - shape(q, pt.bytes, pt.flops, pt.tokens, pt.blocks);
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
  if (best.per_wave < 1e-3) best.wave_blocks = 0, best.per_wave = 0;  // under a nanosecond a wave: no wave term
  OpTimeModel m;
  m.form = kForms[best.form];
  m.fixed_us = best.a;
  m.bytes_per_s = best.ib > 0 ? 1e6 / best.ib : 0;
  m.flops_per_s = best.if_ > 0 ? 1e6 / best.if_ : 0;
  m.per_token_us = best.c;
  m.wave_blocks = best.wave_blocks;
  m.per_wave_us = best.per_wave;
  record_errors(m, pts, [&](const Point& q) { return shape(best, q.bytes, q.flops, q.tokens, q.blocks); });
  return m;
}

}  // namespace

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
  return shape(p, w.bytes, w.flops, w.tokens, w.blocks);
}

std::vector<StepBenchMeasurement> read_step_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_error("{}: cannot open the bench step CSV", path);
  std::string line;
  const std::string header = "device,model,op,family,dtype,impl,batch,context,median_us,flops,bytes";
  if (!std::getline(in, line) || line != header)
    throw_error("{}: line 1 is not the bench step header '{}' (write it with `hisparse bench step --csv`)", path,
                header);
  std::vector<StepBenchMeasurement> rows;
  for (int ln = 2; std::getline(in, line); ++ln) {
    if (line.empty()) continue;
    const auto f = split_csv_line(line);
    const std::string where = fmt::format("{}: line {}", path, ln);
    if (f.size() != 11) throw_error("{}: {} columns, expected 11", where, f.size());
    StepBenchMeasurement r{f[0], f[1], f[2], f[3], f[4], f[5]};
    r.batch = int(to_number(f[6], where + " batch"));
    r.context = int64_t(to_number(f[7], where + " context"));
    r.median_us = to_number(f[8], where + " median_us");
    r.flops = to_number(f[9], where + " flops");
    r.bytes = to_number(f[10], where + " bytes");
    if (r.op != "graph_gap" && !(r.median_us > 0)) throw_error("{}: median_us must be > 0", where);
    rows.push_back(r);
  }
  if (rows.empty()) throw_error("{}: no rows", path);
  return rows;
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
    by_op[{op, r.dtype}].push_back({work->bytes, work->flops, work->tokens, work->blocks, r.median_us,
                                    fit.count(r.batch) > 0, work->by_work});
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
  // Family sums and the whole layer at every (batch, context) that has a measured layer.
  for (const StepBenchMeasurement& r : rows) {
    if (r.op != "layer") continue;
    std::map<std::string, std::pair<double, double>> fam;  // family -> (measured, predicted)
    double predicted = 0;
    bool complete = true;
    for (const DecodeOpWork& w : moe_layer_ops(model, r.batch, r.context, ep)) {
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

double predict_moe_layer_us(const StepCalibration& c, const ModelSpec& model, int batch, int64_t context) {
  double t = 0;
  for (const DecodeOpWork& w : moe_layer_ops(model, batch, context, c.ep)) {
    const OpTimeModel* m = c.find(w.op, w.dtype);
    if (!m) throw_error("step calibration of {}: no model for op {} ({})", c.device, w.op, w.dtype);
    t += m->predict(w) * w.per_layer;
  }
  return t;
}

std::string step_calibration_yaml(const StepCalibration& c) {
  std::ostringstream os;
  os << "# Per-op time models of one decode layer, fitted to `hisparse bench step` rows (sim/step_calibration.h).\n"
        "# time_us = shape + per_token_us * tokens + per_wave_us * ceil(blocks / wave_blocks), where shape is\n"
        "#   max: max(fixed, bytes/bytes_per_s, flops/flops_per_s)   fixed+max: fixed + max(bytes/.., flops/..)\n"
        "#   sum: fixed + bytes/.. + flops/..   smooth: (fixed^4 + (bytes/..)^4 + (flops/..)^4)^(1/4)\n"
        "# (a rate or wave size of 0 leaves its term out; work per op: core/decode_layer_ops.h). Errors are\n"
        "# max |predicted - measured| / measured over the fit batches and over the held-out ones.\n";
  os << fmt::format("device: \"{}\"\nmodel: {}\ndate: \"{}\"\nmade_from: \"{}\"\nep: {}\ngraph_gap_us: {:.4g}\n", c.device,
                    c.model, c.date, c.made_from, c.ep, c.graph_gap_us);
  os << "fit_batches: [";
  for (size_t i = 0; i < c.fit_batches.size(); ++i) os << (i ? ", " : "") << c.fit_batches[i];
  os << "]\nops:\n";
  for (const OpTimeModel& m : c.ops) {
    std::string table;
    for (const auto& [x, y] : m.table) table += fmt::format("{}[{:.6g}, {:.6g}]", table.empty() ? "" : ", ", x, y);
    os << fmt::format("  - {{op: {}, dtype: {}, family: {}, form: {}, fixed_us: {:.6g}, bytes_per_s: {:.6g}, "
                      "flops_per_s: {:.6g}, per_token_us: {:.6g}, wave_blocks: {:.0f}, per_wave_us: {:.6g}, "
                      "fit_max_error: {:.4f}, held_out_max_error: {:.4f}, fit_points: {}, held_out_points: {}{}}}\n",
                      m.op, m.dtype, m.family, m.form, m.fixed_us, m.bytes_per_s, m.flops_per_s, m.per_token_us,
                      m.wave_blocks, m.per_wave_us, m.fit_max_error, m.held_out_max_error, m.fit_points,
                      m.held_out_points, m.form == "table" ? ", table: [" + table + "]" : "");
  }
  std::set<std::string> whats;
  for (const StepCheck& k : c.checks) whats.insert(k.what);
  os << "held_out_max_error:\n";
  for (const std::string& w : whats) os << fmt::format("  \"{}\": {:.4f}\n", w, c.max_check_error(w, true));
  return os.str();
}

StepCalibration load_step_calibration(const std::string& path) {
  const YAML::Node root = load_yaml_file(path);
  StrictMap top(root, path, "");
  StepCalibration c;
  for (const char* k : {"device", "model", "date", "made_from", "ops", "fit_batches"}) top.require(k);
  top.get("device", &c.device);
  top.get("model", &c.model);
  top.get("date", &c.date);
  top.get("made_from", &c.made_from);
  top.get("ep", &c.ep, 1, 1 << 16);
  top.get("graph_gap_us", &c.graph_gap_us, 0, 1e6);
  for (const YAML::Node& b : top.sequence("fit_batches")) {
    int v = 0;
    if (!b.IsScalar() || !YAML::convert<int>::decode(b, v) || v < 1)
      throw_error("{}: fit_batches: {} is not a batch size >= 1", path, describe_node(b));
    c.fit_batches.push_back(v);
  }
  int i = 0;
  for (const YAML::Node& n : top.sequence("ops")) {
    StrictMap op(n, path, fmt::format("ops[{}]", i++));
    OpTimeModel m;
    for (const char* k : {"op", "dtype", "form", "fixed_us", "bytes_per_s", "flops_per_s"}) op.require(k);
    op.get("op", &m.op);
    op.get("dtype", &m.dtype);
    op.get("family", &m.family);
    op.get_choice("form", &m.form, {"max", "fixed+max", "sum", "smooth", "table"});
    op.get("fixed_us", &m.fixed_us, 0, 1e9);
    op.get("bytes_per_s", &m.bytes_per_s, 0, 1e30);
    op.get("flops_per_s", &m.flops_per_s, 0, 1e30);
    op.get("per_token_us", &m.per_token_us, 0, 1e9);
    op.get("wave_blocks", &m.wave_blocks, 0, 1e9);
    op.get("per_wave_us", &m.per_wave_us, 0, 1e9);
    if (m.form == "table") {
      for (const YAML::Node& row : op.sequence("table")) {
        double x = 0, y = 0;
        if (!row.IsSequence() || row.size() != 2 || !YAML::convert<double>::decode(row[0], x) ||
            !YAML::convert<double>::decode(row[1], y) || !(x > 0) || !(y > 0) ||
            (!m.table.empty() && !(x > m.table.back().first)))
          throw_error("{}: ops[{}] ({}): table row {} is not [bytes, us] with both > 0 and bytes ascending", path,
                      i - 1, m.op, describe_node(row));
        m.table.emplace_back(x, y);
      }
      if (m.table.empty()) throw_error("{}: ops[{}] ({}): form table needs a table", path, i - 1, m.op);
    }
    op.get("fit_max_error", &m.fit_max_error, 0, 1e6);
    op.get("held_out_max_error", &m.held_out_max_error, 0, 1e6);
    op.get("fit_points", &m.fit_points, 0, 1 << 20);
    op.get("held_out_points", &m.held_out_points, 0, 1 << 20);
    op.finish();
    if (m.form != "table" && m.bytes_per_s == 0 && m.flops_per_s == 0 && m.fixed_us == 0 && m.per_token_us == 0 &&
        m.per_wave_us == 0)
      throw_error("{}: ops[{}] ({}) has no term: every time would be 0", path, i - 1, m.op);
    c.ops.push_back(m);
  }
  if (top.has("held_out_max_error")) top.child("held_out_max_error");  // for readers; a refit recomputes it
  if (c.ops.empty()) throw_error("{}: ops: empty", path);
  top.finish();
  return c;
}

std::string step_calibration_table(const StepCalibration& c) {
  std::string out = fmt::format("{:<18} {:<5} {:<13} {:<10} {:>9} {:>9} {:>9} {:>8} {:>13} {:>8} {:>9}\n", "op",
                                "dtype", "family", "form", "fixed_us", "GB/s", "TFLOP/s", "us/token", "wave", "fit_err",
                                "held_err");
  for (const OpTimeModel& m : c.ops)
    out += fmt::format("{:<18} {:<5} {:<13} {:<10} {:>9.2f} {:>9} {:>9} {:>8} {:>13} {:>7.1f}% {:>8.1f}%\n", m.op,
                       m.dtype, m.family, m.form, m.fixed_us,
                       m.bytes_per_s > 0 ? fmt::format("{:.0f}", m.bytes_per_s / 1e9) : "-",
                       m.flops_per_s > 0 ? fmt::format("{:.1f}", m.flops_per_s / 1e12) : "-",
                       m.per_token_us > 0 ? fmt::format("{:.3f}", m.per_token_us) : "-",
                       m.wave_blocks > 0 ? fmt::format("{:.1f}us/{:.0f}", m.per_wave_us, m.wave_blocks) : "-",
                       100 * m.fit_max_error, 100 * m.held_out_max_error);
  std::set<std::string> whats;
  for (const StepCheck& k : c.checks) whats.insert(k.what);
  out += fmt::format("\n{:<22} {:>14} {:>14}\n", "sum checked", "fit max |err|", "held-out max |err|");
  for (const std::string& w : whats)
    out += fmt::format("{:<22} {:>13.1f}% {:>13.1f}%\n", w, 100 * c.max_check_error(w, false),
                       100 * c.max_check_error(w, true));
  return out;
}

}  // namespace hisparse::sim

// @brief Fitting the calibration model: weighted least squares (relative errors) for the fixed and per-request
// terms, a coarse-to-fine search over the two copy rates, and the held-out accuracy table.
#include "sim/calibration/calibration_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/csv_reader.h"

namespace hisparse::sim {
namespace {

// ---------- CSV ----------

double to_double(const std::string& text, const std::string& where) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw_error("{}: '{}' is not a number", where, text);
}

/// "B=1 H=4096 K=2048 miss=5%" -> the value after "H=" (0 when absent).
int32_t config_value(const std::string& config, const std::string& key, const std::string& where) {
  const std::string tag = key + "=";
  size_t at = 0;
  while ((at = config.find(tag, at)) != std::string::npos) {
    if (at == 0 || config[at - 1] == ' ') {
      const size_t end = config.find(' ', at);
      return static_cast<int32_t>(to_double(config.substr(at + tag.size(), end - at - tag.size()), where));
    }
    at += tag.size();
  }
  return 0;
}

// ---------- least squares ----------

/// Up to six unknowns: the plan's fixed, per-request and per-slot terms, the copy's fixed term, and (the exact
/// polish of the linear form) the copy's time per row at the link rate and at the per-request rate.
constexpr int kMaxColumns = 6;
using Row = std::array<double, kMaxColumns>;

/// Minimises sum(w_i^2 (A_i x - y_i)^2) over x >= 0 (columns with a negative solution are dropped, one at a time).
/// Returns the weighted residual sum of squares; x has A's column count.
double nonneg_least_squares(const std::vector<Row>& A, const std::vector<double>& y, const std::vector<double>& w,
                            int cols, Row* x) {
  // Columns scaled to a largest magnitude of 1 first: the normal equations square the columns' spread (1 against
  // a copy's 10^5 rows), which would cost the exact polish its last digits.
  Row scale{};
  for (int j = 0; j < cols; ++j) {
    for (const Row& r : A) scale[j] = std::max(scale[j], std::fabs(r[j]));
    if (!(scale[j] > 0)) scale[j] = 1;
  }
  std::array<bool, kMaxColumns> on{};
  for (int j = 0; j < cols; ++j) on[j] = true;
  for (;;) {
    std::vector<int> idx;
    for (int j = 0; j < cols; ++j)
      if (on[j]) idx.push_back(j);
    const int n = static_cast<int>(idx.size());
    double M[kMaxColumns][kMaxColumns + 1] = {};
    for (size_t i = 0; i < A.size(); ++i) {
      const double ww = w[i] * w[i];
      for (int a = 0; a < n; ++a) {
        const double xa = A[i][idx[a]] / scale[idx[a]];
        for (int b = 0; b < n; ++b) M[a][b] += ww * xa * A[i][idx[b]] / scale[idx[b]];
        M[a][n] += ww * xa * y[i];
      }
    }
    // Gaussian elimination with partial pivoting; a (near-)singular column is dropped (its coefficient 0).
    Row sol{};
    bool singular = false;
    int bad = -1;
    for (int c = 0; c < n && !singular; ++c) {
      int p = c;
      for (int r = c + 1; r < n; ++r)
        if (std::fabs(M[r][c]) > std::fabs(M[p][c])) p = r;
      if (!(std::fabs(M[p][c]) > 1e-300)) { singular = true; bad = c; break; }
      for (int k = 0; k <= n; ++k) std::swap(M[c][k], M[p][k]);
      for (int r = 0; r < n; ++r) {
        if (r == c) continue;
        const double f = M[r][c] / M[c][c];
        for (int k = c; k <= n; ++k) M[r][k] -= f * M[c][k];
      }
    }
    if (singular) { on[idx[bad]] = false; continue; }
    int most_negative = -1;
    for (int a = 0; a < n; ++a) {
      sol[idx[a]] = M[a][n] / M[a][a] / scale[idx[a]];
      if (sol[idx[a]] < 0 && (most_negative < 0 || sol[idx[a]] < sol[idx[most_negative]])) most_negative = a;
    }
    if (most_negative >= 0) { on[idx[most_negative]] = false; continue; }
    double rss = 0;
    for (size_t i = 0; i < A.size(); ++i) {
      double p = 0;
      for (int j = 0; j < cols; ++j) p += A[i][j] * sol[j];
      rss += w[i] * w[i] * (p - y[i]) * (p - y[i]);
    }
    *x = sol;
    return rss;
  }
}

bool in_list(double v, const std::vector<double>& list) {
  for (double x : list)
    if (std::fabs(x - v) < 1e-6) return true;
  return false;
}

bool in_list(int32_t v, const std::vector<int32_t>& list) { return std::find(list.begin(), list.end(), v) != list.end(); }

/// The latency-round shape of a regime's fused copy, fixed by the kernel (not fitted): `slices` blocks per request
/// serve the misses of their LRU slices, `rows_per_round` rows in flight per block. Off: the linear copy.
struct RoundShape {
  bool on = false;
  int64_t slices = 1;
  int64_t rows_per_round = 0;
};

/// Exact polish of the linear form's search: once it is known which bound sets each point's copy rate (the rate R,
/// or B × R_req where that is lower), the copy time is linear in 1/R and 1/R_req, so every constant comes from one
/// weighted least squares, repeated while the assignment changes. Points made exactly by the model are then fitted
/// exactly; the search alone stops at its grid's resolution (2 % on the copy's fixed term). Kept only where it
/// lowers the loss and R stays within the link's bulk rate, as the search's bounds require.
void polish_linear_form(const std::vector<CalibrationPoint>& train, double rb, double p1_us, bool fixed, bool per_slot,
                        double h2d_bulk, double& best, double& best_rate, double& best_second, Row& best_x) {
  double rate = best_rate, second = best_second;
  for (int iteration = 0; iteration < 8; ++iteration) {
    // rate_at_bulk: the rate held at the link's bulk rate (the search's upper bound) and the rest refitted, when the
    // free solution lands above it (rounding in the points puts a rate at the bound a little over it).
    Row x{};
    double e = 0;
    for (bool rate_at_bulk : {false, true}) {
      std::vector<Row> A;
      std::vector<double> y, w;
      for (const CalibrationPoint& p : train) {
        const double rows = static_cast<double>(p.rows), B = std::max(1, p.batch);
        const bool per_request_binds = second > 0 && second * B < rate;
        const double at_rate = per_request_binds ? 0.0 : rows;
        A.push_back({1.0, fixed ? 0.0 : B, per_slot ? double(p.H) : 0.0, p.rows > 0 ? 1.0 : 0.0,
                     rate_at_bulk ? 0.0 : at_rate, per_request_binds ? rows / B : 0.0});
        y.push_back(p.measured_us - p1_us * B - (rate_at_bulk ? at_rate * rb / h2d_bulk * 1e6 : 0.0));
        w.push_back(1.0 / p.measured_us);
      }
      e = nonneg_least_squares(A, y, w, kMaxColumns, &x);
      if (rate_at_bulk) x[4] = rb * 1e6 / h2d_bulk;
      if (!(x[4] > 0)) return;  // no copy rate: the search's answer stands
      if (rb * 1e6 / x[4] <= h2d_bulk) break;
    }
    const double new_rate = std::min(rb * 1e6 / x[4], h2d_bulk), new_second = x[5] > 0 ? rb * 1e6 / x[5] : 0.0;
    if (!(e <= best)) return;
    const bool same = new_second > 0 ? second > 0 : second == 0;
    best = e, best_rate = new_rate, best_second = new_second;
    best_x = {x[0], x[1], x[2], x[3], 0.0, 0.0};
    if (same && std::fabs(new_rate - rate) <= 1e-12 * rate && std::fabs(new_second - second) <= 1e-12 * (second + 1))
      return;
    rate = new_rate, second = new_second;
  }
}

/// Swap-in model of one mode and regime, fitted to `train` (rows = 0 points fix the plan; the rest the copy):
///   T = p0 + p1*B + p2*H + [rows > 0] * (c0 + smax(rows * row_bytes / min(R, B * R_req), rounds * tau))
/// with tau = 0 (the linear form) unless `shape.on`, and R_req = 0 when it is (the rounds are the per-request
/// bound there). p0, p1, p2, c0: non-negative weighted least squares (relative errors); R and R_req or tau: a
/// coarse-to-fine search in log space.
/// `fixed_per_request_ns` >= 0 fixes p1 instead of fitting it and turns the per-request rate off (R_req = 0): with
/// one batch size p1 and R_req are not identifiable (they trade against p0 and R).
SwapInRegimeCost fit_swap_in(const std::vector<CalibrationPoint>& train, double h2d_bulk, int64_t row_bytes,
                             double fixed_per_request_ns = -1, RoundShape shape = {}) {
  std::set<int32_t> hs;
  for (const auto& p : train) hs.insert(p.H);
  const bool per_slot = hs.size() > 1;  // one H: the walk is inside the fixed term
  const bool fixed = fixed_per_request_ns >= 0;
  const double p1_us = fixed ? fixed_per_request_ns * 1e-3 : 0.0;
  const double rb = static_cast<double>(row_bytes);
  SwapInRegimeCost form;  // only its round shape: copy_rounds() is the simulator's own count
  form.copy_slices = shape.slices;
  form.copy_rows_per_round = shape.rows_per_round;
  std::vector<double> rounds;
  for (const auto& p : train) {
    SwapInCall call;
    call.requests = std::max(1, p.batch);
    call.rows = static_cast<double>(p.rows);
    call.row_bytes = row_bytes;
    call.H = p.H;
    call.K = p.K;
    rounds.push_back(form.copy_rounds(call));
  }
  // `second` is the per-request rate (linear form) or the round latency in us (rounds on); 0 = none.
  auto evaluate = [&](double rate, double second, Row* x) {
    std::vector<Row> A;
    std::vector<double> y, w;
    for (size_t i = 0; i < train.size(); ++i) {
      const CalibrationPoint& p = train[i];
      const double rows = static_cast<double>(p.rows), B = std::max(1, p.batch);
      double r = rate;
      if (!shape.on && second > 0) r = std::min(r, second * B);
      double copy_us = rows * rb / r * 1e6;
      if (shape.on && rows > 0 && second > 0) copy_us = std::hypot(copy_us, rounds[i] * second);  // smax, swap_in_cost.cpp
      A.push_back({1.0, fixed ? 0.0 : B, per_slot ? double(p.H) : 0.0, p.rows > 0 ? 1.0 : 0.0, 0.0, 0.0});
      y.push_back(p.measured_us - copy_us - p1_us * B);
      w.push_back(1.0 / p.measured_us);
    }
    return nonneg_least_squares(A, y, w, 4, x);
  };
  // Coarse-to-fine search in log space; the second term stays "none" unless it lowers the error.
  double lo = std::log(1e8), hi = std::log(h2d_bulk);
  double rlo = shape.on ? std::log(1e-2) : std::log(1e7), rhi = shape.on ? std::log(1e2) : std::log(std::max(h2d_bulk, 1e12));
  double best_rate = h2d_bulk, best_second = 0;
  Row best_x{};
  double best = std::numeric_limits<double>::infinity();
  const bool search_second = shape.on || !fixed;
  for (int round = 0; round < 5; ++round) {
    constexpr int kN = 48;
    for (int i = 0; i <= kN; ++i) {
      const double rate = std::exp(lo + (hi - lo) * i / kN);
      for (int j = -1; j <= (search_second ? kN : -1); ++j) {
        const double second = j < 0 ? 0.0 : std::exp(rlo + (rhi - rlo) * j / kN);
        Row x{};
        const double e = evaluate(rate, second, &x);
        if (e < best * (1 - 1e-9)) { best = e; best_rate = rate; best_second = second; best_x = x; }
      }
    }
    const double span = (hi - lo) / 8, rspan = (rhi - rlo) / 8;
    lo = std::log(best_rate) - span;
    hi = std::min(std::log(h2d_bulk), std::log(best_rate) + span);
    if (best_second > 0) { rlo = std::log(best_second) - rspan; rhi = std::log(best_second) + rspan; }
  }
  if (!shape.on) polish_linear_form(train, rb, p1_us, fixed, per_slot, h2d_bulk, best, best_rate, best_second, best_x);
  SwapInRegimeCost c;
  c.plan_fixed_ns = best_x[0] * 1e3;
  c.plan_per_request_ns = fixed ? fixed_per_request_ns : best_x[1] * 1e3;
  c.plan_per_slot_ns = best_x[2] * 1e3;
  c.copy_fixed_ns = best_x[3] * 1e3;
  c.row_bytes_per_s = best_rate;
  if (shape.on) {
    if (best_second > 0) {  // no rounds seen: the linear form, written without the round keys
      c.copy_round_ns = best_second * 1e3;
      c.copy_slices = shape.slices;
      c.copy_rows_per_round = shape.rows_per_round;
    }
  } else {
    c.per_request_row_bytes_per_s = best_second;
  }
  // The intercept carries the per-request term of one request so that plan(B) = fixed + per_request * B holds.
  return c;
}

/// T = fixed + rows * row_bytes / rate (gather, backup).
RowRateCost fit_row_rate(const std::vector<CalibrationPoint>& pts, int64_t row_bytes) {
  RowRateCost r;
  if (pts.size() < 2) return r;
  std::vector<Row> A;
  std::vector<double> y, w;
  for (const auto& p : pts) {
    A.push_back({1.0, static_cast<double>(p.rows) * static_cast<double>(row_bytes), 0, 0, 0, 0});
    y.push_back(p.measured_us * 1e-6);
    w.push_back(1.0 / p.measured_us);
  }
  Row x{};
  nonneg_least_squares(A, y, w, 2, &x);
  if (!(x[1] > 0)) return r;
  r.fixed_ns = x[0] * 1e9;
  r.row_bytes_per_s = 1.0 / x[1];
  return r;
}

double predict_us(const Calibration& c, const CalibrationPoint& p) {
  if (p.op == "swap-in") {
    const SwapInCopyCost& s = p.mode == "separate" ? c.separate : c.fused;
    return static_cast<double>(predict_swap_in_copy_ns(s, c.h2d_bulk_bytes_per_s, c.row_bytes, p.batch, p.H, p.rows, p.K)) *
           1e-3;
  }
  const RowRateCost& r = p.op == "gather" ? c.gather : c.backup;
  if (!r.present()) return 0;
  return (r.fixed_ns + static_cast<double>(p.rows) * static_cast<double>(c.row_bytes) / r.row_bytes_per_s * 1e9) * 1e-3;
}

}  // namespace

std::vector<int32_t> default_fit_batches(const std::vector<CalibrationPoint>& points, int32_t small_batch_max) {
  if (small_batch_max <= 0) return {1, 4, 16, 128};
  // Each regime's smallest and largest measured size: two per regime (its per-request terms are identifiable) and
  // the sizes between them held out, which tests interpolation inside each kernel's range.
  std::set<int32_t> regime[2];
  for (const auto& p : points)
    if (p.op == "swap-in" && p.batch >= 1) regime[p.batch <= small_batch_max ? 1 : 0].insert(p.batch);
  std::set<int32_t> out;
  for (const auto& r : regime)
    if (!r.empty()) {
      out.insert(*r.begin());
      out.insert(*r.rbegin());
    }
  return {out.begin(), out.end()};
}

std::vector<int32_t> default_fit_H(const std::vector<CalibrationPoint>& points) {
  std::map<int32_t, int> count;
  for (const auto& p : points)
    if (p.op == "swap-in" && p.H > 0) ++count[p.H];
  std::set<int32_t> out;
  if (count.size() <= 2) {
    for (const auto& [h, n] : count) out.insert(h);
  } else {
    // The extremes (the per-slot term is identified across them) and the H of the batch x miss sweep (the most
    // points): the H in between are held out, which tests the per-slot term and the copy's slice bound there.
    out.insert(count.begin()->first);
    out.insert(count.rbegin()->first);
    const auto main = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    out.insert(main->first);
  }
  return {out.begin(), out.end()};
}

CalibrationInput read_bench_csv(const std::string& path) {
  CsvReader csv(path, "the bench CSV", "a `hisparse bench --csv` header");
  const std::vector<std::string>& header = csv.header();
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* need : {"device", "op", "config", "mode", "median_us", "ceiling_gbps", "gbps", "batch", "miss_rate", "rows"})
    csv.column(need, "expected a `hisparse bench --csv` file");
  CalibrationInput in;
  int sweep_block = 0;           // block size of the swap-in-sweep rows (files with a block column)
  std::vector<int> point_block;  // block of each point (0: not given)
  std::vector<std::string> v;
  while (csv.next(v)) {
    const std::string where = csv.where();
    auto num = [&](const char* name) { return to_double(v[col[name]], where + " column " + name); };
    const std::string op = v[col["op"]], config = v[col["config"]];
    // SGLang's kernel bench (scenarios/measurements/sglang_swapin_*.csv) names the separate copy kernel `split`.
    const std::string mode = v[col["mode"]] == "split" ? "separate" : v[col["mode"]];
    // Its rows carry the launch's block size: a swap-in at another block than the sweep's is another configuration.
    const int block = col.count("block") ? static_cast<int>(num("block")) : 0;
    if (in.device.empty()) in.device = v[col["device"]];
    if (op == "swap-in-kernel") {
      // Not a timing: where the cluster kernel hands over to the one-block kernel (median_us is 0 here), and how
      // many blocks its cluster has per request.
      if (mode == "cluster-blocks") {
        const double c = num("batch");
        if (!(c >= 0 && c <= 1024) || c != std::floor(c))
          throw_error("{}: swap-in-kernel cluster-blocks {} is not a block count >= 0", where, v[col["batch"]]);
        in.cluster_blocks = static_cast<int32_t>(c);
        continue;
      }
      if (mode != "cluster") continue;
      const double bc = num("batch");
      if (!(bc >= 0 && bc <= (1 << 20)) || bc != std::floor(bc))
        throw_error("{}: swap-in-kernel batch {} is not a batch size >= 0", where, v[col["batch"]]);
      in.small_batch_max = static_cast<int32_t>(bc);
      continue;
    }
    const double us = num("median_us"), ceiling = num("ceiling_gbps") * 1e9;
    if (!(us > 0)) throw_error("{}: median_us {} must be > 0", where, us);
    if (op == "swap-in-sweep" && block > 0) {
      if (sweep_block > 0 && block != sweep_block)
        throw_error("{}: swap-in-sweep rows at blocks {} and {}; expected one launch configuration", where, sweep_block, block);
      sweep_block = block;
    }
    CalibrationPoint p;
    p.mode = mode;
    p.measured_us = us;
    p.rows = static_cast<int64_t>(num("rows"));
    p.batch = static_cast<int32_t>(num("batch"));
    if (op == "swap-in-sweep" || (op == "swap-in" && p.batch > 0 && (mode == "fused" || mode == "separate"))) {
      p.op = "swap-in";
      p.miss_rate = num("miss_rate");
      p.H = config_value(config, "H", where);
      p.K = config_value(config, "K", where);
      if (p.H <= 0 || p.K <= 0) throw_error("{}: config '{}' lacks H= and K=", where, config);
      in.points.push_back(p);
      point_block.push_back(block);
      in.h2d_bulk_bytes_per_s = std::max(in.h2d_bulk_bytes_per_s, ceiling);
    } else if ((op == "gather" || op == "backup") && mode == "zero-copy") {
      p.op = op;
      in.points.push_back(p);
      point_block.push_back(0);
      double& bulk = op == "gather" ? in.h2d_bulk_bytes_per_s : in.d2h_bulk_bytes_per_s;
      bulk = std::max(bulk, ceiling);
    } else if (op == "bulk") {
      double& bulk = mode == "d2h" ? in.d2h_bulk_bytes_per_s : in.h2d_bulk_bytes_per_s;
      bulk = std::max(bulk, num("gbps") * 1e9);
    } else if (op == "launch" && mode == "per-call") {
      in.timing_overhead_ns = us * 1e3;
    }
  }
  // Swap-in calls at another block size than the sweep's are another launch configuration: not this kernel's terms.
  if (sweep_block > 0) {
    std::vector<CalibrationPoint> kept;
    for (size_t i = 0; i < in.points.size(); ++i)
      if (point_block[i] == 0 || point_block[i] == sweep_block) kept.push_back(in.points[i]);
    in.points = std::move(kept);
  }
  return in;
}

Calibration fit_calibration(const CalibrationInput& in, const FitOptions& o) {
  if (!(in.h2d_bulk_bytes_per_s > 0)) throw_error("calibration: no bulk host->device rate among the measurements");
  Calibration c;
  c.device = in.device;
  c.date = o.date;
  c.made_from = o.made_from;
  c.row_bytes = o.row_bytes;
  c.copy_mode = o.copy_mode;
  c.h2d_bulk_bytes_per_s = in.h2d_bulk_bytes_per_s;
  c.d2h_bulk_bytes_per_s = in.d2h_bulk_bytes_per_s > 0 ? in.d2h_bulk_bytes_per_s : in.h2d_bulk_bytes_per_s;
  c.timing_overhead_ns = in.timing_overhead_ns;
  const int32_t bc = o.small_batch_max >= 0 ? o.small_batch_max : in.small_batch_max;
  auto small = [bc](int32_t batch) { return bc > 0 && batch >= 1 && batch <= bc; };
  c.fit_batches = o.fit_batches.empty() ? default_fit_batches(in.points, bc) : o.fit_batches;
  c.fit_miss_rates = o.fit_miss_rates;
  c.fit_H = o.fit_H.empty() ? default_fit_H(in.points) : o.fit_H;
  c.points = in.points;
  for (auto& p : c.points)
    p.set = p.op != "swap-in" ? ""
            : in_list(p.batch, c.fit_batches) && in_list(p.miss_rate, o.fit_miss_rates) && in_list(p.H, c.fit_H) ? "fit"
                                                                                                                : "held-out";
  for (const char* mode : {"fused", "separate"}) {
    // Calls that copy nothing time the plan alone, whatever the copy mode: both modes fit them.
    std::vector<CalibrationPoint> train[2];  // [0] batches above Bc (or all), [1] batches 1..Bc
    for (const auto& p : c.points)
      if (p.op == "swap-in" && p.set == "fit" && (p.mode == mode || p.rows == 0)) train[small(p.batch) ? 1 : 0].push_back(p);
    auto copies = [&](const std::vector<CalibrationPoint>& t) {
      return std::any_of(t.begin(), t.end(), [&](const auto& p) { return p.mode == mode && p.rows > 0; });
    };
    if (!copies(train[0]) && !copies(train[1])) continue;
    const int regimes = bc > 0 ? 2 : 1;
    const char* names[2] = {bc > 0 ? "large-batch" : "", "small-batch"};
    std::set<int32_t> batches[2];
    for (int r = 0; r < regimes; ++r) {
      const std::string what = fmt::format("swap-in {}{}{}", mode, bc > 0 ? " " : "",
                                           bc > 0 ? fmt::format("{} (batches {})", names[r], r ? fmt::format("1..{}", bc)
                                                                                               : fmt::format("> {}", bc))
                                                  : "");
      if (!copies(train[r]))
        throw_error("calibration: {} has no fit points with misses (Bc = {}: put batch sizes on both sides of it in "
                    "the fit batches)", what, bc);
      if (train[r].size() < 3) throw_error("calibration: {} has {} fit points, need >= 3", what, train[r].size());
      for (const auto& p : train[r]) batches[r].insert(p.batch);
    }
    SwapInCopyCost& out = std::string(mode) == "fused" ? c.fused : c.separate;
    out.calibrated = true;
    out.small_batch_max = bc;
    SwapInRegimeCost* dest[2] = {&out.large(), &out.small};
    // A regime fitted at one batch size cannot tell its per-request terms from its fixed ones: both are set to 0
    // (plan flat over the regime, no per-request copy bound: the rate seen at that batch is its row rate). Not shared
    // from the other kernel: on the H200 the cluster kernel's plan grows ~0.5 us per request up to B = 16 (8 SMs per
    // request), the one-block kernel's by ~0.03 us, so a shared slope is far worse than none.
    // The fused copy of the cluster kernel (small regime, C > 1 blocks per request) runs in latency rounds bounded by
    // the busiest block's LRU slice (sim/cost/terms/swap_in_cost.h): its rounds are fitted. Everywhere else the copy is linear
    // in rows (the separate kernel spreads a request's rows over ceil(K / 16) blocks, one round; the one-block
    // kernel's rounds are the per-request rate bound), and the linear form is fitted as before.
    const int32_t slices = o.cluster_blocks >= 0 ? o.cluster_blocks : in.cluster_blocks > 0 ? in.cluster_blocks : 8;
    for (int r = 0; r < regimes; ++r) {
      RoundShape shape;
      shape.on = o.copy_rounds && std::string(mode) == "fused" && r == 1 && slices > 1;
      shape.slices = slices;
      shape.rows_per_round = o.copy_rows_per_round;
      *dest[r] = fit_swap_in(train[r], c.h2d_bulk_bytes_per_s, o.row_bytes, batches[r].size() < 2 ? 0.0 : -1.0, shape);
    }
  }
  if (!c.swap_in().calibrated) throw_error("calibration: no swap-in {} points with misses to fit", o.copy_mode);
  std::vector<CalibrationPoint> g, b;
  for (const auto& p : c.points) {
    if (p.op == "gather") g.push_back(p);
    if (p.op == "backup") b.push_back(p);
  }
  c.gather = fit_row_rate(g, o.row_bytes);
  c.backup = fit_row_rate(b, o.row_bytes);
  for (auto& p : c.points) p.predicted_us = predict_us(c, p);
  return c;
}

double max_relative_error(const Calibration& c, const std::string& set, const std::string& mode) {
  double worst = 0;
  for (const auto& p : c.points) {
    if (p.op != "swap-in" || p.set != set || !(p.measured_us > 0)) continue;
    if (!mode.empty() && p.mode != mode && p.rows > 0) continue;
    worst = std::max(worst, std::fabs(p.predicted_us - p.measured_us) / p.measured_us);
  }
  return worst;
}

std::string calibration_table(const Calibration& c) {
  std::string s = fmt::format("{:<8} {:<10} {:>5} {:>6} {:>6} {:>7} {:<9} {:>12} {:>12} {:>8}\n", "op", "mode", "batch", "H",
                              "miss", "rows", "set", "measured_us", "predicted_us", "error");
  std::vector<const CalibrationPoint*> order;
  for (const auto& p : c.points) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const CalibrationPoint* a, const CalibrationPoint* b) {
    if (a->op != b->op) return a->op > b->op;  // swap-in first
    if (a->mode != b->mode) return a->mode < b->mode;
    if (a->set != b->set) return a->set < b->set;  // fit, then held-out
    if (a->H != b->H) return a->H < b->H;
    if (a->batch != b->batch) return a->batch < b->batch;
    return a->rows < b->rows;
  });
  for (const CalibrationPoint* p : order) {
    const double err = p->measured_us > 0 && p->predicted_us > 0 ? 100 * (p->predicted_us - p->measured_us) / p->measured_us : 0;
    s += fmt::format("{:<8} {:<10} {:>5} {:>6} {:>5.0f}% {:>7} {:<9} {:>12.2f} {:>12.2f} {:>+7.1f}%\n", p->op, p->mode, p->batch,
                     p->H > 0 ? std::to_string(p->H) : std::string("-"), p->miss_rate * 100, p->rows, p->set.empty() ? "-" : p->set, p->measured_us, p->predicted_us, err);
  }
  for (const char* mode : {"fused", "separate"}) {
    const SwapInCopyCost& cost = std::string(mode) == "fused" ? c.fused : c.separate;
    if (!cost.calibrated) continue;
    const int64_t bc = cost.small_batch_max;
    for (int r = bc > 0 ? 1 : 0; r >= 0; --r) {
      const SwapInRegimeCost& m = r ? cost.small : cost.large();
      const std::string batches = bc == 0 ? "" : r ? fmt::format(" B<={}", bc) : fmt::format(" B>{}", bc);
      s += fmt::format("swap-in {:<8}{}: plan {:.0f} ns + {:.1f} ns/request + {:.3f} ns/slot; copy +{:.0f} ns, rows at {:.2f} "
                       "GB/s ({:.1f}% of bulk {:.2f}), per request {}{}\n",
                       mode, batches, m.plan_fixed_ns, m.plan_per_request_ns, m.plan_per_slot_ns, m.copy_fixed_ns,
                       m.row_bytes_per_s / 1e9, 100 * m.row_bytes_per_s / c.h2d_bulk_bytes_per_s, c.h2d_bulk_bytes_per_s / 1e9,
                       m.per_request_row_bytes_per_s > 0 ? fmt::format("{:.2f} GB/s", m.per_request_row_bytes_per_s / 1e9)
                                                         : "unbounded",
                       m.copy_round_ns > 0 ? fmt::format("; smooth max with rounds of {:.0f} ns ({} rows per round per block, "
                                                         "{} slices per request)",
                                                         m.copy_round_ns, m.copy_rows_per_round, m.copy_slices)
                                           : "");
    }
    s += fmt::format("swap-in {:<8}: max |error| fit {:.1f}%, held-out {:.1f}%\n", mode, 100 * max_relative_error(c, "fit", mode),
                     100 * max_relative_error(c, "held-out", mode));
  }
  return s;
}

}  // namespace hisparse::sim

// @brief Calibration files: strict YAML reading, writing, and applying the measured figures over the defaults.
#include "sim/calibration/calibration.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "core/yaml_reader.h"

namespace hisparse::sim {
namespace {

constexpr double kMaxRate = 1e13;   // bytes/s: far above any PCIe link, catches unit slips (GB/s given as B/s * 1e9)
constexpr double kMaxNs = 1e9;
constexpr int64_t kMaxSmallBatch = 1 << 20;  // swap_in.small_batch_max: a batch size, far above any real one
constexpr int64_t kMaxRowsPerRound = 1 << 20;  // copy_rows_per_round: rows in flight per block, far above any real one
constexpr int64_t kMaxSlices = 1024;           // copy_slices: blocks per request (a cluster has at most 16)

void read_regime(StrictMap& m, double h2d_bulk, SwapInRegimeCost* c) {
  m.require("plan_fixed_ns");
  m.require("small_row_efficiency");
  m.get("plan_fixed_ns", &c->plan_fixed_ns, 0, kMaxNs, Unit::kNanoseconds);
  m.get("plan_per_request_ns", &c->plan_per_request_ns, 0, kMaxNs, Unit::kNanoseconds);
  m.get("plan_per_slot_ns", &c->plan_per_slot_ns, 0, kMaxNs, Unit::kNanoseconds);
  m.get("copy_fixed_ns", &c->copy_fixed_ns, 0, kMaxNs, Unit::kNanoseconds);
  double eff = 0;
  m.get("small_row_efficiency", &eff, 1e-4, 1.5);
  c->row_bytes_per_s = eff * h2d_bulk;
  m.get("per_request_row_bytes_per_s", &c->per_request_row_bytes_per_s, 0, kMaxRate, Unit::kBytesPerSecond);
  // The copy's latency rounds (absent: 0, the linear copy every file before them meant).
  m.get("copy_round_ns", &c->copy_round_ns, 0, kMaxNs, Unit::kNanoseconds);
  m.get("copy_rows_per_round", &c->copy_rows_per_round, 0, kMaxRowsPerRound);
  m.get("copy_slices", &c->copy_slices, 1, kMaxSlices);
  if (c->copy_round_ns == 0 && (m.has("copy_rows_per_round") || m.has("copy_slices")))
    throw_error("{} is given but copy_round_ns is 0 or absent (the rounds' shape needs their latency)",
                m.where(m.has("copy_slices") ? "copy_slices" : "copy_rows_per_round"));
}

/// One copy mode: the large-batch (or only) terms, and under `small_batch` those of batches 1..small_batch_max.
void read_swap_in(StrictMap m, double h2d_bulk, int64_t small_batch_max, SwapInCopyCost* c) {
  read_regime(m, h2d_bulk, &c->large());
  if (small_batch_max > 0) {
    if (!m.has("small_batch"))
      throw_error("{} is missing (swap_in.small_batch_max is {}: batches 1..{} need their own terms)", m.where("small_batch"),
                  small_batch_max, small_batch_max);
    StrictMap s = m.child("small_batch");
    read_regime(s, h2d_bulk, &c->small);
    s.finish();
  } else if (m.has("small_batch")) {
    throw_error("{} is given but swap_in.small_batch_max is 0 or absent (set it to the largest batch the "
                "small-batch kernel runs)", m.where("small_batch"));
  }
  m.finish();
  c->small_batch_max = small_batch_max;
  c->calibrated = true;
}

void read_row_rate(StrictMap m, RowRateCost* c) {
  m.require("row_bytes_per_s");
  m.get("fixed_ns", &c->fixed_ns, 0, kMaxNs, Unit::kNanoseconds);
  m.get("row_bytes_per_s", &c->row_bytes_per_s, 1, kMaxRate, Unit::kBytesPerSecond);
  m.finish();
}

/// A copy of map `node` without `keys` (sequences StrictMap cannot hand out; the caller reads them itself).
YAML::Node without(const YAML::Node& node, std::initializer_list<const char*> keys) {
  YAML::Node copy = YAML::Clone(node);
  if (copy.IsMap())
    for (const char* k : keys) copy.remove(k);
  return copy;
}

YAML::Node sequence(const YAML::Node& node, const std::string& where) {
  if (!node.IsDefined() || node.IsNull()) return YAML::Node(YAML::NodeType::Sequence);
  if (!node.IsSequence()) throw_error("{}: got {}, expected a list", where, describe_node(node));
  return node;
}

std::string regime_yaml(const SwapInRegimeCost& c, double h2d_bulk, int64_t row_bytes, const std::string& indent) {
  const double eff = h2d_bulk > 0 ? c.row_bytes_per_s / h2d_bulk : 0;
  std::string s;
  s += fmt::format("{}plan_fixed_ns: {:.1f}\n", indent, c.plan_fixed_ns);
  s += fmt::format("{}plan_per_request_ns: {:.3f}\n", indent, c.plan_per_request_ns);
  s += fmt::format("{}plan_per_slot_ns: {:.4f}\n", indent, c.plan_per_slot_ns);
  s += fmt::format("{}copy_fixed_ns: {:.1f}\n", indent, c.copy_fixed_ns);
  s += fmt::format("{}small_row_efficiency: {:.5f}   # rows at {:.2f} GB/s = {:.2f} ns per {}-B row\n", indent, eff,
                   c.row_bytes_per_s / 1e9, c.row_bytes_per_s > 0 ? double(row_bytes) / c.row_bytes_per_s * 1e9 : 0.0,
                   row_bytes);
  s += fmt::format("{}per_request_row_bytes_per_s: {:.4e}{}\n", indent, c.per_request_row_bytes_per_s,
                   c.per_request_row_bytes_per_s > 0 ? "" : "   # 0: no per-request bound seen");
  if (c.copy_round_ns > 0) {  // written only when present: a linear copy's text is what it always was
    s += fmt::format("{}copy_round_ns: {:.1f}   # one round of row loads of the busiest block\n", indent, c.copy_round_ns);
    s += fmt::format("{}copy_rows_per_round: {}   # rows a block keeps in flight (a warp per row){}\n", indent,
                     c.copy_rows_per_round, c.copy_rows_per_round > 0 ? "" : "; 0: one round per call");
    s += fmt::format("{}copy_slices: {}   # blocks per request, each serving the misses of its LRU slice\n", indent,
                     c.copy_slices);
  }
  return s;
}

std::string swap_in_yaml(const char* name, const SwapInCopyCost& c, double h2d_bulk, int64_t row_bytes) {
  std::string s = fmt::format("  {}:{}\n", name, c.small_batch_max > 0 ? "   # batches above small_batch_max" : "");
  s += regime_yaml(c.large(), h2d_bulk, row_bytes, "    ");
  if (c.small_batch_max > 0) {
    s += fmt::format("    small_batch:   # batches 1..{} (the small-batch kernel)\n", c.small_batch_max);
    s += regime_yaml(c.small, h2d_bulk, row_bytes, "      ");
  }
  return s;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

}  // namespace

Calibration load_calibration(const std::string& path) {
  const YAML::Node doc = load_yaml_file(path);
  Calibration c;
  c.source = path;
  // `step:` (per-op models, sim/calibration/step_calibration.h) is read by load_step_calibration.
  StrictMap root(without(doc, {"points", "step"}), path, "");
  for (const char* k : {"device", "date", "bulk", "swap_in"}) root.require(k);
  root.get("device", &c.device);
  root.get("date", &c.date);
  root.get("made_from", &c.made_from);
  root.get("driver", &c.driver);
  root.get("sm_count", &c.sm_count, 0, 100000);
  root.get_integral("row_bytes", &c.row_bytes, 1, 1 << 20, Unit::kBytes);
  root.get_choice("copy_mode", &c.copy_mode, {"fused", "separate"});
  {
    StrictMap b = root.child("bulk");
    b.require("h2d_bytes_per_s");
    b.require("d2h_bytes_per_s");
    b.get("h2d_bytes_per_s", &c.h2d_bulk_bytes_per_s, 1, kMaxRate, Unit::kBytesPerSecond);
    b.get("d2h_bytes_per_s", &c.d2h_bulk_bytes_per_s, 1, kMaxRate, Unit::kBytesPerSecond);
    b.finish();
  }
  root.get("timing_overhead_ns", &c.timing_overhead_ns, 0, kMaxNs, Unit::kNanoseconds);
  {
    StrictMap s = root.child("swap_in");
    int64_t small_batch_max = 0;
    s.get("small_batch_max", &small_batch_max, 0, kMaxSmallBatch);
    if (s.has("fused")) read_swap_in(s.child("fused"), c.h2d_bulk_bytes_per_s, small_batch_max, &c.fused);
    if (s.has("separate")) read_swap_in(s.child("separate"), c.h2d_bulk_bytes_per_s, small_batch_max, &c.separate);
    s.finish();
    if (!c.swap_in().calibrated)
      throw_error("{}: copy_mode is {} but swap_in.{} is missing", path, c.copy_mode, c.copy_mode);
  }
  if (root.has("gather")) read_row_rate(root.child("gather"), &c.gather);
  if (root.has("backup")) read_row_rate(root.child("backup"), &c.backup);
  if (root.has("fit")) {
    const YAML::Node fit = doc["fit"];
    StrictMap f(without(fit, {"batches", "miss_rates", "H"}), path, "fit");
    f.finish();
    const YAML::Node b = sequence(fit["batches"], path + ": fit.batches");
    for (size_t i = 0; i < b.size(); ++i) c.fit_batches.push_back(b[i].as<int32_t>());
    const YAML::Node m = sequence(fit["miss_rates"], path + ": fit.miss_rates");
    for (size_t i = 0; i < m.size(); ++i) c.fit_miss_rates.push_back(m[i].as<double>());
    const YAML::Node h = sequence(fit["H"], path + ": fit.H");  // absent: every H was fitted
    for (size_t i = 0; i < h.size(); ++i) c.fit_H.push_back(h[i].as<int32_t>());
    root.child("fit");  // marks the key as read
  }
  root.finish();
  const YAML::Node pts = sequence(doc["points"], path + ": points");
  for (size_t i = 0; i < pts.size(); ++i) {
    StrictMap p(pts[i], path, fmt::format("points[{}]", i));
    CalibrationPoint q;
    p.require("op");
    p.require("measured_us");
    p.get_choice("op", &q.op, {"swap-in", "gather", "backup"});
    p.get("mode", &q.mode);
    p.get("batch", &q.batch, 0, 1 << 24);
    p.get("H", &q.H, 0, 1 << 24);
    p.get("K", &q.K, 0, 1 << 24);
    p.get("miss_rate", &q.miss_rate, 0, 1);
    p.get("rows", &q.rows, 0, int64_t(1) << 40);
    p.get("measured_us", &q.measured_us, 0, 1e9);
    p.get("predicted_us", &q.predicted_us, 0, 1e9);
    if (p.has("set")) p.get_choice("set", &q.set, {"fit", "held-out", ""});
    p.finish();
    c.points.push_back(q);
  }
  return c;
}

std::string calibration_yaml(const Calibration& c) {
  std::string s;
  s += fmt::format("# Calibration of {} for the HiSparse simulator (sim/calibration/calibration.h), written by `hisparse bench "
                   "--calibrate`.\n# Load with `hisparse simulate --calibration FILE`; every time is one call (one layer) "
                   "as CUDA events measure it.\n",
                   c.device);
  s += fmt::format("device: {}\ndate: {}\nmade_from: {}\n", quoted(c.device), quoted(c.date), quoted(c.made_from));
  if (!c.driver.empty()) s += fmt::format("driver: {}\n", quoted(c.driver));
  if (c.sm_count > 0) s += fmt::format("sm_count: {}   # streaming multiprocessors, as the device reports them\n", c.sm_count);
  s += fmt::format("row_bytes: {}\ncopy_mode: {}\n", c.row_bytes, c.copy_mode);
  s += fmt::format("bulk:   # pinned cudaMemcpy, largest size measured\n  h2d_bytes_per_s: {:.4e}\n  d2h_bytes_per_s: {:.4e}\n",
                   c.h2d_bulk_bytes_per_s, c.d2h_bulk_bytes_per_s);
  s += fmt::format("timing_overhead_ns: {:.1f}   # an empty kernel timed the same way (inside every fixed cost)\n",
                   c.timing_overhead_ns);
  s += "swap_in:   # plan = fixed + per_request*B + per_slot*H; copy = copy_fixed + smax(bytes / min(efficiency*bulk, "
       "B*per_request), rounds*copy_round_ns)\n"
       "  # smax(a, b) = sqrt(a^2 + b^2); rounds = ceil(min(M, ceil((H - K + M) / copy_slices)) / copy_rows_per_round), M = "
       "rows per request (sim/cost/terms/swap_in_cost.h); no copy_round_ns: the linear copy_fixed + bytes / rate\n";
  const int64_t bc = c.swap_in().small_batch_max;
  if (bc > 0)
    s += fmt::format("  small_batch_max: {}   # batches 1..{} run the small-batch (cluster) kernel: each mode's small_batch "
                     "terms\n", bc, bc);
  if (c.fused.calibrated) s += swap_in_yaml("fused", c.fused, c.h2d_bulk_bytes_per_s, c.row_bytes);
  if (c.separate.calibrated) s += swap_in_yaml("separate", c.separate, c.h2d_bulk_bytes_per_s, c.row_bytes);
  for (auto [name, r] : {std::pair<const char*, const RowRateCost*>{"gather", &c.gather}, {"backup", &c.backup}})
    if (r->present())
      s += fmt::format("{}:\n  fixed_ns: {:.1f}\n  row_bytes_per_s: {:.4e}\n", name, r->fixed_ns, r->row_bytes_per_s);
  std::vector<std::string> b, m, h;
  for (int32_t x : c.fit_batches) b.push_back(std::to_string(x));
  for (double x : c.fit_miss_rates) m.push_back(fmt::format("{:g}", x));
  for (int32_t x : c.fit_H) h.push_back(std::to_string(x));
  if (c.fit_H.size() <= 1) {  // one H: the lists of files before the H sweep
    s += fmt::format("fit:   # swap-in points with both batch and miss rate in these lists were fitted; the rest are held out\n"
                     "  batches: [{}]\n  miss_rates: [{}]\n",
                     fmt::join(b, ", "), fmt::join(m, ", "));
  } else {
    s += fmt::format("fit:   # swap-in points with batch, miss rate and H in these lists were fitted; the rest are held out\n"
                     "  batches: [{}]\n  miss_rates: [{}]\n  H: [{}]\n",
                     fmt::join(b, ", "), fmt::join(m, ", "), fmt::join(h, ", "));
  }
  s += "points:\n";
  for (const CalibrationPoint& p : c.points)
    s += fmt::format("  - {{op: {}, mode: {}, batch: {}, H: {}, K: {}, miss_rate: {:g}, rows: {}, measured_us: {:.3f}, "
                     "predicted_us: {:.3f}, set: {}}}\n",
                     p.op, p.mode, p.batch, p.H, p.K, p.miss_rate, p.rows, p.measured_us, p.predicted_us, quoted(p.set));
  return s;
}

void apply_calibration(const Calibration& c, Scenario* sc, CostParams* params) {
  PcieSpec& pcie = sc->hardware.pcie;
  pcie.h2d_bulk_bytes_per_s = c.h2d_bulk_bytes_per_s;
  pcie.d2h_bulk_bytes_per_s = c.d2h_bulk_bytes_per_s;
  const SwapInCopyCost& s = c.swap_in();
  pcie.gather_row_bytes_per_s = c.gather.present() ? c.gather.row_bytes_per_s : s.row_bytes_per_s;
  if (c.backup.present()) pcie.latency_ns = static_cast<int64_t>(std::llround(c.backup.fixed_ns));
  params->swap_in_cost = s;
}

SimTime predict_swap_in_copy_ns(const SwapInCopyCost& cost, double h2d_link_bytes_per_s, int64_t row_bytes,
                                int64_t batch, int64_t H, int64_t rows, int64_t K) {
  SwapInCall call;
  call.requests = batch;
  call.rows = static_cast<double>(rows);
  call.row_bytes = row_bytes;
  call.H = H;
  call.K = K;
  return cost.plan_ns(batch, H) + cost.copy_ns(call, h2d_link_bytes_per_s);
}

}  // namespace hisparse::sim

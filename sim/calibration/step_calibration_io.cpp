// @brief The file formats of the per-op models: the `bench step` CSV in, the calibration YAML out and in (a file of
// its own or a device calibration's `step:` section), and the table printed after a fit.
#include "sim/calibration/step_calibration.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/yaml_reader.h"
#include "core/io/csv_reader.h"

namespace hisparse::sim {
namespace {

double to_number(const std::string& text, const std::string& where) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != 0 || !std::isfinite(v) || v < 0)
    throw_error("{}: '{}' is not a non-negative number", where, text);
  return v;
}

}  // namespace

std::vector<StepBenchMeasurement> read_step_csv(const std::string& path) {
  const std::string header = "device,model,op,family,dtype,impl,batch,context,median_us,flops,bytes";
  CsvReader csv(path, "the bench step CSV", "the bench step header '" + header + "'");
  if (csv.header_line() != header)
    throw_error("{}: line 1 is not the bench step header '{}' (write it with `hisparse bench step --csv`)", path,
                header);
  std::vector<StepBenchMeasurement> rows;
  std::vector<std::string> f;
  while (csv.next(f)) {
    const std::string where = csv.where();
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


std::string step_calibration_yaml(const StepCalibration& c) {
  std::ostringstream os;
  os << "# Per-op time models of one decode layer, fitted to `hisparse bench step` rows (sim/calibration/step_calibration.h).\n"
        "# time_us = shape + per_token_us * tokens + (per_wave_us + block_bytes/block_bytes_per_s) * ceil(blocks /\n"
        "# wave_blocks) + per_pass_wave_us * ceil(pass_blocks / pass_wave_blocks), where shape is\n"
        "#   max: max(fixed, bytes/bytes_per_s, flops/flops_per_s)   fixed+max: fixed + max(bytes/.., flops/..)\n"
        "#   sum: fixed + bytes/.. + flops/..   smooth: (fixed^4 + (bytes/..)^4 + (flops/..)^4)^(1/4)\n"
        "# (a rate or wave size of 0, or one not written, leaves its term out; work per op: core/decode_layer_ops.h);\n"
        "# or form table: (bytes, us) interpolated log-log. An op timed by its work alone gets the table or the\n"
        "# waves, whichever has the smaller left_out_*_loss (each fit work left out of the fit in turn). Errors are\n"
        "# max |predicted - measured| / measured over the fit batches and over the held-out ones.\n";
  os << fmt::format("device: \"{}\"\n", c.device);
  if (!c.driver.empty()) os << fmt::format("driver: \"{}\"\n", c.driver);
  os << fmt::format("model: {}\ndate: \"{}\"\nmade_from: \"{}\"\nep: {}\ngraph_gap_us: {:.4g}\n", c.model, c.date,
                    c.made_from, c.ep, c.graph_gap_us);
  os << "fit_batches: [";
  for (size_t i = 0; i < c.fit_batches.size(); ++i) os << (i ? ", " : "") << c.fit_batches[i];
  os << "]\nops:\n";
  for (const OpTimeModel& m : c.ops) {
    std::string table;
    for (const auto& [x, y] : m.table) table += fmt::format("{}[{:.6g}, {:.6g}]", table.empty() ? "" : ", ", x, y);
    // Keys of the later terms only where they are used: files without them read as before.
    std::string extra;
    if (m.block_bytes_per_s > 0) extra += fmt::format("block_bytes_per_s: {:.6g}, ", m.block_bytes_per_s);
    if (m.pass_wave_blocks > 0)
      extra += fmt::format("pass_wave_blocks: {:.0f}, per_pass_wave_us: {:.6g}, ", m.pass_wave_blocks, m.per_pass_wave_us);
    if (m.left_out_table_loss > 0 || m.left_out_waves_loss > 0)
      extra += fmt::format("left_out_table_loss: {:.4g}, left_out_waves_loss: {:.4g}, ", m.left_out_table_loss,
                           m.left_out_waves_loss);
    os << fmt::format("  - {{op: {}, dtype: {}, family: {}, form: {}, fixed_us: {:.6g}, bytes_per_s: {:.6g}, "
                      "flops_per_s: {:.6g}, per_token_us: {:.6g}, wave_blocks: {:.0f}, per_wave_us: {:.6g}, "
                      "{}fit_max_error: {:.4f}, held_out_max_error: {:.4f}, fit_points: {}, held_out_points: {}{}}}\n",
                      m.op, m.dtype, m.family, m.form, m.fixed_us, m.bytes_per_s, m.flops_per_s, m.per_token_us,
                      m.wave_blocks, m.per_wave_us, extra, m.fit_max_error, m.held_out_max_error, m.fit_points,
                      m.held_out_points, m.form == "table" ? ", table: [" + table + "]" : "");
  }
  std::set<std::string> whats;
  for (const StepCheck& k : c.checks) whats.insert(k.what);
  os << "held_out_max_error:\n";
  for (const std::string& w : whats) os << fmt::format("  \"{}\": {:.4f}\n", w, c.max_check_error(w, true));
  return os.str();
}

bool has_step_section(const std::string& path) {
  const YAML::Node doc = load_yaml_file(path);
  return doc.IsMap() && doc["step"].IsDefined();
}

StepCalibration load_step_calibration(const std::string& path) {
  const YAML::Node doc = load_yaml_file(path);
  // A device calibration (`hisparse bench --calibrate`) carries its per-op models under `step:`.
  const bool nested = doc.IsMap() && doc["step"].IsDefined();
  if (nested && !doc["step"].IsMap()) throw_error("{}: step: expected a mapping of per-op models", path);
  const YAML::Node root = nested ? doc["step"] : doc;
  StrictMap top(root, path, nested ? "step" : "");
  StepCalibration c;
  top.get("driver", &c.driver);
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
    op.get("block_bytes_per_s", &m.block_bytes_per_s, 0, 1e30);
    op.get("pass_wave_blocks", &m.pass_wave_blocks, 0, 1e9);
    op.get("per_pass_wave_us", &m.per_pass_wave_us, 0, 1e9);
    op.get("left_out_table_loss", &m.left_out_table_loss, 0, 1e30);
    op.get("left_out_waves_loss", &m.left_out_waves_loss, 0, 1e30);
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
        m.per_wave_us == 0 && m.per_pass_wave_us == 0 && m.block_bytes_per_s == 0)
      throw_error("{}: ops[{}] ({}) has no term: every time would be 0", path, i - 1, m.op);
    c.ops.push_back(m);
  }
  if (top.has("held_out_max_error")) top.child("held_out_max_error");  // for readers; a refit recomputes it
  if (c.ops.empty()) throw_error("{}: ops: empty", path);
  top.finish();
  return c;
}

std::string step_calibration_table(const StepCalibration& c) {
  // wave: per wave / wave size, and the rate a block's bytes are read at within a wave; pass: the second launch.
  std::string out = fmt::format("{:<18} {:<5} {:<13} {:<10} {:>9} {:>9} {:>9} {:>8} {:>20} {:>10} {:>8} {:>9}\n", "op",
                                "dtype", "family", "form", "fixed_us", "GB/s", "TFLOP/s", "us/token", "wave",
                                "pass wave", "fit_err", "held_err");
  for (const OpTimeModel& m : c.ops) {
    std::string wave = "-";
    if (m.wave_blocks > 0) {
      wave = fmt::format("{:.1f}us/{:.0f}", m.per_wave_us, m.wave_blocks);
      if (m.block_bytes_per_s > 0) wave += fmt::format(" +{:.1f}GB/s", m.block_bytes_per_s / 1e9);
    }
    out += fmt::format("{:<18} {:<5} {:<13} {:<10} {:>9.2f} {:>9} {:>9} {:>8} {:>20} {:>10} {:>7.1f}% {:>8.1f}%\n", m.op,
                       m.dtype, m.family, m.form, m.fixed_us,
                       m.bytes_per_s > 0 ? fmt::format("{:.0f}", m.bytes_per_s / 1e9) : "-",
                       m.flops_per_s > 0 ? fmt::format("{:.1f}", m.flops_per_s / 1e12) : "-",
                       m.per_token_us > 0 ? fmt::format("{:.3f}", m.per_token_us) : "-", wave,
                       m.pass_wave_blocks > 0 ? fmt::format("{:.1f}us/{:.0f}", m.per_pass_wave_us, m.pass_wave_blocks)
                                              : "-",
                       100 * m.fit_max_error, 100 * m.held_out_max_error);
  }
  for (const OpTimeModel& m : c.ops)
    if (m.left_out_table_loss > 0 || m.left_out_waves_loss > 0)
      out += fmt::format("{} {}: {} (each fit work left out in turn: table loss {:.4g}, waves loss {:.4g})\n", m.op,
                         m.dtype, m.form == "table" ? "table" : "waves", m.left_out_table_loss, m.left_out_waves_loss);
  std::set<std::string> whats;
  for (const StepCheck& k : c.checks) whats.insert(k.what);
  out += fmt::format("\n{:<22} {:>14} {:>14}\n", "sum checked", "fit max |err|", "held-out max |err|");
  for (const std::string& w : whats)
    out += fmt::format("{:<22} {:>13.1f}% {:>13.1f}%\n", w, 100 * c.max_check_error(w, false),
                       100 * c.max_check_error(w, true));
  return out;
}


}  // namespace hisparse::sim

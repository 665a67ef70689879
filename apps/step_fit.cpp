// @brief Model lookup, step CSV text and the per-op fit shared by `bench step` and `bench --calibrate`.
#include "apps/step_fit.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "apps/list_args.h"
#include "core/error.h"
#include "core/scenario_loader.h"

namespace hisparse::apps {

std::string model_path(const std::string& name) {
  if (name.find('/') != std::string::npos || (name.size() > 5 && name.substr(name.size() - 5) == ".yaml"))
    return name;
  for (const std::string& dir : scenario_dirs()) {
    const std::string p = dir + "/models/" + name + ".yaml";
    if (std::filesystem::exists(p)) return p;
  }
  throw_error("--model {}: no models/{}.yaml in the scenario directories (hisparse info lists them)", name, name);
}

std::string step_csv_text(const std::string& device, const std::string& model,
                          const std::vector<bench::StepBenchRow>& rows) {
  std::ostringstream os;
  os << "device,model,op,family,dtype,impl,batch,context,median_us,flops,bytes\n";
  for (const auto& r : rows)
    os << fmt::format("\"{}\",{},{},{},{},\"{}\",{},{},{:.3f},{:.0f},{:.0f}\n", device, model, r.op, r.family, r.dtype,
                      r.impl, r.batch, r.context, r.median_us, r.flops, r.bytes);
  return os.str();
}

sim::StepCalibration fit_step_rows(const std::vector<sim::StepBenchMeasurement>& rows, const std::string& model_override,
                                   const std::string& fit_batches, int ep) {
  const ModelSpec m = load_model_spec(model_path(model_override.empty() ? rows.front().model : model_override));
  std::vector<int> fit;
  for (int64_t b : parse_count_list(fit_batches, "bench step", "--fit-batches", 1, 4096, "1,4,16,64,256"))
    fit.push_back(int(b));
  return sim::fit_step_calibration(rows, m, fit, ep);
}

double worst_held_out_check(const sim::StepCalibration& c, std::string* what) {
  double worst = 0;
  for (const sim::StepCheck& k : c.checks)
    if (k.held_out && std::abs(k.error()) > worst) worst = std::abs(k.error()), *what = k.what;
  return worst;
}

std::string today_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  return fmt::format("{:04d}-{:02d}-{:02d}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

std::string repo_relative(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path abs = fs::weakly_canonical(fs::absolute(path), ec);
  const fs::path cwd = fs::current_path(ec);
  if (ec) return path;
  const fs::path rel = abs.lexically_relative(cwd);
  if (rel.empty() || *rel.begin() == "..") return path;
  return rel.string();
}

}  // namespace hisparse::apps

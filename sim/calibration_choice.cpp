// @brief Loading the calibrations a run uses (see calibration_choice.h).
#include "sim/calibration_choice.h"

#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/calibration.h"
#include "sim/step_calibration.h"

namespace hisparse::sim {
namespace {

/// The file `flag` selects: the hardware's for "auto", none for "none", else the path itself.
std::string chosen(const std::string& flag, const std::string& hardware_default) {
  if (flag == "none") return "";
  if (flag == "auto" || flag.empty()) return hardware_default;
  return flag;
}

}  // namespace

std::string apply_calibrations(const std::string& calibration, const std::string& step_calibration, Scenario* s,
                               CostParams* p) {
  std::string line;
  const std::string cal_file = chosen(calibration, s->hardware.calibration);
  if (!cal_file.empty()) {
    const Calibration cal = load_calibration(cal_file);
    apply_calibration(cal, s, p);
    line = fmt::format("PCIe and swap-in copy calibrated ({}, {}, {})", cal.device, cal.date, cal_file);
  } else {
    line = calibration == "none" ? "PCIe and swap-in copy roofline (--calibration none)"
                                 : fmt::format("PCIe and swap-in copy roofline (hardware {} names no calibration)",
                                               s->hardware.name);
  }
  const std::string step_file = chosen(step_calibration, s->hardware.step_calibration);
  if (!step_file.empty()) {
    auto step = std::make_shared<StepCalibration>(load_step_calibration(step_file));
    if (step->model != s->model.name) {
      if (step_calibration != "auto")
        throw_error("{}: per-op calibration of model {}, the scenario's model is {}", step_file, step->model,
                    s->model.name);
      line += fmt::format("; per-op roofline (the hardware's per-op calibration is of {}, not {})", step->model,
                          s->model.name);
    } else {
      line += fmt::format("; projection GEMMs (MLA, indexer, absorbed w_kv_b, router, shared expert, dense MLP) and "
                          "top-k calibrated per op ({}, {}, {}); indexer scoring, sparse attention, routed experts, "
                          "all-to-all and step overhead roofline/modelled",
                          step->device, step->date, step_file);
      p->step = std::move(step);
    }
  } else {
    line += step_calibration == "none" ? "; per-op roofline (--step-calibration none)"
                                       : fmt::format("; per-op roofline (hardware {} names no per-op calibration)",
                                                     s->hardware.name);
  }
  return line;
}

}  // namespace hisparse::sim

// @brief Loading the calibrations a run uses (see calibration_choice.h).
#include "sim/calibration/calibration_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "core/error.h"
#include "core/family/family_registry.h"
#include "core/scenario_loader.h"
#include "sim/calibration/calibration.h"
#include "sim/calibration/step_calibration.h"

namespace hisparse::sim {
namespace {

/// The file `flag` selects: the hardware's for "auto", none for "none", else the path itself.
std::string chosen(const std::string& flag, const std::string& hardware_default) {
  if (flag == "none") return "";
  if (flag == "auto" || flag.empty()) return hardware_default;
  return flag;
}

}  // namespace

std::string default_cost_model_file() {
  for (const std::string& dir : scenario_dirs()) {
    const std::filesystem::path p = std::filesystem::path(dir) / "cost_model" / "sglang-hopper.yaml";
    if (std::filesystem::exists(p)) return p.lexically_normal().string();
  }
  throw_error("no cost-model file: none of the scenario directories holds cost_model/sglang-hopper.yaml (set "
              "HISPARSE_SCENARIO_DIR, or pass --cost-params FILE)");
}

std::string load_cost_terms(const std::string& flag, const Scenario& s, CostParams* p) {
  std::string file = flag;
  std::string why;
  if (flag.empty() || flag == "auto") {
    file = s.hardware.cost_model.empty() ? default_cost_model_file() : s.hardware.cost_model;
    why = s.hardware.cost_model.empty() ? fmt::format(", the bundled default: hardware {} names no cost_model", s.hardware.name)
                                        : "";
  }
  // Shipped and hand-made files alike: every term with a kind and a source.
  *p = load_cost_params(file, *p, /*require_every_term=*/true);
  std::map<std::string, int> kinds;
  for (const TermSource& t : p->sources) ++kinds[t.kind];
  std::string counts;
  for (const auto& [kind, n] : kinds) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, kind);
  return fmt::format("cost terms {} ({}{})", file, counts, why);
}

std::string apply_calibrations(const std::string& calibration, const std::string& step_calibration, Scenario* s,
                               CostParams* p) {
  std::string line;
  const std::string cal_file = chosen(calibration, s->hardware.calibration);
  if (!cal_file.empty()) {
    const Calibration cal = load_calibration(cal_file);
    apply_calibration(cal, s, p);
    line = fmt::format("PCIe and swap-in copy calibrated ({}, {}, {})", cal.device, cal.date, cal_file);
    p->swap_in_kernel = "project";
    const std::string& kernel = s->deployment.swap_in_kernel_used();
    if (kernel == "sglang" && !s->hardware.sglang_swap_in_calibration.empty()) {
      // SGLang's kernel replaces the swap-in plan and copy terms; PCIe, gather and backup stay the device's.
      const Calibration sg = load_calibration(s->hardware.sglang_swap_in_calibration);
      p->swap_in_cost = sg.swap_in();
      p->swap_in_kernel = "sglang";
      line += fmt::format("; swap-in kernel: SGLang's (calibrated: fitted to SGLang's kernel measured on {}, {})",
                          sg.device, s->hardware.sglang_swap_in_calibration);
      p->sources.push_back({"swap_in_kernel", "sglang", "calibrated",
                            fmt::format("fitted to SGLang's kernel measured on {} ({})", sg.device,
                                        s->hardware.sglang_swap_in_calibration)});
    } else {
      const std::string why = kernel == "sglang" ? fmt::format("SGLang's kernel is not measured on {}: the hardware "
                                                               "file names no sglang_swap_in_calibration",
                                                               s->hardware.name)
                                                 : std::string("the deployment's swap_in_kernel");
      line += fmt::format("; swap-in kernel: this project's ({})", why);
      p->sources.push_back({"swap_in_kernel", "project", "calibrated",
                            fmt::format("this project's kernel measured on {} ({}); {}", cal.device, cal_file, why)});
    }
  } else {
    line = calibration == "none" ? "PCIe and swap-in copy roofline (--calibration none)"
                                 : fmt::format("PCIe and swap-in copy roofline (hardware {} names no calibration)",
                                               s->hardware.name);
  }
  // A device calibration from `bench --calibrate` carries its per-op models too: named on the command line, it brings
  // them; named by the hardware file without a separate step_calibration, it does as well.
  // (--calibration none drops the swap-in part only: --step-calibration none drops the per-op part.)
  std::string step_default = s->hardware.step_calibration;
  if (step_default.empty() && !s->hardware.calibration.empty() && has_step_section(s->hardware.calibration))
    step_default = s->hardware.calibration;
  if (calibration != "auto" && calibration != "none" && !calibration.empty() && has_step_section(cal_file))
    step_default = cal_file;
  std::string step_file = chosen(step_calibration, step_default);
  std::shared_ptr<StepCalibration> picked;
  if (step_calibration == "auto" && !s->hardware.step_calibrations.empty()) {
    // Several per-op calibrations of this GPU: the scenario's model, at the expert-parallel size nearest the
    // deployment's (the routed experts per GPU set the grouped GEMM's shape). The first listed wins a tie.
    std::vector<std::string> candidates = s->hardware.step_calibrations;
    if (!step_file.empty()) candidates.insert(candidates.begin(), step_file);
    const int ep = std::max(1, s->deployment.decode.ep);
    for (const std::string& f : candidates) {
      auto c = std::make_shared<StepCalibration>(load_step_calibration(f));
      if (!s->model.calibrated_by(c->model)) continue;
      if (!picked || std::abs(c->ep - ep) < std::abs(picked->ep - ep)) {
        picked = std::move(c);
        step_file = f;
      }
    }
  }
  if (!step_file.empty()) {
    auto step = picked ? picked : std::make_shared<StepCalibration>(load_step_calibration(step_file));
    if (!s->model.calibrated_by(step->model)) {
      if (step_calibration != "auto")
        throw_error("{}: per-op calibration of model {}, the scenario's model is {}", step_file, step->model,
                    s->model.name);
      line += fmt::format("; per-op roofline (the hardware's per-op calibration is of {}, not {})", step->model,
                          s->model.name);
    } else {
      line += fmt::format("; projection GEMMs (MLA, indexer, absorbed w_kv_b, router, shared expert, dense MLP), "
                          "norms/RoPE/SiLU and top-k calibrated per op ({}, {}, {}); indexer scoring, {}"
                          "routed experts, LM head modelled; collectives and the step's fixed part as the cost terms "
                          "label them",
                          step->device, step->date, step_file, p->attention.table ? "" : "sparse attention, ");
      // The step's kernels run in a CUDA graph: the measured gap between two of them replaces the file's figure.
      if (step->graph_gap_us > 0) {
        p->graph_kernel_gap_ns = static_cast<SimTime>(std::llround(step->graph_gap_us * 1000));
        for (TermSource& t : p->sources)
          if (t.term == "graph_kernel_gap")
            t = {t.term, fmt::format("{:g} us", step->graph_gap_us), "measured",
                 fmt::format("graph_gap_us of the per-op calibration {} ({}, {})", step_file, step->device, step->date)};
      }
      p->step = std::move(step);
    }
  } else {
    line += step_calibration == "none" ? "; per-op roofline (--step-calibration none)"
                                       : fmt::format("; per-op roofline (hardware {} names no per-op calibration)",
                                                     s->hardware.name);
  }
  return line;
}

std::string apply_attention_table(const std::string& flag, const Scenario& s, CostParams* p) {
  // The table is FlashMLA's MLA sparse kernel: a GQA/MHA model's attention stays its roofline.
  if (family_of(s).layer_pricing() == LayerPricing::kGqaKv) {
    p->attention = {};
    return "attention roofline (the FlashMLA table prices MLA sparse attention only)";
  }
  p->attention = choose_attention_pricing(flag, s.hardware);
  const AttentionPricing& a = p->attention;
  if (!a.table)
    return flag == "none" ? "sparse attention roofline (--attention-table none)"
                          : fmt::format("sparse attention roofline (hardware {} names no attention_table)", s.hardware.name);
  // The table replaces the roofline of the sparse-attention kernel (efficiency.attention prices nothing else).
  const std::string kernel = attention_kernel_for(s.deployment.kv_dtype);
  p->sources.push_back(
      {"sparse_attention", fmt::format("{} table", kernel), a.kind(),
       a.from_hardware.empty()
           ? fmt::format("FlashMLA {} graph-timed on {} ({}), interpolated over batch, heads per GPU and K "
                         "(sim/cost/terms/attention_table.h)",
                         kernel, a.table->device(), a.table->file())
           : fmt::format("FlashMLA {} graph-timed on {} ({}), carried over to {}: the batch-1 floor kept, the time "
                         "above it scaled by the ratio of the two GPUs' roofline times (docs/cost_model.md)",
                         kernel, a.table->device(), a.table->file(), s.hardware.name)});
  auto span = [](const std::vector<double>& v) { return fmt::format("{:g}–{:g}", v.front(), v.back()); };
  return fmt::format("sparse attention {}; measured over batch {}, heads per GPU {}, K {}; beyond them extrapolated "
                     "linearly from the last two points (modelled)",
                     a.label(), span(a.table->batches(kernel)), span(a.table->heads(kernel)), span(a.table->ks(kernel)));
}

}  // namespace hisparse::sim

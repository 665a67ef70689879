// @brief hisparse.plan / advise / validate over the library's requests (see commands.h).
#include "python/bindings/commands.h"

#include <cstdio>

#include <fmt/format.h>

#include "core/error.h"
#include "core/scenario_loader.h"
#include "core/yaml_reader.h"
#include "cuda/runtime.h"
#include "python/bindings/facade.h"
#include "sim/api/advise_request.h"
#include "sim/api/plan_request.h"
#include "validate/validate.h"

namespace hisparse::python {

CommandOutput plan(const sim::PlanRequest& request, const std::string& out_dir, bool plots) {
  const sim::PlanOutcome outcome = sim::run_plan(request);
  if (!out_dir.empty()) sim::write_plan_files(outcome, out_dir, plots);
  return {outcome.json(), sim::plan_console_text(outcome)};
}

CommandOutput advise(const sim::AdviseRequest& request, const std::string& out_dir, bool plots) {
  const sim::AdviseOutcome outcome = sim::run_advise(request);
  if (!out_dir.empty()) sim::write_advice_files(outcome, out_dir, plots);
  return {outcome.json(), sim::advice_to_text(outcome.setup.scenario, outcome.advices, outcome.setup.info)};
}

double parse_bytes(const std::string& text, const std::string& what) {
  return parse_byte_size(text, what);
}

void set_bundled_scenario_dir(const std::string& dir) { hisparse::set_bundled_scenario_dir(dir); }

validation::ValidateResult validate(const validation::ValidateRequest& request) {
  validation::ValidateResult r = validation::run_validation(request, [](const std::string& line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
  });
  std::fflush(stdout);
  return r;
}

CudaStatus cuda_status() {
  CudaStatus s;
#ifdef HISPARSE_HAVE_CUDA
  s.built = true;
#endif
  s.available = cuda::cuda_available(&s.why);
  if (s.available) s.device = cuda::device_name();
  return s;
}

void flush_stdout() { std::fflush(stdout); }

}  // namespace hisparse::python

// @brief run_check (see check_request.h).
#include "sim/api/check_request.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/family/family_registry.h"
#include "core/text_format.h"
#include "sim/api/scenario_setup.h"
#include "sim/workload/workload.h"

namespace hisparse::sim {

namespace {

struct Longest {
  int64_t prompt = 0, request = 0;
  std::string line;
};

Longest longest_of(const std::string& workload, const std::string& command) {
  Longest l;
  if (workload.empty()) return l;
  const Workload w = load_workload(workload);
  if (w.requests.empty()) throw_error("{}: workload {} holds no request", command, workload);
  for (const RequestSpec& q : w.requests) {
    l.prompt = std::max<int64_t>(l.prompt, q.input_tokens);
    l.request = std::max(l.request, int64_t{q.input_tokens} + q.output_tokens);
  }
  l.line = fmt::format("workload {} ({}): {} requests; longest prompt {} tokens, longest prompt + output {} tokens",
                       w.name, w.source, w.requests.size(), group_digits(l.prompt), group_digits(l.request));
  return l;
}

}  // namespace

CheckOutcome run_check(const CheckRequest& r) {
  CheckOutcome out;
  out.scenario = load_scenario_setup(r.setup, r.command).scenario;
  const Longest l = longest_of(r.workload, r.command);
  out.workload_line = l.line;
  out.check = check_pools(out.scenario, l.prompt, l.request);
  if (family_of(out.scenario).compressed_pools()) {
    std::vector<int> ratios(r.ratios.begin(), r.ratios.end());
    if (ratios.empty()) ratios = {1, 2, 3, 4, 5, 6, 8};
    out.release = c4_release_by_ratio(out.scenario, ratios);
  }
  return out;
}

std::string check_to_text(const CheckOutcome& o) {
  const Scenario& s = o.scenario;
  std::string out = fmt::format("hisparse check: {} ({}), model {}, {} × {}\n", s.deployment.name, s.source, s.model.name,
                                s.deployment.decode.gpus, s.hardware.name);
  if (!o.workload_line.empty()) out += o.workload_line + "\n";
  out += pool_check_text(o.check);
  if (!o.release.empty()) out += c4_release_text(s, o.release);
  return out;
}

void require_pools_fit(const Scenario& s, const std::string& workload, const std::string& command) {
  const Longest l = longest_of(workload, command);
  require_no_pool_problem(check_pools(s, l.prompt, l.request), s, command);
}

}  // namespace hisparse::sim

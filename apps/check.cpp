// @brief `hisparse check --scenario S [--workload W] [--ratios …] [--report FILE]`: the pools of a deployment against a
// workload's longest request, before anything is simulated (sim/api/check_request.h). Prints every pool's capacity
// and, for DeepSeek-V4, the HBM released against host_to_device_ratio under each C4 sizing rule; exit 1 naming the
// pool, the figure and the fix when a prompt does not fit, the configuration cannot start or the pools cannot all be
// allocated.
#include <string>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command.h"
#include "apps/command_line.h"
#include "apps/list_args.h"
#include "apps/scenario_flags.h"
#include "core/io/atomic_output.h"
#include "sim/api/check_request.h"

namespace hisparse::apps {

namespace po = boost::program_options;

int run_check(int argc, char** argv) {
  std::string scenario_name, ratio_text, report_path;
  sim::CheckRequest req;
  po::options_description desc(
      "hisparse check --scenario S [--workload W] [--ratios 1,2,4,8] [--report FILE]\n\n"
      "Checks a decode deployment's pools before anything is simulated (plan and advise run the same check first):\n"
      "the workload's longest request against every pool (logical, host, device, C4, SWA, indexer), whether the\n"
      "configuration starts under the pool sizing of its engine_version, whether the pools can all be allocated.\n"
      "Prints each pool's capacity and, for DeepSeek-V4, the HBM released against host_to_device_ratio under each C4\n"
      "sizing rule. Exit 1 with every problem (pool, figure, fix) on stderr when one is found.\n\noptions");
  desc.add_options()("help,h", "this help")(
      "scenario", po::value(&scenario_name)->required(), "deployment name (scenarios/deployments) or YAML path")(
      "workload", po::value(&req.workload), "workload name / YAML / trace file whose longest request is checked")(
      "ratios", po::value(&ratio_text), "host_to_device_ratio values of the C4 release table (default 1,2,3,4,5,6,8)")(
      "report", po::value(&report_path), "also write the report to FILE");
  add_scenario_flags(desc, kSettingFlags | kDeploymentFlags);
  po::variables_map vm;
  if (!parse_flags(po::parse_command_line(argc, argv, desc), desc, vm)) return 0;
  req.setup = scenario_choice(vm, scenario_name, "check");
  if (!ratio_text.empty())
    for (int64_t r : parse_count_list(ratio_text, "check", "--ratios", 1, 1 << 20, "1,2,4,8"))
      req.ratios.push_back(static_cast<int32_t>(r));
  const sim::CheckOutcome outcome = sim::run_check(req);
  const std::string text = sim::check_to_text(outcome);
  fmt::print("{}", text);
  if (!report_path.empty()) {
    AtomicOutput out(report_path, "--report");
    out.write(text);
    out.commit();
  }
  if (outcome.check.problems.empty()) return 0;
  fmt::print(stderr, "hisparse check: {}: {} problem(s) found before anything is simulated:\n", outcome.scenario.source,
             outcome.check.problems.size());
  for (const sim::CheckProblem& p : outcome.check.problems) fmt::print(stderr, "  [{}] {}\n", p.pool, p.message);
  return 1;
}

}  // namespace hisparse::apps

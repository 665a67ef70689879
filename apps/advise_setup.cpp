// @brief The advice flags and their request (see advise_setup.h).
#include "apps/advise_setup.h"

#include <fmt/format.h>

#include "apps/list_args.h"
#include "apps/scenario_flags.h"
#include "core/error.h"

namespace hisparse::apps {

namespace po = boost::program_options;

namespace {

/// Replay (the advice without --trace) has its own --top-k and --page-size: those of its trace, not the scenario's.
const std::vector<std::string>& replay_own_flags() {
  static const std::vector<std::string> names = {"top-k", "page-size"};
  return names;
}

}  // namespace

void add_advise_options(po::options_description& desc, AdviseArgs& a, bool with_trace) {
  desc.add_options()("scenario", po::value(&a.scenario)->required(), "deployment name (scenarios/deployments) or YAML path")(
      "seq-lens", po::value(&a.seq_lens), "context lengths, comma-separated, K = 1024 (one advice each; default "
      "16K,32K,64K,128K unless --workload is given; with --trace alone, the trace's own decode steps)")(
      "workload", po::value(&a.workload), "workload name / YAML / trace file: one advice for its decode context mix")(
      "mix-classes", po::value(&a.mix_classes)->default_value(a.mix_classes), "length classes of a --workload mix");
  if (with_trace)
    desc.add_options()("trace", po::value(&a.trace), "top-k trace whose replay gives the misses (else the miss surface)")(
        "policy", po::value(&a.policy)->default_value(a.policy), "swap-in policy of the miss model")(
        "threads", po::value(&a.threads)->default_value(a.threads), "replay threads for --trace");
  desc.add_options()("rescale-trace-top-k", "accept a --trace whose top_k differs from the scenario's: replay it at the "
                                            "same H/K and apply its miss fractions in (H/K, n/H)")(
      "buffer-sizes", po::value(&a.buffer_sizes), "device_buffer_size candidates (default top_k × 1, 1.5, 2, 3, 4, 6, 8)")(
      "ratios", po::value(&a.ratios), "host_to_device_ratio candidates (default 1,2,3,4,5,6,8,10,12,16,20)")(
      "decision-rule", po::value(&a.decision_rule)->default_value(a.decision_rule),
      "how the goodputs under every miss source and assumed cost range pick the recommendation: worst-case (the "
      "best lowest goodput), expected (the best mean), min-regret (the smallest largest shortfall against each "
      "case's best) or default-source (the advice's own miss model only; the others are reported)")(
      "compare-miss-curves", po::value(&a.compare_miss_curves),
      "more miss surfaces (names or .yaml paths, comma-separated; e.g. fitted from your server's counters) the "
      "robustness check weighs besides the shipped ones");
  // device_buffer_size, host_to_device_ratio and --max-running-requests are what the advice chooses.
  add_scenario_flags(desc, kDeploymentFlags | kHostReserveFlag | kCostFlags | kMissFlags,
                     with_trace ? std::vector<std::string>{} : replay_own_flags());
}

namespace {

std::vector<int32_t> int_list(const std::string& text, const std::string& command, const char* flag) {
  std::vector<int32_t> out;
  for (int64_t v : parse_count_list(text, command, std::string("--") + flag, 1, int64_t{1} << 24, "4096,8192"))
    out.push_back(static_cast<int32_t>(v));
  return out;
}

}  // namespace

sim::AdviseRequest advise_request(const AdviseArgs& a, const po::variables_map& vm, const std::string& command) {
  sim::AdviseRequest r;
  r.setup = scenario_choice(vm, a.scenario, command, command == "replay" ? replay_own_flags() : std::vector<std::string>{});
  r.misses = miss_choice(vm, /*with_trace=*/false);
  r.misses.trace = a.trace;
  r.misses.policy = a.policy;
  if (a.threads < 1) throw_error("{}: --threads {} (expected >= 1 replay threads)", command, a.threads);
  r.misses.threads = a.threads;
  // A flag given empty ("--seq-lens ''") is refused by store_flags, not read as the default.
  if (!a.seq_lens.empty())
    r.seq_lens = parse_count_list(a.seq_lens, command, "--seq-lens", 1, int64_t{1} << 30, "16K,32K,65536");
  r.workload = a.workload;
  r.mix_classes = a.mix_classes;
  if (!a.buffer_sizes.empty()) r.buffer_sizes = int_list(a.buffer_sizes, command, "buffer-sizes");
  if (!a.ratios.empty()) r.ratios = int_list(a.ratios, command, "ratios");
  r.decision_rule = a.decision_rule;
  r.compare_miss_curves = split_list(a.compare_miss_curves);
  return r;
}

}  // namespace hisparse::apps

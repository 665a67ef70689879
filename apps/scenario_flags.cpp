// @brief The shared override flags (see scenario_flags.h).
#include "apps/scenario_flags.h"

#include <algorithm>

#include "sim/api/settings_table.h"
#include "sim/miss/miss_surface.h"

namespace hisparse::apps {

namespace po = boost::program_options;

namespace {

}  // namespace

void add_table_flag(po::options_description& desc, const sim::SettingSpec& s, const std::string& extra_help) {
  const std::string help = sim::setting_help(s) + extra_help;
  // A name or path keeps boost's "(=auto)" default, which simulate's deprecated --cost tests with defaulted().
  auto* value = po::value<std::string>();
  if (s.kind == sim::SettingKind::kText) value->default_value(s.default_text);
  desc.add_options()(s.flag, value, help.c_str());
}

void add_setting_flags(po::options_description& desc, unsigned groups) {
  for (const sim::Setting& s : sim::settings_table())
    if (s.groups & groups)
      add_table_flag(desc, s, std::string(s.flag) == "overlap" && (groups & kOverlapBoth) ? " (or both: each in turn)" : "");
}

void add_scenario_flags(po::options_description& out, unsigned groups, const std::vector<std::string>& except) {
  po::options_description desc;
  auto add = desc.add_options();
  add_setting_flags(desc, groups);
  if (groups & kMissFlags)
    add("miss-curve", po::value<std::string>(), "miss surface: scenarios/miss_models/<name>.yaml or a .yaml path "
        "(written by `hisparse fit-miss-model`; default smollm2-real below top_k 1024, gemma3-270m-field from 1024 on); with a trace, used where it measured nothing")(
        "miss-fraction", po::value<double>(), "a constant per-layer miss fraction of K once n > H, in [0, 1], instead "
        "of the surface");
  if (groups & kTraceMissFlags)
    add("trace", po::value<std::string>(), "top-k trace replayed at every buffer size: its measured misses replace "
        "the model's where it has data")(
        "policy", po::value<std::string>()->default_value("sglang-lru"), "swap-in policy of the replay and the surface")(
        "threads", po::value<int>()->default_value(1), "replay threads for --trace")(
        "rescale-trace-top-k", "accept a --trace whose top_k differs from the scenario's: replay it at the same H/K "
        "and apply its fractions by n/H");
  for (const auto& o : desc.options())
    if (std::find(except.begin(), except.end(), o->long_name()) == except.end()) out.add(o);
}

namespace {

template <class T>
std::optional<T> opt(const po::variables_map& vm, const char* flag) {
  if (!vm.count(flag)) return std::nullopt;
  return vm[flag].as<T>();
}

}  // namespace

sim::ScenarioChoice scenario_choice(const po::variables_map& all, const std::string& scenario, const std::string& command,
                                    const std::vector<std::string>& except) {
  po::variables_map vm = all;
  for (const auto& name : except) vm.erase(name);
  sim::ScenarioChoice c;
  c.scenario = scenario;
  for (const sim::Setting& s : sim::settings_table()) {
    if (!vm.count(s.flag)) continue;
    const std::string text = vm[s.flag].as<std::string>();
    if (std::string(s.flag) == "overlap" && text == "both") continue;  // simulate's to expand; any other is one mode
    sim::set_setting(c, s, text, command + ": ", std::string("--") + s.flag);
  }
  return c;
}

sim::MissChoice miss_choice(const po::variables_map& vm, bool with_trace) {
  sim::MissChoice m;
  if (vm.count("miss-curve")) m.surface = vm["miss-curve"].as<std::string>();
  m.fraction = opt<double>(vm, "miss-fraction");
  m.rescale_trace_top_k = vm.count("rescale-trace-top-k") > 0;
  if (!with_trace) return m;
  if (vm.count("trace")) m.trace = vm["trace"].as<std::string>();
  if (vm.count("policy")) m.policy = vm["policy"].as<std::string>();
  if (vm.count("threads")) m.threads = vm["threads"].as<int>();
  return m;
}

}  // namespace hisparse::apps

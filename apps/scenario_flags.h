// @brief The override flags every scenario command shares (plan, advise, simulate, replay --scenario): generated from
// the settings table (sim/api/settings_table.h) so a flag has one spelling, one unit, one range and one meaning (per
// instance, per dp rank, per GPU or per node, as its help says), and read back into the library's ScenarioChoice /
// MissChoice through the table's parse and range check, as the field files and Python are.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "sim/api/scenario_setup.h"
#include "sim/api/settings_table.h"

namespace hisparse::apps {

/// Which groups of flags a command takes.
enum ScenarioFlags : unsigned {
  // The settings table's groups (sim/api/settings_table.cpp lists which setting is in which):
  kSettingFlags = sim::kSettingGroupChosen,          // H, ratio, --max-running-requests (advise chooses them)
  kDeploymentFlags = sim::kSettingGroupDeployment,   // --top-k, --page-size, --kv-dtype, ..., memory and pools
  kHostReserveFlag = sim::kSettingGroupHostReserve,  // --host-reserve-bytes (plan and advise)
  kCostFlags = sim::kSettingGroupCost,               // --cost-params, calibrations, tables, --swap-in-kernel, --overlap
  kOverlapBoth = 16,     // --overlap also takes `both` (simulate runs each)
  kMissFlags = 32,       // --miss-curve, --miss-fraction
  kTraceMissFlags = 64,  // --trace, --policy, --threads, --rescale-trace-top-k (plan, advise)
};

/// Adds a flag for each setting of the table in `groups` (kSettingFlags, kDeploymentFlags, kHostReserveFlag,
/// kCostFlags; with kOverlapBoth --overlap also takes `both`), each with its generated help line; a command with flags
/// of its own keeps declaring those itself. Values stay text until scenario_choice parses them through the table.
void add_setting_flags(boost::program_options::options_description& desc, unsigned groups);

/// One flag for each row of a settings table (any TargetSetting<T>, a command's own too) in `groups`: the row's flag,
/// its value as text (parsed by set_setting), its generated help line plus `extra_help(row)` where given.
void add_table_flag(boost::program_options::options_description& desc, const sim::SettingSpec& row,
                    const std::string& extra_help = "");
template <class Row>
void add_table_flags(boost::program_options::options_description& desc, const std::vector<Row>& rows, unsigned groups) {
  for (const Row& row : rows)
    if (row.groups & groups) add_table_flag(desc, row);
}

/// Adds the flags of `groups` to `desc`, but those named in `except` (a command whose own flag of that name means
/// something else: replay's --top-k and --page-size describe its trace).
void add_scenario_flags(boost::program_options::options_description& desc, unsigned groups,
                        const std::vector<std::string>& except = {});

/// The overrides, cost and calibration choices given in `vm` (flags absent from it, or named in `except`, stay
/// unset); byte sizes such as 1TiB are parsed here. `scenario` is the --scenario value.
sim::ScenarioChoice scenario_choice(const boost::program_options::variables_map& vm, const std::string& scenario,
                                    const std::string& command, const std::vector<std::string>& except = {});

/// The miss model given in `vm`: --miss-curve, --miss-fraction, --rescale-trace-top-k and, `with_trace`, the
/// kTraceMissFlags (replay's --trace and --policy are its own input, not a miss model).
sim::MissChoice miss_choice(const boost::program_options::variables_map& vm, bool with_trace);

}  // namespace hisparse::apps

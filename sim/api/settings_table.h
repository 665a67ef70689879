// @brief One declaration per override setting (after Vidur's config table: vidur/config/config.py at 8afeaf0 declares
// each option once, a dataclass field with its default and metadata help, and vidur/config/flat_dataclass.py makes the
// argparse flags from those fields): name, unit, range, default, help,
// the YAML key, the CLI flag and SGLang's flag where it has one. The command-line flags and their --help lines
// (apps/scenario_flags.cpp), the strict `overrides:` reader of the field files (sim/api/fidelity_request.cpp) and the
// Python keywords (python/hisparse/commands.py through the module's set_setting) are all walked from this one table,
// and every value of every front is parsed and range-checked here, so a setting is spelled, typed and refused alike
// from each.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "sim/api/requests.h"

namespace hisparse::sim {

/// How a setting's value is written and stored.
enum class SettingKind {
  kInt,     // an integer literal, stored as int32
  kInt64,   // an integer literal, stored as int64
  kReal,    // a number (inf and nan parse, and are then out of range)
  kBytes,   // a byte size with an optional unit (core/yaml_reader.h: 141GB, 1TiB, 141e9)
  kChoice,  // one of `choices` (or a spelling `value_aliases` maps to one)
  kText,    // a name or path, checked where it is loaded
  kBool,    // true | false (on | off, yes | no, 1 | 0)
};

/// Which commands take a setting (apps/scenario_flags.h's ScenarioFlags bits have the same values).
enum SettingGroup : unsigned {
  kSettingGroupChosen = 1,       // H, ratio, the running cap: advise chooses them, so advise takes no such flag
  kSettingGroupDeployment = 2,   // the deployment's server settings, memory and pools
  kSettingGroupHostReserve = 4,  // plan and advise only: host DRAM kept back from the host pools
  kSettingGroupCost = 8,         // the cost terms, calibrations, tables and overlap
};

/// A parsed value: bool for kBool, int64 for kInt / kInt64, double for kReal / kBytes, text for kChoice / kText.
using SettingValue = std::variant<bool, int64_t, double, std::string>;

/// A setting's declaration, whatever it sets: the columns the flags, --help, the YAML reader and the messages read.
struct SettingSpec {
  const char* name;          // snake_case: the key under a field file's `overrides:` and the Python keyword
  const char* flag;          // the CLI flag, without its "--"
  const char* sglang_alias;  // SGLang's flag of the same meaning (taken as this one on the CLI and in Python), or null
  SettingKind kind;
  const char* unit;          // of the value, for --help ("" for names and choices)
  double lo, hi;             // numbers: lo <= v <= hi (lo < v when lo_open); hi = inf: no upper bound but the type's
  bool lo_open;
  std::vector<const char*> choices;                                // kChoice
  std::vector<std::pair<const char*, const char*>> value_aliases;  // kChoice: another spelling -> the choice
  const char* range_noun;    // what the range counts, before it ("a number of ms"), or null
  const char* range_note;    // after it ("(0 = no cap)"), or null
  const char* default_text;  // what leaving the setting out means
  const char* help;          // what it is, its unit's meaning where not obvious, and whose figure it replaces
  const char* deployment_key;  // the deployment YAML key it replaces ("memory.hbm_bytes"), or null
  unsigned groups;             // SettingGroup bits (a command's own table may use its own)
};

/// A row of a table over `Target`: the declaration and where its value goes. This file's table is over
/// ScenarioChoice; a command's own flags (simulate's workload, concurrency, mode) can be a table over its request,
/// registered by apps/scenario_flags.h's add_table_flags and set by set_setting below, with the same parse and words.
template <class Target>
struct TargetSetting : SettingSpec {
  void (*set)(Target&, const SettingValue&);
  std::optional<SettingValue> (*get)(const Target&);  // unset: leaves the deployment's / the default
};
using Setting = TargetSetting<ScenarioChoice>;

/// Every setting, in --help order.
const std::vector<Setting>& settings_table();
/// The setting named `name` (its name, its flag, or with `aliases` its SGLang alias in either spelling); null if none.
const Setting* find_setting(const std::string& name, bool aliases = true);

/// What a value must be: "1..16 (0 = no MTP)", "in (0, 1]", "bf16, fp8 or nvfp4"; "" for kText and kBool.
std::string range_text(const SettingSpec& s);
/// Whether `v` is in the setting's range (always for kText and kBool).
bool in_range(const SettingSpec& s, const SettingValue& v);
/// "<spelling> <value>: expected <range>", the one out-of-range message of every front; `spelling` is the setting as
/// that front writes it ("--page-size", "overrides.page_size", "page_size").
std::string range_error(const SettingSpec& s, const std::string& spelling, const SettingValue& v);
/// A value as the fronts print it (doubles as fmt's shortest round trip, as the flags were always echoed).
std::string value_text(const SettingValue& v);
/// A value out of the setting's range, for tests of every front's refusal (nullopt for kText and kBool).
std::optional<std::string> out_of_range_example(const SettingSpec& s);
/// A value in range that differs from the unset default where it can (the last choice, the upper bound, a made-up
/// path, false), for tests that every front reaches the setting.
std::string in_range_example(const SettingSpec& s);

/// Parses `text` as the setting's kind; throws "<where><spelling> '<text>' is not <kind>" when it is not one.
SettingValue parse_setting(const SettingSpec& s, const std::string& text, const std::string& where,
                           const std::string& spelling);
/// parse_setting, then the range check (throws "<where><range_error>"), then sets it in `target`.
template <class Target>
void set_setting(Target& target, const TargetSetting<Target>& s, const std::string& text, const std::string& where,
                 const std::string& spelling) {
  const SettingValue v = parse_setting(s, text, where, spelling);
  if (!in_range(s, v)) throw_range_error(s, where, spelling, v);
  s.set(target, v);
}

/// Throws "<where><range_error>".
[[noreturn]] void throw_range_error(const SettingSpec& s, const std::string& where, const std::string& spelling,
                                    const SettingValue& v);

/// The --help line of a setting: its help, then "[unit; range; default]".
std::string setting_help(const SettingSpec& s);

/// The strict reader of a YAML mapping of settings (a field file's `overrides:`): each key a setting's name, each
/// value a scalar parsed and checked as the other fronts do; errors name `file`, `<path>.<key>`, its line and value.
void read_settings_yaml(const YAML::Node& map, const std::string& file, const std::string& path,
                        ScenarioChoice& choice);

/// Throws "<command>: <range_error> (the flag replaces <deployment>'s <key>)" for the first set override of `o` out
/// of its range: apply_overrides' check of a ScenarioOverrides built by hand (Python's struct, a test).
void check_override_ranges(const ScenarioOverrides& o, const std::string& command, const std::string& deployment);

}  // namespace hisparse::sim

// @brief The settings table (sim/api/settings_table.h): every setting is read by the strict YAML reader under its name
// and lands where its flag and its Python keyword set it; a value out of range gets one message, "<setting> <value>:
// expected <range>", from the YAML reader, the flag parse and apply_overrides, each naming the setting in its own
// spelling; the field files' `overrides:` take every setting (nvfp4 included, which the fidelity's own parser used to
// refuse) and no other key. The CLI's side is tests/apps/test_settings_cli.cpp, Python's tests/python/test_settings.py.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "core/error.h"
#include "core/yaml_reader.h"
#include "sim/api/fidelity_request.h"
#include "sim/api/scenario_setup.h"
#include "sim/api/settings_table.h"
#include "sim/fidelity/field_set.h"
#include "tests/error_of.h"

using namespace hisparse;
using namespace hisparse::sim;
using hisparse::test::error_of;

namespace {

/// `name: text` read by the table's YAML reader as a field file's overrides (file "t.yaml").
ScenarioChoice read_one(const std::string& name, const std::string& text) {
  ScenarioChoice c;
  read_settings_yaml(load_yaml_string(name + ": " + text + "\n", "t.yaml"), "t.yaml", "overrides", c);
  return c;
}

std::string text_of(const std::optional<SettingValue>& v) { return v ? value_text(*v) : "(unset)"; }

}  // namespace

TEST_CASE("settings table: names, flags and aliases are each one setting's") {
  // Expectation: no two settings share a name, a flag or an alias (a lookup would find the wrong one), each has help,
  // a default and its setter and getter, and a name is its flag with '_' for '-'.
  std::set<std::string> seen;
  for (const Setting& s : settings_table()) {
    const std::string name = s.name;
    CAPTURE(name);
    CHECK(seen.insert(s.name).second);
    if (std::string(s.flag) != s.name) CHECK(seen.insert(s.flag).second);
    if (s.sglang_alias) CHECK(seen.insert(s.sglang_alias).second);
    std::string flag = s.name;
    for (char& c : flag) c = c == '_' ? '-' : c;
    CHECK(flag == s.flag);
    CHECK(std::string(s.help).size() > 10);
    CHECK(std::string(s.default_text).size() > 0);
    const bool has_setter = s.set != nullptr, has_getter = s.get != nullptr;
    CHECK(has_setter);
    CHECK(has_getter);
    CHECK(find_setting(s.name) == &s);
  }
  MESSAGE("SGLang's --kv-cache-dtype is kv_dtype, in the flag's and the keyword's spelling");
  REQUIRE(find_setting("kv-cache-dtype") != nullptr);
  CHECK(std::string(find_setting("kv-cache-dtype")->name) == "kv_dtype");
  CHECK(find_setting("kv_cache_dtype") == find_setting("kv_dtype"));
  CHECK(find_setting("kv_cache_dtype", /*aliases=*/false) == nullptr);
}

TEST_CASE("settings table: every setting is reachable from a YAML mapping and lands where its flag sets it") {
  // Expectation: for each setting, a mapping `name: <a value in range>` read by the YAML reader leaves the choice
  // with exactly that value (read back through the table's getter), which differs from what an empty choice holds;
  // the flag parse (set_setting, as scenario_choice calls it) sets the same value.
  for (const Setting& s : settings_table()) {
    const std::string name = s.name, example = in_range_example(s);
    CAPTURE(name);
    CAPTURE(example);
    const std::string expected = value_text(parse_setting(s, example, "", name));
    const ScenarioChoice from_yaml = read_one(s.name, example);
    CHECK(text_of(s.get(from_yaml)) == expected);
    CHECK(text_of(s.get(ScenarioChoice{})) != expected);
    ScenarioChoice from_flag;
    set_setting(from_flag, s, example, "plan: ", std::string("--") + s.flag);
    CHECK(text_of(s.get(from_flag)) == expected);
  }
}

TEST_CASE("settings table: a value out of range gets the same message from the YAML reader, the flags and the struct") {
  // Expectation: "<spelling> <value>: expected <range>" from each front, prefixed by where it came from: the YAML
  // reader with the file and line, the flag parse with the command, apply_overrides (a ScenarioOverrides built by
  // hand, as Python's struct) with the command and the deployment key the flag replaces.
  int checked = 0;
  for (const Setting& s : settings_table()) {
    const std::optional<std::string> bad = out_of_range_example(s);
    if (!bad) continue;
    const std::string name = s.name, flag = std::string("--") + s.flag;
    CAPTURE(name);
    CAPTURE(*bad);
    const SettingValue v = parse_setting(s, *bad, "", name);
    CHECK_FALSE(in_range(s, v));
    CHECK(error_of([&] { read_one(s.name, *bad); }) ==
          "t.yaml (line 1): " + range_error(s, "overrides." + name, v));
    ScenarioChoice c;
    CHECK(error_of([&] { set_setting(c, s, *bad, "plan: ", flag); }) == "plan: " + range_error(s, flag, v));
    if (s.groups & kSettingGroupCost && s.kind != SettingKind::kChoice) continue;
    if (std::string(s.name) == "overlap") continue;  // not an override: the cost model's, parsed where it is set
    ScenarioChoice raw;
    s.set(raw, v);  // past the parse, as a struct set field by field
    const std::string e = error_of([&] { check_override_ranges(raw.overrides, "advise", "dsv32"); });
    CHECK(e.rfind("advise: " + range_error(s, flag, v), 0) == 0);
    ++checked;
  }
  // 28 rows: 5 names or paths (cost_params, calibration, step_calibration, attention_table, op_tables) and a switch
  // (hisparse_prefetch) have no range, overlap is the cost model's: 21 overrides left.
  MESSAGE("every override with a range was checked against apply_overrides' message");
  CHECK(settings_table().size() == 28);
  CHECK(checked == 21);
  MESSAGE("the messages in words, written out for three settings");
  CHECK(error_of([] { read_one("mtp_acceptance", "1.5"); }) ==
        "t.yaml (line 1): overrides.mtp_acceptance 1.5: expected a probability in [0, 1]");
  CHECK(error_of([] { read_one("page_size", "0"); }) == "t.yaml (line 1): overrides.page_size 0: expected >= 1");
  CHECK(error_of([] { read_one("kv_dtype", "int4"); }) ==
        "t.yaml (line 1): overrides.kv_dtype int4: expected bf16, fp8 or nvfp4");
}

TEST_CASE("settings table: the YAML reader refuses unknown keys, lists and words where numbers go") {
  // Expectation: each refusal names the file, overrides.<key>, the line and what was expected.
  CHECK(error_of([] { read_one("kv_cache_dtype", "fp8"); }).find("unknown key 'overrides.kv_cache_dtype' (line 1)") !=
        std::string::npos);
  CHECK(error_of([] { read_one("top_k", "[1, 2]"); }).find("overrides.top_k: got a list, expected a single value") !=
        std::string::npos);
  CHECK(error_of([] { read_one("top_k", "many"); }) ==
        "t.yaml (line 1): overrides.top_k 'many' is not an integer in [-2147483648, 2147483647]");
  CHECK(error_of([] { read_one("hbm_bytes", "141 gigs"); }).find("overrides.hbm_bytes '141 gigs' is not a byte size") !=
        std::string::npos);
  MESSAGE("SGLang's dtype spellings are read as the dtype");
  CHECK(*read_one("kv_dtype", "fp8_e4m3").overrides.kv_dtype == "fp8");
}

TEST_CASE("settings table: a field file's overrides take every setting, nvfp4 included, checked before any run") {
  // Expectation: the field files' keys are the table's names; a run with kv_dtype nvfp4 (refused by the fidelity's
  // own override parser before the table) passes the check every run gets before any is evaluated, and one with
  // page_size 0 fails it naming the file, the key and its line.
  std::set<std::string> names;
  for (const Setting& s : settings_table()) names.insert(s.name);
  const std::vector<std::string>& keys = field_override_keys();
  CHECK(std::set<std::string>(keys.begin(), keys.end()) == names);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hisparse_test_settings_table";
  std::filesystem::create_directories(dir);
  auto field = [&](const std::string& name, const std::string& overrides) {
    const std::filesystem::path p = dir / (name + ".yaml");
    std::ofstream(p) << "name: " << name << "\ntitle: a test run\nsource:\n  publication: \"test\"\n  url: \"\"\n"
                     << "  date: 2026-11-20\n  quote: \"none\"\ndeployment: dsv4-flash-8xh200\nworkload:\n"
                     << "  input_tokens: 1000\n  output_tokens: 200\noverrides:\n  " << overrides << "\npoints:\n"
                     << "  - id: a\n    metric: tpot_ms\n    mode: full\n    concurrency: 1\n    published: 10\n"
                     << "    tolerance_pct: 10\n";
    return load_field_run(p.string());
  };
  FieldTrial none;
  none.points = {"no-such-run/no-such-point"};  // no run is evaluated: only the check every run gets first
  const FieldRun nvfp4 = field("nvfp4", "kv_dtype: nvfp4"), page = field("page", "page_size: 0");
  CHECK(error_of([&] { evaluate_field_runs(FidelityRequest{}, {nvfp4}, none, nullptr); }) == "");
  CHECK(error_of([&] { evaluate_field_runs(FidelityRequest{}, {page}, none, nullptr); }) ==
        (dir / "page.yaml").string() + " (line 13): overrides.page_size 0: expected >= 1");
}

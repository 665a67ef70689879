// @brief The CLI's front of the settings table (sim/api/settings_table.h): every setting is a flag of the commands its
// groups name, listed in --help with its range and default; every flag reaches the table's parse (a value out of
// range is refused with the table's message, the same the YAML reader and Python give), and SGLang's --kv-cache-dtype
// is --kv-dtype. The YAML side is tests/sim/api/test_settings_table.cpp, Python's tests/python/test_settings.py.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "sim/api/settings_table.h"
#include "tests/apps/cli_test_util.h"

using hisparse::test::Run;
using hisparse::test::run;
using namespace hisparse::sim;

namespace {

constexpr const char* kScenario = "--scenario dsv32-8xh200-1tb --seq-lens 16K --sweep-buffer-sizes 4096 "
                                  "--sweep-ratios 2 --no-plots";

bool lists(const std::string& help, const Setting& s) {
  return help.find(std::string("\n  --") + s.flag + " ") != std::string::npos;
}

}  // namespace

TEST_CASE("settings flags: every setting is a flag of the commands of its groups, with its range in --help") {
  // Expectation: plan takes every setting; advise every one but those it chooses (H, ratio, running cap); simulate
  // every one but --host-reserve-bytes (plan's and advise's); each help line shows the range the table declares.
  const std::filesystem::path dir = hisparse::test::scratch_dir("settings_help");
  const Run plan = run("plan --help", dir), advise = run("advise --help", dir), simulate = run("simulate --help", dir);
  REQUIRE(plan.status == 0);
  REQUIRE(advise.status == 0);
  REQUIRE(simulate.status == 0);
  // boost wraps help at 80 columns: compare without blanks.
  auto squeeze = [](const std::string& t) {
    std::string out;
    for (char c : t)
      if (c != ' ' && c != '\n') out += c;
    return out;
  };
  const std::string plan_squeezed = squeeze(plan.out);
  for (const Setting& s : settings_table()) {
    const std::string flag = s.flag;
    CAPTURE(flag);
    CHECK(lists(plan.out, s));
    CHECK(lists(advise.out, s) == !(s.groups & kSettingGroupChosen));
    CHECK(lists(simulate.out, s) == !(s.groups & kSettingGroupHostReserve));
    if (!range_text(s).empty()) CHECK(plan_squeezed.find(squeeze(range_text(s))) != std::string::npos);
  }
}

TEST_CASE("settings flags: a value out of range is refused with the table's message, naming flag, value and range") {
  // Expectation: `plan --<flag> <bad>` exits non-zero with "plan: --<flag> <value>: expected <range>", the message
  // the YAML reader gives for overrides.<name> and Python for <name>; a name or path setting reaches the loader
  // (the error names the made-up path), the switch the table's parse.
  const std::filesystem::path dir = hisparse::test::scratch_dir("settings_range");
  for (const Setting& s : settings_table()) {
    const std::string flag = std::string("--") + s.flag;
    CAPTURE(flag);
    const std::optional<std::string> bad = out_of_range_example(s);
    if (s.kind == SettingKind::kText) {
      const std::string path = in_range_example(s);
      const Run r = run(std::string("plan ") + kScenario + " --out " + (dir / "o").string() + " " + flag + " " + path,
                        dir);
      CHECK(r.status != 0);
      CHECK(r.err.find(path) != std::string::npos);
      continue;
    }
    if (s.kind == SettingKind::kBool) {
      const Run r = run(std::string("plan ") + kScenario + " " + flag + " maybe", dir);
      CHECK(r.status != 0);
      CHECK(r.err.find("plan: " + flag + " 'maybe' is not a switch") != std::string::npos);
      continue;
    }
    REQUIRE(bad);
    const Run r = run(std::string("plan ") + kScenario + " " + flag + " " + *bad, dir);
    CHECK(r.status != 0);
    const std::string expected = "plan: " + range_error(s, flag, parse_setting(s, *bad, "", flag));
    CAPTURE(r.err);
    CHECK(r.err.find(expected) != std::string::npos);
  }
  MESSAGE("in words, for one: --mtp-acceptance 1.5");
  const Run mtp = run(std::string("plan ") + kScenario + " --mtp-acceptance 1.5", dir);
  CHECK(mtp.err.find("plan: --mtp-acceptance 1.5: expected a probability in [0, 1]") != std::string::npos);
}

TEST_CASE("settings flags: SGLang's --kv-cache-dtype is --kv-dtype, refused alike") {
  // Expectation: the alias from the table is rewritten to the flag, so its refusal reads as the flag's.
  const std::filesystem::path dir = hisparse::test::scratch_dir("settings_alias");
  const Run theirs = run(std::string("plan ") + kScenario + " --kv-cache-dtype int4", dir);
  CHECK(theirs.status != 0);
  CHECK(theirs.err.find("plan: --kv-dtype int4: expected bf16, fp8 or nvfp4") != std::string::npos);
}

// @brief `--record` (sim/fidelity/field_record.h) edits only the recorded_error_pct line of each point, or inserts it
// after tolerance_pct: every comment, blank line and key order of the file stays, and the file reads back with the
// new values.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

#include "core/error.h"
#include "core/io/read_file.h"
#include "sim/fidelity/field_record.h"
#include "sim/fidelity/field_set.h"

using namespace hisparse;
using namespace hisparse::sim;

TEST_CASE("--record rewrites recorded_error_pct in place and keeps the comments") {
  const std::string src = std::string(HISPARSE_SOURCE_DIR) + "/tests/sim/fidelity/data/fixture-glm51-closed-loop.yaml";
  const auto dir = std::filesystem::temp_directory_path() / ("hisparse_record_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "fixture-glm51-closed-loop.yaml").string();
  std::filesystem::copy_file(src, path, std::filesystem::copy_options::overwrite_existing);
  const FieldRun run = load_field_run(path);
  RunResult r;
  r.run = run;
  const double errors[] = {-37.84, 17.66, -13.05, 57.5};
  for (size_t i = 0; i < run.points.size(); ++i) {
    PointResult p;
    p.point = run.points[i];
    p.error_pct = errors[i];
    r.points.push_back(p);
  }
  // tpot_c1 is recorded at 0.0: -37.8 loosens it, so a plain --record refuses and writes nothing.
  const std::string before = read_file(src);
  const std::string refused = "fixture-glm51-closed-loop/tpot_c1 (" + path + " line 19): recorded +0.0, now -37.8";
  CHECK_THROWS_WITH_AS(record_errors({r}), doctest::Contains(refused.c_str()), Error);
  CHECK(read_file(path) == before);
  CHECK(record_errors({r}, {"the fixture's figures changed", "2026-11-28"}) == std::vector<std::string>{path});
  const std::string after = read_file(path);
  // Expect the reason kept beside the loosened error, with its date and both errors.
  CHECK(after.find("    recorded_error_pct: -37.8   # kept by --record: this comment must survive\n    accepted_worse: "
                   "{date: 2026-11-28, reason: \"the fixture's figures changed\", from: 0.0, to: -37.8}\n") !=
        std::string::npos);
  // Expect the edited line to keep its trailing comment, the three new lines aligned under tolerance_pct, and every
  // other line unchanged: the new text minus the four recorded lines is the old text minus its one.
  CHECK(after.find("    recorded_error_pct: -37.8   # kept by --record: this comment must survive\n") != std::string::npos);
  CHECK(after.find("    tolerance_pct: 10\n    recorded_error_pct: 17.7\n") != std::string::npos);
  auto strip = [](const std::string& t) {
    std::string o;
    size_t s = 0;
    while (s < t.size()) {
      const size_t e = t.find('\n', s);
      const std::string line = t.substr(s, e - s);
      if (line.find("recorded_error_pct:") == std::string::npos && line.find("accepted_worse:") == std::string::npos)
        o += line + "\n";
      s = e == std::string::npos ? t.size() : e + 1;
    }
    return o;
  };
  CHECK(strip(after) == strip(before));
  const FieldRun back = load_field_run(path);
  CHECK(back.points[0].recorded_error_pct == std::optional<double>(-37.8));
  CHECK(back.points[1].recorded_error_pct == std::optional<double>(17.7));
  CHECK(back.points[2].recorded_error_pct == std::optional<double>(-13.1));
  CHECK(back.points[3].recorded_error_pct == std::optional<double>(57.5));
  REQUIRE(back.points[0].accepted_worse.has_value());
  CHECK(back.points[0].accepted_worse->reason == "the fixture's figures changed");
  CHECK(back.points[0].accepted_worse->to == -37.8);
  // Recorded again at the same error: nothing is looser, so no reason is needed and the reason stays.
  for (size_t i = 0; i < back.points.size(); ++i) r.points[i].point = back.points[i];
  CHECK(looser_than_recorded({r}).empty());
  CHECK_NOTHROW(record_errors({r}));
  CHECK(read_file(path).find("reason: \"the fixture's figures changed\"") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a point written in flow style cannot be recorded, and the error names it") {
  const std::string text = "points:\n  - {id: a, metric: gain, concurrency: 2, published: 2, tolerance_pct: 15}\n";
  FieldPoint p;
  p.id = "a";
  p.line = 2;
  // The flow-style line holds tolerance_pct but is not a `tolerance_pct:` line of the point's own.
  CHECK_THROWS_WITH_AS(with_recorded_errors(text, "f.yaml", {{p, 1.0}}),
                       doctest::Contains("f.yaml: point 'a' (line 2): no `tolerance_pct:` line"), Error);
}

// @brief `hisparse advise` and `hisparse replay --scenario` end to end: the printed buffer sweep's recommended row
// has the best goodput of the rows the tool prints, the reports are written, lengths take K suffixes, a trace of
// another top_k is refused, and `plan --limits memory` says what it applied.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "tests/apps/cli_test_util.h"
#include "traces/trace_generator.h"
#include "traces/trace_writer.h"

namespace fs = std::filesystem;
using namespace hisparse;
using hisparse::test::cli;
using hisparse::test::slurp;

namespace {

struct SweepRow {
  std::string setting;
  double goodput = 0;
  bool recommended = false;
};

// The rows of each "== context" block's buffer-sweep table, as printed.
std::vector<std::vector<SweepRow>> printed_sweeps(const std::string& text) {
  std::vector<std::vector<SweepRow>> out;
  std::istringstream in(text);
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("== context", 0) == 0) {
      out.emplace_back();
      in_table = false;
      continue;
    }
    if (line.find("device_buffer_size") != std::string::npos && line.find("goodput") != std::string::npos) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    std::istringstream f(line);
    std::vector<std::string> w;
    std::string tok;
    while (f >> tok) w.push_back(tok);
    // "full KV" is two words; a HiSparse row starts with a number.
    const size_t shift = !w.empty() && w[0] == "full" ? 1 : 0;
    if (w.size() < 9 + shift || (shift == 0 && !std::isdigit(static_cast<unsigned char>(w[0][0])))) {
      in_table = false;
      continue;
    }
    std::string g = w[4 + shift];
    g.erase(std::remove(g.begin(), g.end(), ','), g.end());
    out.back().push_back(SweepRow{shift ? "full" : w[0] + "/" + w[1], std::stod(g), line.find("<- recommended") != std::string::npos});
  }
  return out;
}

}  // namespace

TEST_CASE("hisparse advise: the recommended row of every printed sweep has the best goodput; reports are written") {
  // Under --decision-rule default-source the recommendation is the best goodput of the advice's own model.
  const fs::path dir = hisparse::test::scratch_dir("advise_cli");
  const std::string cmd = cli() + " advise --scenario dsv32-8xh200-1tb --seq-lens 16K,32K,65536 --no-plots "
                          "--decision-rule default-source --out " +
                          (dir / "out").string() + " > " + (dir / "stdout.txt").string() + " 2> " +
                          (dir / "stderr.txt").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string text = slurp(dir / "stdout.txt");
  const auto sweeps = printed_sweeps(text);
  REQUIRE(sweeps.size() == 3);
  for (const auto& rows : sweeps) {
    REQUIRE(rows.size() == 8);  // full KV + top_k × 1, 1.5, 2, 3, 4, 6, 8 (the scenario's 4096 is among them)
    int recommended = 0;
    double best = 0;
    for (const auto& r : rows) best = std::max(best, r.goodput);
    for (const auto& r : rows) {
      if (!r.recommended) continue;
      ++recommended;
      CHECK(r.goodput == best);
    }
    CHECK(recommended == 1);
  }
  CHECK(text.find("decision rule: default-source") != std::string::npos);
  CHECK(text.find("SGLang flags: ") != std::string::npos);
  CHECK(text.find("--max-running-requests ") != std::string::npos);
  CHECK(text.find("break-even: ") != std::string::npos);
  CHECK(text.find("miss model: calibrated (miss surface gemma3-270m-field") != std::string::npos);  // K 2048's default
  CHECK(text.find("cost: modelled") != std::string::npos);
  const std::string json = slurp(dir / "out" / "advise.json");
  CHECK(json.find("\"label\": \"16K\"") != std::string::npos);
  CHECK(json.find("\"label\": \"64K\"") != std::string::npos);
  CHECK(fs::file_size(dir / "out" / "advise.md") > 1000);
  CHECK(fs::file_size(dir / "out" / "advise.html") > 1000);
  // The reports and advise.json name the command as typed: "hisparse advise" and every argument after it.
  const std::string typed = "hisparse advise --scenario dsv32-8xh200-1tb --seq-lens 16K,32K,65536 --no-plots "
                            "--decision-rule default-source --out " + (dir / "out").string();
  CHECK(slurp(dir / "out" / "advise.md").find("`" + typed + "`") != std::string::npos);
  CHECK(json.find("\"command_line\": \"" + typed + "\"") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "out" / "advise_0_pareto.png"));  // --no-plots
  // A length that is not a count names the flag and the value.
  const std::string bad = cli() + " advise --scenario dsv32-8xh200-1tb --seq-lens 16Q --no-plots --out " +
                          (dir / "bad").string() + " > /dev/null 2> " + (dir / "err.txt").string();
  CHECK(std::system(bad.c_str()) != 0);
  CHECK(slurp(dir / "err.txt").find("--seq-lens: '16Q' is not an integer") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "bad" / "advise.json"));
  fs::remove_all(dir);
}

TEST_CASE("hisparse advise: every recommendation prints its robustness line, under the default rule worst-case") {
  const fs::path dir = hisparse::test::scratch_dir("advise_cli_robust");
  const std::string cmd = cli() + " advise --scenario dsv32-8xh200-1tb --seq-lens 16K,32K --no-plots --out " +
                          (dir / "out").string() + " > " + (dir / "stdout.txt").string() + " 2> " +
                          (dir / "stderr.txt").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string text = slurp(dir / "stdout.txt");
  CHECK(text.find("decision rule: worst-case") != std::string::npos);
  size_t lines = 0, recommended = 0;
  for (size_t at = text.find("\nrobustness: "); at != std::string::npos; at = text.find("\nrobustness: ", at + 1)) {
    ++lines;
    const size_t end = text.find('\n', at + 1);
    const std::string line = text.substr(at + 1, end - at - 1);
    CHECK((line.rfind("robustness: robust: ", 0) == 0 || line.rfind("robustness: decided by ", 0) == 0));
  }
  for (size_t at = text.find("\nrecommended: "); at != std::string::npos; at = text.find("\nrecommended: ", at + 1))
    ++recommended;
  CHECK(recommended == 2);
  CHECK(lines == recommended);
  // Another shipped surface is one of the cases, in the text and in advise.json.
  CHECK(text.find("synthetic-dsv32") != std::string::npos);
  CHECK(slurp(dir / "out" / "advise.json").find("\"robustness\": {\"rule\": \"worst-case\"") != std::string::npos);
  const std::string bad = cli() + " advise --scenario dsv32-8xh200-1tb --seq-lens 16K --no-plots --decision-rule best "
                          "--out " + (dir / "bad").string() + " 2> " + (dir / "err.txt").string();
  CHECK(std::system(bad.c_str()) != 0);
  CHECK(slurp(dir / "err.txt").find("decision rule 'best' is unknown") != std::string::npos);
}

TEST_CASE("hisparse replay --scenario: advice from the replayed misses; a trace of another top_k is refused") {
  const fs::path dir = hisparse::test::scratch_dir("replay_advice");
  traces::GeneratorOptions g = traces::generator_preset("tiny");
  g.requests = 2;
  g.steps = 12;
  g.layers = 2;
  g.top_k = 2048;
  g.prompt_len = 20000;
  g.seed = 5;
  {
    auto gen = traces::make_generated_trace(g);
    auto w = traces::make_native_writer((dir / "k2048.hst").string(), gen->meta());
    traces::copy_trace(*gen, *w);
  }
  g.top_k = 256;
  g.prompt_len = 3000;
  {
    auto gen = traces::make_generated_trace(g);
    auto w = traces::make_native_writer((dir / "k256.hst").string(), gen->meta());
    traces::copy_trace(*gen, *w);
  }
  const std::string ok = cli() + " replay --trace " + (dir / "k2048.hst").string() +
                         " --buffer-sizes 2048,4096,8K --policy sglang-lru --scenario dsv32-8xh200-1tb --quiet --no-plots "
                         "--out " + (dir / "out").string() + " > " + (dir / "stdout.txt").string();
  REQUIRE(std::system(ok.c_str()) == 0);
  const std::string text = slurp(dir / "stdout.txt");
  CHECK(text.find("advice for dsv32-8xh200-1tb") != std::string::npos);
  CHECK(text.find("miss model: measured (replayed top-k trace") != std::string::npos);
  const auto sweeps = printed_sweeps(text);
  REQUIRE(sweeps.size() == 1);
  CHECK(sweeps[0].size() == 4);  // full KV + the three replayed sizes
  const std::string json = slurp(dir / "out" / "replay.json");
  CHECK(json.find("\"recommendation\": {\"policy\": \"sglang-lru\"") != std::string::npos);
  // Row bytes follow the scenario's model and KV dtype (DeepSeek-V3.2, bf16: 1152 B).
  CHECK(json.find("\"row_bytes\": 1152") != std::string::npos);

  const std::string mismatch = cli() + " replay --trace " + (dir / "k256.hst").string() +
                               " --buffer-sizes 256,512 --scenario dsv32-8xh200-1tb --quiet --no-plots --out " +
                               (dir / "mm").string() + " > /dev/null 2> " + (dir / "err.txt").string();
  CHECK(std::system(mismatch.c_str()) != 0);
  const std::string err = slurp(dir / "err.txt");
  CHECK(err.find("has top_k 256 but scenario dsv32-8xh200-1tb runs top_k 2048") != std::string::npos);
  CHECK(err.find("--rescale-trace-top-k") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "mm" / "replay.json"));
  fs::remove_all(dir);
}

TEST_CASE("hisparse plan --limits memory: the capacity question without the SLO, said in the output") {
  const fs::path dir = hisparse::test::scratch_dir("plan_memory");
  const std::string cmd = cli() + " plan --scenario dsv32-8xh200-1tb --seq-lens 16K,128K --limits memory --no-plots --out " +
                          (dir / "out").string() + " > " + (dir / "stdout.txt").string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string text = slurp(dir / "stdout.txt");
  CHECK(text.find("--limits memory") != std::string::npos);
  CHECK(text.find(" slo ") == std::string::npos);
  CHECK(slurp(dir / "out" / "plan.json").find("\"limits\": \"memory\"") != std::string::npos);
  const std::string bad = cli() + " plan --scenario dsv32-8xh200-1tb --limits speed --no-plots --out " +
                          (dir / "bad").string() + " > /dev/null 2> " + (dir / "err.txt").string();
  CHECK(std::system(bad.c_str()) != 0);
  CHECK(slurp(dir / "err.txt").find("--limits 'speed' (expected all or memory)") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("first screen: advise opens with the SGLang flags, provenance lines are folded, --verbose prints them whole") {
  // Expected (issue 40): the first line is the flag line to launch SGLang with; the miss-model and cost lines of the
  // header are one short line each (at most sim::kFoldWidth bytes of text and the "… (--verbose)" hint, paths as file
  // names), and --verbose prints them in full, the cost line naming its cost-terms file by its path.
  const auto dir = test::scratch_dir("advise_first_screen");
  const std::string args = "advise --scenario dsv32-8xh200-1tb --seq-lens 32K --no-plots --out " + (dir / "a").string();
  const test::Run folded = test::run(args, dir);
  REQUIRE(folded.status == 0);
  REQUIRE(folded.out.rfind("launch SGLang, 32K: ", 0) == 0);
  const std::string first = folded.out.substr(0, folded.out.find('\n'));
  CHECK(first.find("--max-running-requests ") != std::string::npos);
  // The same flags as the advice's own "SGLang flags:" line further down.
  CHECK(folded.out.find("  SGLang flags: " + first.substr(std::string("launch SGLang, 32K: ").size()) + "\n") !=
        std::string::npos);
  auto line_of = [](const std::string& text, const std::string& head) {
    const size_t at = text.find("\n" + head);
    REQUIRE(at != std::string::npos);
    return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  const std::string hint = " … (--verbose)";
  for (const char* head : {"miss model: ", "cost: "}) {
    CAPTURE(head);
    const std::string l = line_of(folded.out, head);
    CHECK(l.size() <= 150 + hint.size());
    CHECK(l.find(std::string(HISPARSE_SOURCE_DIR)) == std::string::npos);
  }
  const test::Run full = test::run(args + " --verbose", dir);
  REQUIRE(full.status == 0);
  const std::string cost = line_of(full.out, "cost: ");
  CHECK(cost.find(hint) == std::string::npos);
  CHECK(cost.find("/scenarios/cost_model/") != std::string::npos);
  CHECK(cost.size() > line_of(folded.out, "cost: ").size());
}

TEST_CASE("hisparse advise --trace: the advice is at the lengths the trace was recorded at (issue 40 item 6)") {
  // A trace of 2 requests × 12 steps from a 20,000-token prompt records contexts 20,000..20,011. advise --trace with
  // no --seq-lens used to advise at the default 16K, 32K, 64K and 128K instead; as replay --scenario does, it now
  // gives one advice at the trace's own mix of its 24 decode steps, whose lengths all lie in [20,000, 20,011].
  const fs::path dir = hisparse::test::scratch_dir("advise_trace_lengths");
  traces::GeneratorOptions g = traces::generator_preset("tiny");
  g.requests = 2;
  g.steps = 12;
  g.layers = 2;
  g.top_k = 2048;
  g.prompt_len = 20000;
  g.seed = 5;
  {
    auto gen = traces::make_generated_trace(g);
    auto w = traces::make_native_writer((dir / "t.hst").string(), gen->meta());
    traces::copy_trace(*gen, *w);
  }
  const hisparse::test::Run r = hisparse::test::run(
      "advise --scenario dsv32-8xh200-1tb --trace " + (dir / "t.hst").string() + " --no-plots --out " +
          (dir / "out").string(),
      dir);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("== context the trace's 24 decode steps") != std::string::npos);
  for (const char* default_len : {"== context 16K", "== context 32K", "== context 128K"}) {
    CAPTURE(default_len);
    CHECK(r.out.find(default_len) == std::string::npos);
  }
  const std::string json = slurp(dir / "out" / "advise.json");
  CHECK(json.find("\"label\": \"the trace's 24 decode steps\"") != std::string::npos);
  // With --seq-lens the lengths asked for win over the trace's.
  const hisparse::test::Run s = hisparse::test::run(
      "advise --scenario dsv32-8xh200-1tb --trace " + (dir / "t.hst").string() + " --seq-lens 32K --no-plots --out " +
          (dir / "out2").string(),
      dir);
  REQUIRE(s.status == 0);
  CHECK(s.out.find("== context 32K") != std::string::npos);
  CHECK(s.out.find("== context the trace's") == std::string::npos);
  fs::remove_all(dir);
}

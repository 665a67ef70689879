// @brief advise.md and advise.html carry the MTP / HiSparse comparison the terminal prints: every concurrency's row
// with its winner, under the caption that says where the draft tokens and the acceptance come from; advise.json
// holds the same rows, and a model without an MTP layer gets no section.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/advise/advice_report.h"
#include "sim/advise/advisor.h"
#include "sim/plan/plan_report.h"
#include "tests/sim/advise_test_util.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

struct Reports {
  Advice advice;
  std::string text, markdown, html, json;
};

Reports reports_of(const Scenario& s) {
  Reports r;
  r.advice = advise(s, ContextMix::single(32768), default_miss_curves(s), AdviseOptions{});
  const std::vector<Advice> advices = {r.advice};
  const AdviceRunInfo info;
  r.text = advice_to_text(s, advices, info);
  r.markdown = advice_to_markdown(s, advices, info, {});
  r.html = advice_to_html(s, advices, info, {});
  r.json = advice_to_json(s, advices, info);
  return r;
}

std::string cell(const std::string& t, bool strong) { return strong ? "**" + t + "**" : t; }

// The line of the HTML table row that starts with `start` (empty when there is none).
std::string html_row(const std::string& html, const std::string& start) {
  const size_t at = html.find(start);
  if (at == std::string::npos) return "";
  return html.substr(at, html.find("</tr>", at) - at);
}

}  // namespace

TEST_CASE("advise reports: the MTP table, each concurrency's row and winner, in Markdown and HTML") {
  Scenario s = bundled();
  s.deployment.mtp_draft_tokens = 3;
  s.deployment.mtp_acceptance = 0.7;
  const Reports r = reports_of(s);
  const MtpComparison& m = r.advice.mtp;
  REQUIRE(!m.empty());
  REQUIRE(r.advice.recommended() != nullptr);
  // Expected: the caption names d = 3 at a = 0.7, E = 1 + 0.7 + 0.49 + 0.343 = 2.533 tokens a step, taken from the
  // deployment (not assumed), and says the tokens/s are modelled — in the text and both reports alike.
  for (const std::string* doc : {&r.text, &r.markdown, &r.html}) {
    CHECK(doc->find("MTP: 3 draft tokens at acceptance 0.7 → 2.533 accepted tokens per step") != std::string::npos);
    CHECK(doc->find("the deployment's mtp_draft_tokens / mtp_acceptance") != std::string::npos);
    CHECK(doc->find("(modelled; each at min(concurrency, its own limit))") != std::string::npos);
  }
  CHECK(r.markdown.find("### MTP vs HiSparse") != std::string::npos);
  CHECK(r.markdown.find("| concurrency | batch per rank | none tok/s | MTP tok/s | HiSparse tok/s | MTP + HiSparse tok/s "
                        "| wins |") != std::string::npos);
  // The scan reaches past one winner: at least two different combinations win somewhere (MTP at small batches,
  // HiSparse's larger batch at large ones), so the rows are not one repeated answer.
  bool two_winners = false;
  for (const MtpPoint& p : m.points) two_winners = two_winners || p.winner != m.points.front().winner;
  CHECK(two_winners);
  for (const MtpPoint& p : m.points) {
    CAPTURE(p.concurrency);
    REQUIRE(p.winner >= 0);
    const std::string winner = kMtpCombos[static_cast<size_t>(p.winner)];
    // Expected Markdown row: concurrency, batch per rank, the four tokens/s rounded (the winner's in bold), winner.
    std::string row = "| " + plan_int(p.concurrency) + " | " + plan_int(p.batch_per_rank) + " |";
    for (size_t i = 0; i < kMtpCombos.size(); ++i)
      row += " " + cell(plan_int(std::llround(p.tokens_per_s[i])), static_cast<int>(i) == p.winner) + " |";
    row += " **" + winner + "** |\n";
    CHECK(r.markdown.find(row) != std::string::npos);
    // Expected HTML row: the same cells, the winner's name last in bold.
    const std::string tr = html_row(r.html, "<tr><td>" + plan_int(p.concurrency) + "</td><td class=\"num\">" +
                                                plan_int(p.batch_per_rank) + "</td>");
    REQUIRE(!tr.empty());
    CHECK(tr.find("<strong>" + plan_int(std::llround(p.tokens_per_s[static_cast<size_t>(p.winner)])) + "</strong>") !=
          std::string::npos);
    const std::string last = "<td><strong>" + winner + "</strong></td>";
    REQUIRE(tr.size() > last.size());
    CHECK(tr.compare(tr.size() - last.size(), last.size(), last) == 0);
    // Expected in advise.json: the point with its winner.
    CHECK(r.json.find("{\"concurrency\": " + std::to_string(p.concurrency) + ", \"batch_per_rank\": " +
                      std::to_string(p.batch_per_rank)) != std::string::npos);
  }
  CHECK(r.json.find("\"largest_batch_per_rank\": {\"none\": " + std::to_string(m.per_rank[0])) != std::string::npos);
}

TEST_CASE("advise reports: without the deployment's MTP settings the table says they are assumed") {
  Scenario s = bundled();
  s.deployment.mtp_draft_tokens = 0;
  const Reports r = reports_of(s);
  REQUIRE(!r.advice.mtp.empty());
  // Expected: 1 draft token at 0.85 (DeepSeek-V3's report), labelled assumed with the flags that replace it.
  for (const std::string* doc : {&r.markdown, &r.html})
    CHECK(doc->find("MTP: 1 draft token at acceptance 0.85 → 1.850 accepted tokens per step, assumed:") !=
          std::string::npos);
}

TEST_CASE("advise reports: a model without an MTP layer has no MTP section") {
  Scenario s = bundled();
  s.model.mtp_layers = 0;
  const Reports r = reports_of(s);
  // Expected: no comparison, so no heading, no caption and a null in the JSON.
  CHECK(r.advice.mtp.empty());
  CHECK(r.markdown.find("MTP vs HiSparse") == std::string::npos);
  CHECK(r.html.find("MTP vs HiSparse") == std::string::npos);
  CHECK(r.json.find("\"mtp\": null") != std::string::npos);
}

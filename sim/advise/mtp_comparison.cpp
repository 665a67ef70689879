// @brief MTP, HiSparse, both or neither, by concurrency (mtp_comparison.h).
#include "sim/advise/mtp_comparison.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/io/output_file.h"
#include "sim/advise/advisor.h"
#include "sim/cost/layout/rank_layout.h"
#include "sim/cost/step/speculative.h"
#include "sim/cost/step/step_time_model.h"
#include "sim/plan/plan_report.h"

namespace hisparse::sim {
namespace {

// DeepSeek-V3 technical report (arXiv 2412.19437, §5.4.3): the second token its MTP module predicts is accepted
// 85–90 % of the time; the low end, one draft token, stands in when the deployment sets none.
constexpr int kAssumedDraftTokens = 1;
constexpr double kAssumedAcceptance = 0.85;

const char* winner_name(const MtpPoint& p) {
  return p.winner >= 0 ? kMtpCombos[static_cast<size_t>(p.winner)] : "nothing fits";
}

}  // namespace

MtpComparison compare_mtp(const Scenario& s, const ContextMix& mix, const MissCurves& misses, const Candidate& hs,
                          const AdviseOptions& o, const std::vector<int64_t>& batches) {
  MtpComparison out;
  if (s.model.mtp_layers == 0) return out;
  const DeploymentSpec& d = s.deployment;
  out.draft_tokens = d.mtp_draft_tokens > 0 ? d.mtp_draft_tokens : kAssumedDraftTokens;
  out.acceptance = d.mtp_draft_tokens > 0 ? d.mtp_acceptance : kAssumedAcceptance;
  out.source = d.mtp_draft_tokens > 0 ? "the deployment's mtp_draft_tokens / mtp_acceptance"
                                      : "assumed: 1 draft token at acceptance 0.85 (DeepSeek-V3 report: 85–90 %); "
                                        "set --mtp-draft-tokens / --mtp-acceptance";
  out.accepted_tokens = mtp_accepted_tokens(out.draft_tokens, out.acceptance);
  out.hisparse_setting = hs.name();
  const int ranks = rank_layout(s).ranks;
  std::vector<std::unique_ptr<StepTimeModel>> models;  // the estimator keeps its own copy of the scenario
  for (size_t i = 0; i < kMtpCombos.size(); ++i) {
    const bool mtp = i == 1 || i == 3, hisparse = i >= 2;
    Scenario sc = s;
    sc.deployment.mtp_draft_tokens = mtp ? out.draft_tokens : 0;
    sc.deployment.mtp_acceptance = mtp ? out.acceptance : 0;
    const KvMode mode = hisparse ? KvMode::kHiSparse : KvMode::kFull;
    const Candidate c = evaluate_candidate(sc, mix, misses, mode, hisparse ? hs.buffer_size : 0,
                                           hisparse ? hs.ratio : 0, o);
    out.per_rank[i] = c.per_rank;
    sc.deployment.hisparse_enabled = hisparse;
    if (hisparse) {
      sc.deployment.hisparse.device_buffer_size = hs.buffer_size;
      sc.deployment.hisparse.host_to_device_ratio = hs.ratio;
    }
    const int32_t H = hs.buffer_size;
    models.push_back(std::make_unique<StepTimeModel>(
        sc, o.cost, hisparse,
        hisparse ? MissFraction([&misses, H](int64_t n) { return misses.fraction(H, n); }) : MissFraction()));
  }
  for (int64_t B : batches) {
    MtpPoint p;
    p.batch_per_rank = B;
    p.concurrency = B * ranks;
    double best = 0;
    for (size_t i = 0; i < kMtpCombos.size(); ++i) {
      const int64_t b = std::min(B, out.per_rank[i]);
      p.tokens_per_s[i] = b > 0 ? models[i]->step(b, mix).tokens_per_s : 0.0;
      // A later combination wins only by more than a part in 10^9 (ties go to the simpler one).
      if (p.tokens_per_s[i] > best * (1 + 1e-9)) {
        best = p.tokens_per_s[i];
        p.winner = static_cast<int>(i);
      }
    }
    out.points.push_back(p);
  }
  return out;
}

std::string mtp_comparison_caption(const MtpComparison& m) {
  return fmt::format(
      "MTP vs HiSparse ({}; MTP: {} draft token{} at acceptance {:g} → {:.3f} accepted tokens per step, {}), decode "
      "tokens/s per instance (modelled; each at min(concurrency, its own limit))",
      m.hisparse_setting, m.draft_tokens, m.draft_tokens == 1 ? "" : "s", m.acceptance, m.accepted_tokens, m.source);
}

std::string mtp_comparison_text(const MtpComparison& m) {
  if (m.empty()) return "";
  std::string o = mtp_comparison_caption(m) + ":\n";
  o += fmt::format("  {:>11} {:>12} {:>12} {:>12} {:>15}  {}\n", "concurrency", kMtpCombos[0], kMtpCombos[1],
                   kMtpCombos[2], kMtpCombos[3], "wins");
  for (const MtpPoint& p : m.points)
    o += fmt::format("  {:>11} {:>12} {:>12} {:>12} {:>15}  {}\n", plan_int(p.concurrency),
                     plan_int(std::llround(p.tokens_per_s[0])), plan_int(std::llround(p.tokens_per_s[1])),
                     plan_int(std::llround(p.tokens_per_s[2])), plan_int(std::llround(p.tokens_per_s[3])),
                     winner_name(p));
  return o;
}

void mtp_comparison_json(JsonWriter& j, const MtpComparison& m) {
  using Layout = JsonWriter::Layout;
  j.begin_object(Layout::kInline).member("draft_tokens", m.draft_tokens).key("acceptance").general(m.acceptance, 6);
  j.key("accepted_tokens").general(m.accepted_tokens, 6).member("source", m.source);
  j.member("hisparse_setting", m.hisparse_setting).member("tokens_per_s_label", "modelled");
  j.key("largest_batch_per_rank").begin_object(Layout::kInline);
  for (size_t i = 0; i < kMtpCombos.size(); ++i) j.member(kMtpCombos[i], m.per_rank[i]);
  j.end_object().key("points").begin_array(Layout::kInline);
  for (const MtpPoint& p : m.points) {
    j.begin_object(Layout::kInline).member("concurrency", p.concurrency).member("batch_per_rank", p.batch_per_rank);
    for (size_t i = 0; i < kMtpCombos.size(); ++i) j.key(kMtpCombos[i]).general(p.tokens_per_s[i], 6);
    j.member("wins", p.winner >= 0 ? kMtpCombos[static_cast<size_t>(p.winner)] : "").end_object();
  }
  j.end_array().end_object();
}

std::vector<DocBlock> mtp_comparison_blocks(const MtpComparison& m) {
  if (m.empty()) return {};
  DocBlock t;
  t.kind = DocBlock::kTable;
  t.text = mtp_comparison_caption(m) + ":";
  t.headers = {"concurrency", "batch per rank"};
  for (const char* c : kMtpCombos) t.headers.push_back(fmt::format("{} tok/s", c));
  t.headers.push_back("wins");
  for (const MtpPoint& p : m.points) {
    std::vector<DocCell> row = {DocCell{plan_int(p.concurrency)}, DocCell{plan_int(p.batch_per_rank)}};
    for (size_t i = 0; i < kMtpCombos.size(); ++i)
      row.push_back(DocCell{plan_int(std::llround(p.tokens_per_s[i])), p.winner == static_cast<int>(i)});
    row.push_back(DocCell{winner_name(p), p.winner >= 0});
    t.rows.push_back(std::move(row));
  }
  DocBlock limits;
  limits.kind = DocBlock::kParagraph;
  limits.text = "Largest batch per rank within memory and the TPOT SLO:";
  for (size_t i = 0; i < kMtpCombos.size(); ++i)
    limits.text += fmt::format("{} {} {}", i ? "," : "", kMtpCombos[i], plan_int(m.per_rank[i]));
  limits.text += " (beyond it a combination stays at its limit).";
  return {t, limits};
}

}  // namespace hisparse::sim

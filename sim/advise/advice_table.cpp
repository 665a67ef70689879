// @brief advice_recommendation and advice_table (see advice_table.h); their text is advice_report.cpp's, beside the
// rest of what `advise` prints.
#include "sim/advise/advice_table.h"

#include "core/deployment_spec.h"
#include "sim/advise/advice_report.h"
#include "sim/advise/advisor.h"

namespace hisparse::sim {

namespace {

/// What a recommendation and a table row both say of their candidate.
template <typename Row>
Row setting_row(const Advice& a, const Candidate& c) {
  Row r;
  r.context = a.mix.label;
  r.setting = c.name();
  r.mode = to_string(c.mode);
  r.device_buffer_size = c.buffer_size;
  r.host_to_device_ratio = c.ratio;
  r.concurrency = c.concurrency;
  r.binding_limit = c.binding_limit;
  r.goodput_tokens_per_s = c.goodput;
  r.tpot_ms = c.tpot_ms;
  return r;
}

}  // namespace

AdviceRecommendation advice_recommendation(const Advice& a, const Scenario& s) {
  const Candidate* rec = a.recommended();
  if (!rec) {
    AdviceRecommendation none;
    none.context = a.mix.label;
    return none;
  }
  AdviceRecommendation r = setting_row<AdviceRecommendation>(a, *rec);
  r.fits = true;
  r.sglang_flags = sglang_flags(*rec, s);
  return r;
}

std::vector<AdviceTableRow> advice_table(const Advice& a) {
  std::vector<AdviceTableRow> rows;
  const Candidate* rec = a.recommended();
  if (!rec) return rows;
  for (int idx : buffer_sweep(a)) {
    const Candidate& c = a.candidates[static_cast<size_t>(idx)];
    AdviceTableRow t = setting_row<AdviceTableRow>(a, c);
    t.vs_recommended = rec->goodput > 0 ? c.goodput / rec->goodput : 0;
    t.hbm_bytes_per_request = c.hbm_per_request;
    t.recommended = idx == a.best;
    rows.push_back(std::move(t));
  }
  return rows;
}

}  // namespace hisparse::sim

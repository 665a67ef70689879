// @brief The fewer-GPU-to-more-GPU rule for collectives (see rank_extrapolation.h).
#include "sim/optables/rank_extrapolation.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace hisparse::sim {

OpLookup lookup_over_ranks(const OpTableSet& set, const std::string& op, const OpParams& params, const OpParams& prefer,
                           int ranks, double batch, double bytes, double bound_us) {
  auto at_ranks = [&](int r) {
    OpParams p = params;
    p["ranks"] = std::to_string(r);
    return set.lookup(op, p, batch, 0, bytes, prefer);
  };
  OpLookup exact = at_ranks(ranks);
  if (exact.label != OpLabel::kAbsent) return exact;
  std::set<int> measured;  // rank counts below `ranks` with this shape
  for (const OpSeries* s : set.series_of(op)) {
    const auto it = s->params.find("ranks");
    if (it == s->params.end()) continue;
    const int r = std::atoi(it->second.c_str());
    if (r > 1 && r < ranks && at_ranks(r).label != OpLabel::kAbsent) measured.insert(r);
  }
  if (measured.empty()) {
    exact.note += fmt::format("; no measurement over fewer than {} GPUs to model it from", ranks);
    return exact;
  }
  // One rank count gives no slope: a ring's (and DeepEP's) latency grows with the GPUs, so a 2-GPU time alone would
  // price 8 GPUs at 2 GPUs' latency. The term keeps its modelled price until a second rank count is measured.
  if (measured.size() < 2) {
    exact.note += fmt::format("; only the {}-GPU measurement, and one rank count cannot model {} GPUs (the latency grows "
                              "with the ranks): kept as priced before",
                              *measured.begin(), ranks);
    return exact;
  }
  const int r2 = *measured.rbegin();
  const OpLookup hi = at_ranks(r2);
  OpLookup out = hi;
  out.label = OpLabel::kFromRanks;
  const int r1 = *std::next(measured.rbegin());
  const OpLookup lo = at_ranks(r1);
  const double t = hi.us + (hi.us - lo.us) * (std::log2(ranks) - std::log2(r2)) / (std::log2(r2) - std::log2(r1));
  out.note = fmt::format("modelled for {} GPUs from the {}- and {}-GPU measurements", ranks, r1, r2);
  out.us = std::max({t, hi.us, bound_us});
  if (out.us == bound_us && bound_us > std::max(t, hi.us)) out.note += " (bound by the payload at DeepEP's intranode rate)";
  return out;
}

}  // namespace hisparse::sim

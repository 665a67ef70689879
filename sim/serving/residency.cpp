// @brief Dynamic residency in the serving engine (SGLang's hisparse_dynamic.py, PRs #23935 / #30266): a request that
// joins decode keeps its full KV in the device pool (`resident_backed`); when the pool runs short (a resident
// request's next page, or a new admission), resident requests are demoted to swap mode, the longest first
// (demote_until_hisparse_available), each shrinking to its buffer. A demoted request is never promoted back.
// Admission reserves every request's buffer, so demoting every resident request always makes room.
#include <algorithm>

#include "core/error.h"
#include "sim/cost/step/dynamic_residency.h"
#include "sim/serving/engine.h"

namespace hisparse::sim {

const char* to_string(Residency r) {
  switch (r) {
    case Residency::kNone: return "none";
    case Residency::kStaging: return "staging";
    case Residency::kResidentBacked: return "resident_backed";
    case Residency::kSwap: return "swap";
  }
  return "?";
}

namespace serving {

int64_t Engine::buffer_tokens(int64_t i) const {
  const auto& r = spec(i);
  return swap_device_tokens(static_cast<int64_t>(r.input_tokens) + r.output_tokens, H_, page_);
}

int64_t Engine::reclaimable(const Rank& g) const {
  // SGLang's reclaimable_resident_tokens: every resident request's device KV beyond its buffer.
  int64_t t = 0;
  for (const auto* v : {&g.running(), &g.joining()})
    for (int64_t i : *v)
      if (rt_[static_cast<size_t>(i)].residency() == Residency::kResidentBacked)
        t += std::max<int64_t>(0, g.pools().held(i, 1) - buffer_tokens(i));
  return t;
}

bool Engine::demote_longest(Rank& g) {
  // Candidates hold (or are about to hold) more than their buffer; the longest goes first, the lowest index on ties.
  int64_t pick = -1;
  for (const auto* v : {&g.running(), &g.joining()})
    for (int64_t i : *v) {
      const RequestState& rt = rt_[static_cast<size_t>(i)];
      if (rt.residency() != Residency::kResidentBacked) continue;
      if (std::max(resident_device_tokens(rt.n(), page_), g.pools().held(i, 1)) <= buffer_tokens(i)) continue;
      if (pick < 0 || rt.n() > rt_[static_cast<size_t>(pick)].n() || (rt.n() == rt_[static_cast<size_t>(pick)].n() && i < pick))
        pick = i;
    }
  if (pick < 0) return false;
  RequestState& rt = rt_[static_cast<size_t>(pick)];
  const int64_t before = g.pools().free_tokens(1);
  // Its rows up to the previous token are on the host already (the incremental backup), so it only shrinks.
  g.pools().shrink_device(pick, buffer_tokens(pick));
  rt.demote();
  auto& o = outcomes_[static_cast<size_t>(pick)];
  o.residency = Residency::kSwap;
  o.demoted_at_step = static_cast<int32_t>(rt.step());
  ++result_.demotions;
  result_.demoted_tokens += g.pools().free_tokens(1) - before;
  ++g.step.demotions;
  return true;
}

void Engine::make_device_room(Rank& g, int64_t tokens) {
  while (g.pools().free_tokens(1) < tokens)
    if (!demote_longest(g))
      throw_error("serving engine: dynamic residency: rank {} needs {} device tokens, {} free, nothing left to demote",
                  g.local(), tokens, g.pools().free_tokens(1));
}

void Engine::grow_residents(Rank& g) {
  // The step writes token n of every resident request into a new device slot (alloc_decode); demote until they fit.
  auto need = [&] {
    int64_t t = 0;
    for (int64_t i : g.running())
      if (rt_[static_cast<size_t>(i)].residency() == Residency::kResidentBacked)
        t += std::max<int64_t>(0, resident_device_tokens(rt_[static_cast<size_t>(i)].n(), page_) - g.pools().held(i, 1));
    return t;
  };
  while (need() > g.pools().free_tokens(1))
    if (!demote_longest(g))
      throw_error("serving engine: dynamic residency: rank {} cannot grow its resident requests", g.local());
  for (int64_t i : g.running()) {
    const RequestState& rt = rt_[static_cast<size_t>(i)];
    if (rt.residency() == Residency::kResidentBacked && g.pools().grow_device(i, resident_device_tokens(rt.n(), page_)) != 0)
      throw_error("serving engine: dynamic residency: request {} could not take the device pages counted free", i);
  }
}

}  // namespace serving
}  // namespace hisparse::sim

// @brief The plain reference replay (see plain_replay.h).
#include "tests/sim/replay/plain_replay.h"

#include <memory>

#include "cpu_ref/policies/registry.h"
#include "cpu_ref/swap_in.h"

namespace hisparse::replay_test {

ReplayRun plain_replay(const traces::TraceMeta& meta, const std::vector<traces::StepRecord>& recs,
                       const std::vector<std::string>& policies, const std::vector<int32_t>& sizes, int64_t row_bytes) {
  const int32_t L = meta.layers, K = meta.top_k;
  ReplayRun out;
  out.result.meta = meta;
  for (const auto& p : policies)
    for (int32_t H : sizes) {
      sim::ReplayConfigStats s;
      s.policy = p;
      s.buffer_size = H;
      s.miss_hist.assign(static_cast<size_t>(K) + 1, 0);
      s.step_miss_hist.assign(static_cast<size_t>(L) * K + 1, 0);
      out.result.configs.push_back(s);
    }
  SwapInPlan plan;
  for (size_t begin = 0; begin < recs.size();) {
    size_t end = begin;
    while (end < recs.size() && recs[end].request_id == recs[begin].request_id) ++end;
    const size_t S = end - begin;
    sim::ReplayRequestRows rr;
    rr.request_id = recs[begin].request_id;
    std::vector<int32_t> seq_lens;
    for (size_t j = begin; j < end; ++j) {
      rr.steps.push_back(recs[j].step);
      seq_lens.push_back(recs[j].seq_len);
    }
    rr.rows.assign(out.result.configs.size(),
                   std::vector<std::vector<sim::ReplayStepRow>>(static_cast<size_t>(L), std::vector<sim::ReplayStepRow>(S)));
    for (size_t c = 0; c < out.result.configs.size(); ++c) {
      const std::string& policy = out.result.configs[c].policy;
      const int32_t H = out.result.configs[c].buffer_size;
      for (int32_t l = 0; l < L; ++l) {
        std::vector<const int32_t*> sel(S);
        for (size_t j = 0; j < S; ++j) sel[j] = recs[begin + j].layer(l, K);
        auto row_of = [&](size_t j, const SwapInCounters& k) {
          rr.rows[c][static_cast<size_t>(l)][j] = {recs[begin + j].seq_len, static_cast<int32_t>(k.selected),
                                                   static_cast<int32_t>(k.hits), static_cast<int32_t>(k.newest_hits),
                                                   static_cast<int32_t>(k.misses)};
        };
        if (policy == "sglang-lru") {
          // The contract itself. An `empty` request whose first step fits the buffer was preloaded whole: identity.
          std::vector<int32_t> slot_token(static_cast<size_t>(H)), lru(static_cast<size_t>(H));
          const bool preloaded = meta.initial_state == InitialState::kEmpty && recs[begin].seq_len <= H;
          cpu_ref::init_swap_in_state({slot_token.data(), lru.data(), H},
                                      preloaded ? InitialState::kIdentity : meta.initial_state);
          for (size_t j = 0; j < S; ++j) {
            const traces::StepRecord& r = recs[begin + j];
            cpu_ref::swap_in({slot_token.data(), lru.data(), H}, sel[j], K, r.seq_len, K, nullptr, row_bytes,
                             {r.request_id, l, r.step}, plan);
            row_of(j, plan.counters);
          }
          continue;
        }
        auto p = cpu_ref::make_policy(policy);
        p->reset(H, meta.initial_state);
        if (p->needs_future()) {
          std::vector<int32_t> counts(S, K), ns(S);
          for (size_t j = 0; j < S; ++j) ns[j] = recs[begin + j].seq_len;
          p->set_future(std::make_shared<const cpu_ref::LayerFuture>(cpu_ref::build_layer_future(sel, counts, ns, H)));
        }
        cpu_ref::SwapInScratch scratch;
        for (size_t j = 0; j < S; ++j) {
          const traces::StepRecord& r = recs[begin + j];
          p->step({sel[j], K, r.seq_len, K, nullptr, row_bytes}, {r.request_id, l, r.step}, plan, scratch);
          row_of(j, plan.counters);
        }
      }
    }
    sim::add_request_rows(out.result, rr, seq_lens, row_bytes);
    out.rows.push_back(std::move(rr));
    begin = end;
  }
  return out;
}

}  // namespace hisparse::replay_test

// @brief One request's state in the serving engine as an entity: where it is admitted, its prefill progress, the
// sequence length and decode steps of its current attempt, its residency (dynamic residency), and the flows of its
// current transfer. The state changes only through the methods named after the events that change it; an abort or a
// retraction starts the attempt over (reset). What a request reports (times, tokens, retries) is its RequestOutcome
// (sim/serving/serving_simulation.h). Internal to sim/serving/.
#pragma once

#include <cstdint>

#include "sim/serving/prefix/rank_prefix_cache.h"
#include "sim/serving/serving_simulation.h"

namespace hisparse::sim::serving {

class RequestState {
 public:
  /// Admitted on `rank`: a fresh attempt (dynamic residency: staging until its prompt is backed up).
  void admit(int32_t rank, bool dynamic) {
    *this = RequestState{};
    rank_ = rank;
    if (dynamic) residency_ = Residency::kStaging;
  }
  /// Aborted or retracted: nothing of the attempt stays.
  void reset() { *this = RequestState{}; }

  int32_t rank() const { return rank_; }            // -1 = not admitted
  int32_t n() const { return n_; }                  // sequence length at the next decode step
  int64_t step() const { return step_; }            // decode steps done
  bool empty_start() const { return empty_start_; }
  int64_t prefilled() const { return prefilled_; }  // colocated: prompt tokens prefilled so far
  Residency residency() const { return residency_; }
  int64_t swap_since() const { return swap_since_; }
  double& carry() { return carry_; }                // the miss model's rounding remainder, kept between steps

  /// Colocated: a chunk of `tokens` of the prompt was prefilled.
  void prefill_chunk(int64_t tokens) { prefilled_ += tokens; }
  /// Its prompt of `input_tokens` is in place: the first decode step consumes prefill's token. `empty_start`: the KV
  /// is in the host pool and the device buffer starts empty (PD + HiSparse, n > H).
  void decode_from(int32_t input_tokens, bool empty_start) {
    n_ = input_tokens + 1;
    empty_start_ = empty_start;
  }
  /// Joins decode: its sequence length is the prompt's + 1 unless a transfer set it.
  void join(int32_t input_tokens) {
    if (n_ == 0) n_ = input_tokens + 1;
  }
  void stepped() { ++step_; }                                        // a decode step planned it
  void gained(int64_t tokens) { n_ += static_cast<int32_t>(tokens); }  // the step produced `tokens`
  void resident() { residency_ = Residency::kResidentBacked; }
  void demote() {  // to swap mode; its miss model restarts its warm-up here
    residency_ = Residency::kSwap;
    swap_since_ = step_;
  }
  /// Its matched prefix, locked in its rank's prefix cache while it runs (its pools hold only the rest), and the
  /// prompt tokens that are therefore already computed (colocated prefill starts after them).
  void hold_prefix(const RankPrefixCache::Hold& hold) {
    prefix_ = hold;
    prefilled_ = hold.tokens;
  }
  /// Its prompt was inserted in the cache (cache_unfinished_req): the hold now covers every prompt page.
  void move_prefix(const RankPrefixCache::Hold& hold) { prefix_ = hold; }
  const RankPrefixCache::Hold& prefix() const { return prefix_; }
  int64_t cached() const { return prefix_.tokens; }
  /// A transfer of `flows` per-GPU flows starts; flow_done() is true when the last one ends.
  void start_flows(int32_t flows) { pending_ = flows; }
  bool flow_done() { return --pending_ == 0; }

 private:
  int32_t n_ = 0;
  int64_t step_ = 0;
  double carry_ = 0;
  bool empty_start_ = false;
  int32_t rank_ = -1;
  int64_t prefilled_ = 0;
  int32_t pending_ = 0;
  Residency residency_ = Residency::kNone;
  int64_t swap_since_ = -1;
  RankPrefixCache::Hold prefix_;
};

}  // namespace hisparse::sim::serving

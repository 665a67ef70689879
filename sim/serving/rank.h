// @brief One dp rank of a decode instance as an entity: its requests (admitted, waiting for prefill chunks, joining,
// running), its pools and v2 ledger (older rules) or V2 coordinator quotas (current rules), its GPUs' links, and the state of its current decode step. The membership and the
// reservation count change only through its methods, so a request is in one of its lists at a time.
// Internal to sim/serving/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "cpu_ref/memory/hisparse_v2_admission.h"
#include "sim/cost/step/step_cost.h"
#include "sim/cost/step/step_estimate.h"
#include "sim/engine/sim_time.h"
#include "sim/serving/admission_ledger.h"
#include "sim/serving/pools.h"
#include "sim/serving/prefix/rank_prefix_cache.h"
#include "sim/serving/v2_prefix_eviction.h"

namespace hisparse::sim::serving {

/// Link indices of a rank's GPUs, one per GPU (the network model's links, sim/network/).
struct RankLinks {
  std::vector<int32_t> h2d, d2h, dram, nic;
};

/// The state of a rank's current decode step, reset by begin().
struct RankStep {
  bool active = false, waiting_backup = false, compute_done = false, io_done = false;
  int32_t io_pending = 0, backup_pending = 0;
  RankCompute work;                          // this step's compute (sim/cost/step/step_estimate.h)
  GpuBatch batch;                            // this step's requests, one token each (MTP's draft passes)
  double miss_bytes = 0, backup_bytes = 0;
  SimTime start = 0, a_end = 0, io_start = 0, io_end = 0, compute_end = 0, done = 0, backup_end = 0;
  int64_t selected = 0, misses = 0, backups = 0;
  // Pipeline parallelism (sim/cost/step/pipeline_step.h): the step's compute and copies are one stage's on the largest
  // micro-batch (its first `micro_batch` requests, misses `micro_misses`); without pp, the whole batch.
  int64_t micro_batch = 0, micro_batches = 1, micro_misses = 0;
  int32_t swap_requests = 0, demotions = 0;  // dynamic residency, this step
  StepCost cost;
  std::vector<std::pair<int64_t, int64_t>> chunks;  // colocated prefill this step: (request, tokens)
  /// A new step at `now`: its clocks, flags and counters of the flows start over (the plan's fields stay).
  void begin(SimTime now) {
    start = backup_end = now;
    cost = StepCost{};
    compute_done = io_done = waiting_backup = false;
    backup_pending = io_pending = 0;
  }
};

class Rank {
 public:
  Rank(int32_t instance, int32_t local, std::unique_ptr<RankPools> pools, std::unique_ptr<AdmissionLedger> ledger)
      : instance_(instance), local_(local), pools_(std::move(pools)), ledger_(std::move(ledger)) {}

  int32_t instance() const { return instance_; }
  int32_t local() const { return local_; }
  RankPools& pools() { return *pools_; }
  const RankPools& pools() const { return *pools_; }
  AdmissionLedger* ledger() { return ledger_.get(); }
  const AdmissionLedger* ledger() const { return ledger_.get(); }
  /// --admission v2 under the current coordinator: the rank's admit_request quotas (null otherwise).
  cpu_ref::HiSparseV2Admission* v2() { return v2_.get(); }
  const cpu_ref::HiSparseV2Admission* v2() const { return v2_.get(); }
  void set_v2(std::unique_ptr<cpu_ref::HiSparseV2Admission> v2) { v2_ = std::move(v2); }
  /// --admission v2 under the current coordinator, colocated prefill, static residency: the V2 prefixes still in
  /// device rows and their leaf-first eviction (null otherwise: the prefix goes to the host whole at staging).
  V2PrefixEviction* v2_prefixes() { return v2_prefixes_.get(); }
  const V2PrefixEviction* v2_prefixes() const { return v2_prefixes_.get(); }
  void set_v2_prefixes(std::unique_ptr<V2PrefixEviction> p) { v2_prefixes_ = std::move(p); }
  /// The rank's radix prefix cache (null when off), its pages in `pool` of the rank's pools.
  void enable_prefix_cache(int pool) {
    prefix_ = std::make_unique<RankPrefixCache>(*pools_, pool, pools_->sizes().page);
  }
  RankPrefixCache* prefix_cache() { return prefix_.get(); }
  const RankPrefixCache* prefix_cache() const { return prefix_.get(); }

  // Membership.
  int32_t reserved() const { return reserved_; }            // admitted here and not done
  const std::vector<int64_t>& running() const { return running_; }
  const std::vector<int64_t>& joining() const { return joining_; }
  const std::deque<int64_t>& prefill_queue() const { return prefill_queue_; }
  void admit() { ++reserved_; }
  void queue_prefill(int64_t i) { prefill_queue_.push_back(i); }
  void prefill_finished() { prefill_queue_.pop_front(); }   // the queue's head has its whole prompt
  void join(int64_t i) { joining_.push_back(i); }           // ready: decodes from the next step
  /// Joining requests enter the running batch (a step starts); whether any request runs.
  bool merge_joining() {
    running_.insert(running_.end(), joining_.begin(), joining_.end());
    joining_.clear();
    return !running_.empty();
  }
  /// Keeps the running requests `keep` says to keep, in order (the others finished: `keep` may make them leave()).
  template <class Keep>
  void keep_running(Keep keep) {
    const std::vector<int64_t> running = running_;
    std::vector<int64_t> kept;
    kept.reserve(running.size());
    for (int64_t i : running)
      if (keep(i)) kept.push_back(i);
    running_ = std::move(kept);
  }
  /// Request `i` leaves the rank (finished, aborted or retracted): out of every list, its reservation returned.
  void leave(int64_t i) {
    --reserved_;
    auto drop = [i](std::vector<int64_t>& v) { v.erase(std::remove(v.begin(), v.end(), i), v.end()); };
    drop(running_);
    drop(joining_);
    prefill_queue_.erase(std::remove(prefill_queue_.begin(), prefill_queue_.end(), i), prefill_queue_.end());
  }

  RankLinks links;
  RankStep step;  // the current decode step

 private:
  int32_t instance_ = 0, local_ = 0;
  std::unique_ptr<RankPools> pools_;
  std::unique_ptr<AdmissionLedger> ledger_;  // --admission v2 --v2-coordinator older in HiSparse mode, else null
  std::unique_ptr<cpu_ref::HiSparseV2Admission> v2_;  // --admission v2 --v2-coordinator current, else null
  std::unique_ptr<V2PrefixEviction> v2_prefixes_;      // see v2_prefixes()
  std::unique_ptr<RankPrefixCache> prefix_;  // --prefix-cache on (and a workload naming prefix blocks), else null
  std::vector<int64_t> running_, joining_;
  std::deque<int64_t> prefill_queue_;        // colocated: admitted, waiting for (more) prefill chunks
  int32_t reserved_ = 0;
};

}  // namespace hisparse::sim::serving

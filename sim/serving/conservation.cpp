// @brief The result of a run and its conservation checks: bytes, requests, tokens, time, pools (no leaked page).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/network/link_model.h"
#include "sim/serving/engine.h"

namespace hisparse::sim::serving {

namespace {
bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}
}  // namespace

ServingResult Engine::finish() {
  ServingResult& r = result_;
  r.scenario = sc_.deployment.name;
  r.workload = w_.name;
  r.miss_model = hisparse_ ? miss_->describe() : "none (full-KV mode: every row on the GPU)";
  r.mode = opt_.mode;
  r.overlap = overlap();
  r.admission = opt_.admission;
  if (hisparse_ && opt_.admission == AdmissionCheck::kV2)
    r.v2_coordinator = opt_.v2_coordinator == V2Coordinator::kCurrent ? "current" : "older";
  r.link_model = opt_.cost.link_model;
  r.retraction = retraction_ == Retraction::kNone    ? "none"
                 : retraction_ == Retraction::kSglang ? "sglang retract_decode"
                                                      : "vllm recompute preemption";
  r.prefill_mode = prefill_mode_ == PrefillMode::kColocated ? "colocated"
                   : prefill_mode_ == PrefillMode::kPd     ? "pd"
                                                           : "pd-external";
  r.collective_link = layout_.collective_link;
  r.clients = opt_.clients.concurrency;
  r.decode_gpus = static_cast<int32_t>(instances_.size()) * layout_.layout.gpus;
  r.decode_instances = static_cast<int32_t>(instances_.size());
  r.prefill_instances = static_cast<int32_t>(prefill_.size());
  r.ranks = static_cast<int32_t>(ranks_.size());
  r.gpus_per_rank = gpr_;
  r.last_arrival = 0;
  for (const auto& s : specs_) r.last_arrival = std::max(r.last_arrival, s.arrival);
  r.makespan = sim_.now();
  r.events = sim_.events_processed();
  r.row_bytes = row_;
  r.device_pool_tokens = hisparse_ ? pool_sizes_.device : pool_sizes_.logical;
  r.logical_pool_tokens = pool_sizes_.logical;
  r.host_pool_tokens = pool_sizes_.host;
  const LinkModel& m = net_.model();
  double h2d_carried = 0, d2h_carried = 0;
  for (int32_t l = 0; l < m.num_links(); ++l) {
    r.links.push_back(LinkUsage{m.link_name(l), m.capacity(l), m.carried_bytes(l)});
    if (ends_with(m.link_name(l), ".h2d")) h2d_carried += m.carried_bytes(l);
    if (ends_with(m.link_name(l), ".d2h")) d2h_carried += m.carried_bytes(l);
  }
  r.requests = std::move(outcomes_);
  report_prefix_cache(r);
  // Conservation: every byte a miss needed was carried (once per GPU of the rank), links carried exactly what the
  // flows asked for, every request finished or was rejected, steps never overlap or go back in time, no page leaked.
  // Pipeline parallelism: a step copies the largest micro-batch's misses (the stage step it runs, decode_step.cpp).
  const double want = static_cast<double>(pp_ > 1 ? micro_misses_ : r.misses) * row_ * gpr_;
  auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max({1.0, std::fabs(a), std::fabs(b)}); };
  if (!close(r.miss_flow_bytes, want))
    throw_error("conservation: miss copies carried {} B but misses × row_bytes × GPUs per rank = {} × {} × {} = {} B",
                r.miss_flow_bytes, r.misses, row_, gpr_, want);
  if (!close(h2d_carried, r.miss_flow_bytes + r.admission_h2d_bytes))
    throw_error("conservation: PCIe h2d links carried {} B, flows account for {} B", h2d_carried, r.miss_flow_bytes + r.admission_h2d_bytes);
  if (!close(d2h_carried, r.backup_bytes + r.staging_bytes))
    throw_error("conservation: PCIe d2h links carried {} B, backups and staging account for {} B", d2h_carried,
                r.backup_bytes + r.staging_bytes);
  if (r.admitted != r.finished)
    throw_error("conservation: {} requests admitted but {} finished (simulation stopped at {} ns)", r.admitted, r.finished, r.makespan);
  if (r.finished + r.rejected != r.arrivals)
    throw_error("conservation: {} arrivals but {} finished + {} rejected ({} waiting, {} waiting for a retry)", r.arrivals,
                r.finished, r.rejected, waiting_.size(), retry_.size());
  if (opt_.clients.concurrency > 0 && (to_send_ != 0 || r.arrivals != static_cast<int64_t>(specs_.size())))
    throw_error("conservation: closed-loop clients sent {} of their requests, {} arrived", specs_.size(), r.arrivals);
  int64_t tokens = 0;
  for (const auto& o : r.requests)
    if (o.finish >= 0) {
      if (o.decoded != std::max(0, o.output_tokens - 1))
        throw_error("conservation: request {} decoded {} tokens, expected output_tokens − 1 = {}", o.id, o.decoded, o.output_tokens - 1);
      tokens += o.decoded;
    }
  if (tokens + r.wasted_decode_tokens != r.decode_tokens)
    throw_error("conservation: {} tokens counted per step, {} per finished request + {} of aborted attempts", r.decode_tokens,
                tokens, r.wasted_decode_tokens);
  std::vector<SimTime> last_end(instances_.size(), 0);
  for (const auto& s : r.steps) {
    if (s.start < last_end[static_cast<size_t>(s.instance)] || s.end < s.start)
      throw_error("conservation: step {} of instance {} runs [{}, {}] ns, before the previous step ended at {} ns",
                  s.index, s.instance, s.start, s.end, last_end[static_cast<size_t>(s.instance)]);
    last_end[static_cast<size_t>(s.instance)] = s.end;
  }
  double share_sum = 0;  // v2 current: evicted shares of the V2 requests that left their rank
  for (size_t k = 0; k < ranks_.size(); ++k) {
    const RankPools& p = ranks_[k].pools();
    const int64_t size[3] = {pool_sizes_.logical, hisparse_ ? pool_sizes_.device : 0, hisparse_ ? pool_sizes_.host : 0};
    for (int pool = 0; pool < 3; ++pool)
      if (size[pool] > 0 && p.free_tokens(pool) + p.held(kPrefixCacheOwner, pool) != size[pool] / page_ * page_)
        throw_error("conservation: rank {} ends with {} of {} tokens free in its {} pool and {} held by its prefix "
                    "cache (a request kept its pages)", k, p.free_tokens(pool), size[pool],
                    pool == 0 ? "logical" : pool == 1 ? "device" : "host", p.held(kPrefixCacheOwner, pool));
    const RankPrefixCache* cache = ranks_[k].prefix_cache();
    if (cache && cache->pages() * page_ != p.held(kPrefixCacheOwner, cache->pool()))
      throw_error("conservation: rank {}'s prefix cache holds {} pages but its pool counts {} tokens for it", k,
                  cache->pages(), p.held(kPrefixCacheOwner, cache->pool()));
    if (const V2PrefixEviction* kept = ranks_[k].v2_prefixes()) {
      r.v2_partial_eviction = true;
      r.v2_evictions += kept->counts().evictions;
      r.v2_evicted_tokens += kept->counts().evicted_tokens;
      r.v2_prefixes_released += kept->counts().released;
      share_sum += kept->counts().evicted_share_sum;
    }
    const cpu_ref::HiSparseV2Admission* v2 = ranks_[k].v2();
    if (v2 && (v2->active() != 0 || v2->host_reserved() != 0 || v2->indexer_pages_free() != v2->sizes().indexer_pages))
      throw_error("conservation: rank {} ends with {} V2 requests holding {} host tokens and {} of {} indexer pages "
                  "(a request kept its admit_request quotas)", k, v2->active(), v2->host_reserved(),
                  v2->sizes().indexer_pages - v2->indexer_pages_free(), v2->sizes().indexer_pages);
  }
  if (r.v2_prefixes_released > 0) r.v2_evicted_share_mean = share_sum / static_cast<double>(r.v2_prefixes_released);
  return std::move(result_);
}

}  // namespace hisparse::sim::serving

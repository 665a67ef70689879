// @brief The table `hisparse plan` prints, as rows of standard types: per sequence length full KV, then HiSparse, then
// dynamic residency. One function fills them from the capacity plan; the terminal table, plan.json's `rows` and
// `dynamic_residency`, and Python's PlanResult (bound field by field, `to_pandas()`) all read these rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse::sim {

struct CapacityPlan;

struct PlanTableRow {
  int64_t seq_len = 0;
  std::string mode;                  // full | hisparse | dynamic (to_string(KvMode))
  bool applicable = true;            // false: a HiSparse row of a model without a sparse indexer
  int64_t max_per_rank = 0;          // requests per dp rank
  int64_t max_concurrency = 0;       // requests per decode instance
  std::string binding_limit;         // the limit's key; "not applicable" where `applicable` is false
  // full and hisparse: TPOT at max_per_rank; dynamic: the step time at max_per_rank, as plan.json's
  // dynamic_residency has always reported it (the two differ only with MTP, by the accepted tokens per step).
  double tpot_ms = 0;
  double decode_tokens_per_s = 0;    // per decode instance at max_concurrency
  double hbm_bytes_per_request = 0;  // on each GPU that holds the request
  double host_bytes_per_request = 0; // per GPU that holds the request (0: full KV)
  int64_t resident_per_rank = -1;    // dynamic: the largest batch per rank that stays resident (-1: other modes)
};

/// The plan's rows in the terminal table's order: per length full, HiSparse and (where computed) dynamic residency.
std::vector<PlanTableRow> plan_table(const CapacityPlan& plan);

/// The terminal table of `rows`; `not_applicable` is printed on rows that are not applicable (why HiSparse is not).
std::string plan_table_text(const std::vector<PlanTableRow>& rows, const std::string& not_applicable);

}  // namespace hisparse::sim

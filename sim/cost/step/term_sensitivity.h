// @brief How much TPOT moves when one assumed time-valued cost term moves by ±50 %: what the cost-terms table prints
// beside every term nothing measured or published pins down.
#pragma once

#include <cstdint>
#include <string>

#include "core/deployment_spec.h"
#include "sim/cost/terms/cost_params.h"
#include "sim/engine/sim_time.h"

namespace hisparse::sim {

/// Half the TPOT difference between the term at 1.5× and at 0.5× of its value, for a step of `batch` requests per
/// rank of `seq_len` tokens (HiSparse when `hisparse`, with no misses: the fixed terms' share, not the copy's). -1
/// when `term` is not time-valued (sim/cost/terms/cost_params.h cost_time_term).
SimTime term_sensitivity_ns(const Scenario& scenario, const CostParams& params, bool hisparse, const std::string& term,
                            int64_t batch, int64_t seq_len);

}  // namespace hisparse::sim

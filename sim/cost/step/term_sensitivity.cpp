// @brief TPOT sensitivity of one time-valued cost term (see term_sensitivity.h).
#include "sim/cost/step/term_sensitivity.h"

#include "sim/cost/step/step_time_model.h"

namespace hisparse::sim {

SimTime term_sensitivity_ns(const Scenario& s, const CostParams& p, bool hisparse, const std::string& term,
                            int64_t batch, int64_t seq_len) {
  SimTime CostParams::*member = cost_time_term(term);
  if (!member) return -1;
  auto tpot = [&](double scale) {
    CostParams q = p;
    q.*member = static_cast<SimTime>(static_cast<double>(p.*member) * scale);
    return StepTimeModel(s, q, hisparse, [](int64_t) { return 0.0; }).step(batch, seq_len).tpot_ns;
  };
  return (tpot(1.5) - tpot(0.5)) / 2;
}

}  // namespace hisparse::sim

// @brief The small helpers every memory-budget file builds its figures with (one definition instead of a copy each).
#pragma once

#include <algorithm>
#include <string>
#include <utility>

#include "core/memory_budget.h"

namespace hisparse::budget_detail {

inline std::string num(double v) { return formula_number(v); }

inline Figure fig(const char* key, const char* label, double value, const char* unit, std::string formula) {
  return Figure{key, label, value, unit, std::move(formula)};
}

/// Attention tensor parallelism of the decode instance: TP / DP-attention, at least 1.
inline int attention_tp_of(const InstanceSpec& decode) {
  return std::max(1, decode.tp / std::max(1, decode.dp_attention));
}

}  // namespace hisparse::budget_detail

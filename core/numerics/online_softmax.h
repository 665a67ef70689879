// @brief Online softmax over fixed tiles of the index list, in log2 units: the update both backends perform.
//
// Definitions for one (token, head) row with index list idx[0..K) (an entry -1 or out of range is "skipped"):
//   s_j = dot(q, kv[idx_j])                      (attention_dot(), fp32 fma chain over d = 0..575 in order)
//   t_j = s_j * c,  c = sm_scale * log2(e)      (softmax_scale(); skipped entries have t_j = -inf)
// The list is cut into tiles of kAttentionTileKeys consecutive entries (the last one may be short). Per tile,
// in this exact order:
//   tile_max = max over the tile's t_j, j ascending            (hs_max chain from -inf)
//   m_new    = max(m, tile_max)
//   alpha    = softmax_rescale(m, m_new)                       (exp2(m - m_new); 1 while everything is skipped)
//   p_j      = softmax_weight(t_j, m_new)                      (exp2(t_j - m_new); 0 for skipped entries)
//   l        = l * alpha, then l = l + p_j for j ascending
//   acc[c]   = acc[c] * alpha, then acc[c] = fma(p_j, v_j[c], acc[c]) for j ascending, for EVERY j of the tile
//              (a skipped entry contributes fma(0, 0, acc), so that both sides execute the same operations)
//   m        = m_new
// After the last tile: o[c] = bf16(acc[c] / l) and lse = (m + log2(l)) * ln(2) (natural log of sum exp(sm_scale*s));
// a row whose entries are all skipped (l == 0) gives o = 0 and lse = -inf.
#pragma once

#include "core/hs_host_device.h"
#include "core/numerics/bf16.h"
#include "core/numerics/scalar_ops.h"

namespace hisparse::num {

/// Keys per online-softmax tile. Part of the numerical contract: changing it changes the bits of o and lse.
constexpr int kAttentionTileKeys = 64;

HS_HOST_DEVICE float softmax_scale(float sm_scale) { return sm_scale * kLog2e; }

/// One step of the dot-product chain; the chain starts from +0 and runs over d ascending.
HS_HOST_DEVICE float dot_step(float acc, float a, float b) { return hs_fma(a, b, acc); }

HS_HOST_DEVICE float softmax_rescale(float m_old, float m_new) {
  return m_new == -hs_inf() ? 1.0f : hs_exp2(m_old - m_new);
}

HS_HOST_DEVICE float softmax_weight(float t, float m_new) {
  return m_new == -hs_inf() ? 0.0f : hs_exp2(t - m_new);
}

/// Final normalisation of one accumulator element.
HS_HOST_DEVICE Bf16Bits softmax_output(float acc, float l) { return l == 0.0f ? Bf16Bits(0) : float_to_bf16(acc / l); }

/// Natural-log log-sum-exp of the row; -inf for an all-skipped row. NaN is written as the canonical NaN.
HS_HOST_DEVICE float softmax_lse(float m, float l) {
  if (l == 0.0f) return -hs_inf();
  return canonicalize_f32((m + hs_log2(l)) * kLn2);
}

}  // namespace hisparse::num

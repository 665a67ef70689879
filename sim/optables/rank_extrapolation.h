// @brief Collectives and DeepEP dispatch/combine over more GPUs than any table measured (an 8-GPU node from the lent
// 2- and 4-GPU machines): the stated rule, labelled modelled from the fewer-GPU measurements.
#pragma once

#include "sim/optables/op_table.h"

namespace hisparse::sim {

/// One call of a collective `op` over `ranks` GPUs (the `ranks` parameter; `params` and `prefer` without it) at
/// `batch` tokens per rank (DeepEP) or `bytes` per rank (NCCL). A series at `ranks` is read as any other. Without
/// one, from the series at the largest measured rank counts r1 < r2 < ranks (the same point on each):
///   t = max(t2 + (t2 − t1) · (log2 ranks − log2 r2) / (log2 r2 − log2 r1),  t2,  bound_us)
/// i.e. each doubling of the GPUs adds what the last measured doubling added (linear in log2 ranks), never less
/// than the largest measured count's time, nor than `bound_us`, the payload over the link at DeepEP's published
/// intranode bandwidth (the caller's). Label kFromRanks; absent when fewer than two rank counts below `ranks` have
/// the shape (one count gives no slope, and nothing is extrapolated downward): the term keeps its modelled price.
OpLookup lookup_over_ranks(const OpTableSet& set, const std::string& op, const OpParams& params, const OpParams& prefer,
                           int ranks, double batch, double bytes, double bound_us);

}  // namespace hisparse::sim

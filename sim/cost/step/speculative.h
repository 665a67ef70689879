// @brief Speculative decoding with the model's MTP layer (DeepSeek-V3's and GLM-5's NextN module, SGLang's
// --speculative-algorithm NEXTN/EAGLE with eagle-topk 1): how many tokens a verify step yields, and what it costs more.
//   accepted tokens per step  E = 1 + a + a² + … + a^d  (d chained draft tokens, each kept with probability a when
//                             all before it were; the first rejection ends the run; the verify pass always yields
//                             one token of its own, the target model's next token after the last accepted one)
//   verify pass               the target model over 1 + d positions per request (StepEstimator::verify_batch): every
//                             projection, indexer query, top-k, hit detection and attention runs per position, the MoE
//                             sees (1 + d) × the tokens; with HiSparse each position selects its own top-k, and the
//                             misses are charged as 1 + d decode steps' (an upper bound: adjacent positions' selections
//                             overlap, so their union misses fewer);
//   draft passes              d passes of the one MTP layer over the batch (StepEstimator::draft_ns);
//   TPOT                      step / E.
// The draft layer's KV (and indexer keys) are in the memory budget through ModelSpec::mtp_layers in any case.
#pragma once

namespace hisparse::sim {

/// E = Σ_{i=0..d} a^i: the expected tokens one request gains per step with d draft tokens at per-token acceptance a.
double mtp_accepted_tokens(int draft_tokens, double acceptance);

}  // namespace hisparse::sim

// @brief `advise`: whether speculative decoding (MTP), HiSparse or both pay at each concurrency. SGLang's roadmap
// (#28874) proposes MTP for small batches, where a step is bound by reading the weights and extra query positions are
// nearly free, and HiSparse for large ones, where the KV held in HBM bounds the batch; this evaluates the four
// combinations with the one step model at each batch of the break-even scan and names the winner.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/io/json_writer.h"
#include "core/deployment_spec.h"
#include "sim/cost/step/context_mix.h"
#include "sim/miss/miss_curve.h"
#include "sim/report/report_document.h"

namespace hisparse::sim {

struct AdviseOptions;  // sim/advise/advisor.h, which holds a comparison in each Advice
struct Candidate;

/// The four combinations, in this order everywhere (JSON keys, table columns).
inline constexpr std::array<const char*, 4> kMtpCombos = {"none", "MTP", "HiSparse", "MTP + HiSparse"};

struct MtpPoint {
  int64_t batch_per_rank = 0, concurrency = 0;
  std::array<double, 4> tokens_per_s{};  // per instance, each combination at min(batch, its own limit) per rank
  int winner = -1;                       // index into kMtpCombos (-1: none fits)
};

struct MtpComparison {
  int draft_tokens = 0;
  double acceptance = 0, accepted_tokens = 1;
  std::string source;                      // where d and a come from (the deployment, or the assumption and its source)
  std::string hisparse_setting;            // the HiSparse candidate compared
  std::array<int64_t, 4> per_rank{};       // each combination's largest batch per rank (memory and TPOT SLO)
  std::vector<MtpPoint> points;
  bool empty() const { return points.empty(); }
};

/// The comparison at every batch per rank of `batches`, HiSparse at `hs`'s H and ratio. d and a: the deployment's
/// when it sets mtp_draft_tokens, else 1 draft token at acceptance 0.85 (assumed). Empty when the model has no MTP
/// layer.
MtpComparison compare_mtp(const Scenario& s, const ContextMix& mix, const MissCurves& misses, const Candidate& hs,
                          const AdviseOptions& options, const std::vector<int64_t>& batches);

/// What the table compares and where each figure comes from: the HiSparse setting, d and a with their source
/// (the deployment's, or assumed with its reference), tokens/s modelled. The text and the reports open with it.
std::string mtp_comparison_caption(const MtpComparison& m);
/// The table as terminal text (empty for an empty comparison).
std::string mtp_comparison_text(const MtpComparison& m);
/// The comparison as a JSON object, written as the next value of `j`.
void mtp_comparison_json(JsonWriter& j, const MtpComparison& m);
/// The table as a report block for advise.md / advise.html, the winner of each row in bold (none when empty).
std::vector<DocBlock> mtp_comparison_blocks(const MtpComparison& m);

}  // namespace hisparse::sim

// @brief The robustness check of one advice as the reports print it (sim/advise/robustness.h): the verdict line, and
// the goodput of each shortlisted setting under every case with the recommendation's regret — as terminal text, a
// JSON object and report blocks (Markdown and HTML).
#pragma once

#include <string>
#include <vector>

#include "core/io/json_writer.h"
#include "sim/advise/advisor.h"
#include "sim/report/report_document.h"

namespace hisparse::sim {

/// "robustness: <verdict>" and the per-case table, each line indented by two spaces after the first.
std::string robustness_text(const Advice& advice);

/// The rule's figure of merit of candidate `i` in words ("lowest goodput 3,220 tok/s", "mean goodput …", "largest
/// regret 14.3%", "goodput …"): what the runner-up line compares.
std::string rule_score_text(const Robustness& r, int i);

/// One plain sentence where the best setting under the advice's own miss source alone is not the recommendation:
/// "best if the miss model is X: <setting> (…); recommended instead: <rec>, because under Y <setting> loses Z % against
/// it"; Y is the case where that setting falls furthest below the recommendation. Empty where they agree.
std::string default_source_text(const Advice& advice);

/// The "robustness" value of advise.json: rule, verdict, range, every case with every candidate's goodput.
void robustness_json(JsonWriter& j, const Advice& advice);

/// The verdict paragraph and the per-case table.
std::vector<DocBlock> robustness_blocks(const Advice& advice);

}  // namespace hisparse::sim

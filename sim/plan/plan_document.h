// @brief PlanDocument: the report's content as plain blocks (headings, paragraphs, tables, plots), built once
// and rendered twice — Markdown (plan_markdown.cpp) and HTML (plan_html.cpp) — so both always say the same.
#pragma once

#include <string>
#include <vector>

#include "sim/plan/plan_report.h"
#include "sim/report/report_document.h"

namespace hisparse::sim {

std::vector<DocBlock> build_plan_document(const CapacityPlan& plan, const PlanRunInfo& info,
                                          const std::vector<PlanPlot>& plots);

}  // namespace hisparse::sim

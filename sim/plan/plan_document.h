// @brief PlanDocument: the report's content as plain blocks (headings, paragraphs, tables, plots), built once
// and rendered twice — Markdown (plan_markdown.cpp) and HTML (plan_html.cpp) — so both always say the same.
#pragma once

#include <string>
#include <vector>

#include "sim/plan/plan_report.h"

namespace hisparse::sim {

struct DocCell {
  std::string text;
  bool strong = false;    // the binding limit, the headline figure
  bool formula = false;   // rendered as code, smaller
  bool muted = false;     // limits that do not apply
};

struct DocBlock {
  enum Kind { kHeading, kParagraph, kList, kTable, kPlot, kWarning } kind = kParagraph;
  int level = 2;                                   // heading level
  std::string text;                                // heading / paragraph / caption
  std::string id;                                  // anchor for headings
  std::vector<std::string> items;                  // list items
  std::vector<std::string> headers;                // table
  std::vector<std::vector<DocCell>> rows;          // table
  int plot = -1;                                   // index into the plot list
};

std::vector<DocBlock> build_plan_document(const CapacityPlan& plan, const PlanRunInfo& info,
                                          const std::vector<PlanPlot>& plots);

}  // namespace hisparse::sim

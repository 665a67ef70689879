// @brief ReportDocument: a report's content as plain blocks (headings, paragraphs, tables, plots), built once and
// rendered twice — Markdown (report_markdown.cpp) and HTML (report_html.cpp) — so both always say the same. The
// capacity plan and the advice are both written this way.
#pragma once

#include <string>
#include <vector>

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

/// One PNG a plot script writes beside the report.
struct DocPlot {
  std::string file;                 // name inside the output directory
  std::string title;
  std::string png;                  // file contents ("" = missing: the report says so)
};

/// GitHub Markdown; plots as links to their PNG files.
std::string document_to_markdown(const std::vector<DocBlock>& doc, const std::vector<DocPlot>& plots);
/// One self-contained page (inline CSS, PNGs as data URIs); `nav` = (anchor id, label) links under the title.
std::string document_to_html(const std::string& title, const std::vector<std::pair<std::string, std::string>>& nav,
                             const std::vector<DocBlock>& doc, const std::vector<DocPlot>& plots);

}  // namespace hisparse::sim

// @brief document_to_markdown: a report document as GitHub Markdown (see report_document.h).
#include <fmt/format.h>

#include "sim/report/report_document.h"

namespace hisparse::sim {

namespace {

std::string md_cell(const DocCell& c) {
  std::string t;
  for (char ch : c.text) {
    if (ch == '|') t += "\\|";
    else if (ch == '\n') t += ' ';
    else t += ch;
  }
  if (t.empty()) return "";
  if (c.formula) return "`" + t + "`";
  if (c.strong) return "**" + t + "**";
  return t;
}

}  // namespace

std::string document_to_markdown(const std::vector<DocBlock>& doc, const std::vector<DocPlot>& plots) {
  std::string o;
  for (const DocBlock& b : doc) {
    switch (b.kind) {
      case DocBlock::kHeading: o += fmt::format("{} {}\n\n", std::string(static_cast<size_t>(b.level), '#'), b.text); break;
      case DocBlock::kParagraph: o += b.text + "\n\n"; break;
      case DocBlock::kWarning: o += "> **Warning:** " + b.text + "\n\n"; break;
      case DocBlock::kList:
        for (const auto& it : b.items) o += "- " + it + "\n";
        o += "\n";
        break;
      case DocBlock::kPlot: {
        const DocPlot& p = plots[static_cast<size_t>(b.plot)];
        o += p.png.empty() ? fmt::format("*(plot {} not written: run without --no-plots)*\n\n", p.file)
                           : fmt::format("![{}]({})\n\n", p.title, p.file);
        break;
      }
      case DocBlock::kTable: {
        if (!b.text.empty()) o += b.text + "\n\n";
        o += "|";
        for (const auto& h : b.headers) o += " " + h + " |";
        o += "\n|";
        // Numbers align right; labels and formulas (any formula cell in the column) align left.
        for (size_t i = 0; i < b.headers.size(); ++i) {
          bool text = i < 2;
          for (const auto& r : b.rows) text = text || (i < r.size() && r[i].formula);
          o += text ? " --- |" : " ---: |";
        }
        o += "\n";
        for (const auto& r : b.rows) {
          o += "|";
          for (const auto& cell : r) o += " " + md_cell(cell) + " |";
          o += "\n";
        }
        o += "\n";
        break;
      }
    }
  }
  return o;
}

}  // namespace hisparse::sim

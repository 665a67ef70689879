// @brief plan.md and the terminal table: the plan document as GitHub Markdown (plots as linked PNG files).
#include <cmath>

#include <fmt/format.h>

#include "core/text_format.h"
#include "sim/plan/plan_document.h"

namespace hisparse::sim {

std::string plan_int(int64_t v) { return group_digits(v); }

std::string plan_bytes(double b) {
  const double a = std::fabs(b);
  if (a >= 1e12) return fmt::format("{:.2f} TB", b / 1e12);
  if (a >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  if (a >= 1e4) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{} B", plan_int(static_cast<int64_t>(std::llround(b))));
}

std::string plan_limit_value(int64_t per_rank) { return per_rank < 0 ? "—" : plan_int(per_rank); }

std::vector<PlanPlot> plan_plot_list() {
  return {{"plan_memory.png", "HBM per GPU at each mode's maximum concurrency, and host DRAM per node", ""},
          {"plan_throughput.png", "Decode throughput per instance against batch size (both modes; markers: maximum concurrency)", ""},
          {"plan_limits.png", "Requests per instance under each limit, per sequence length (the binding one filled)", ""},
          {"plan_sweep_buffer.png", "device_buffer_size sweep: concurrency, misses and TPOT", ""},
          {"plan_sweep_ratio.png", "host_to_device_ratio sweep: pools, host DRAM and concurrency", ""}};
}

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

std::string plan_to_markdown(const CapacityPlan& plan, const PlanRunInfo& info, const std::vector<PlanPlot>& plots) {
  std::string o;
  for (const DocBlock& b : build_plan_document(plan, info, plots)) {
    switch (b.kind) {
      case DocBlock::kHeading: o += fmt::format("{} {}\n\n", std::string(static_cast<size_t>(b.level), '#'), b.text); break;
      case DocBlock::kParagraph: o += b.text + "\n\n"; break;
      case DocBlock::kWarning: o += "> **Warning:** " + b.text + "\n\n"; break;
      case DocBlock::kList:
        for (const auto& it : b.items) o += "- " + it + "\n";
        o += "\n";
        break;
      case DocBlock::kPlot: {
        const PlanPlot& p = plots[static_cast<size_t>(b.plot)];
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

std::string plan_to_text(const CapacityPlan& p) {
  std::string o = fmt::format("{:>8}  {:<9} {:>10} {:<21} {:>10} {:>12} {:>12} {:>12}\n", "seq_len", "mode", "max conc",
                              "binding limit", "TPOT ms", "tok/s", "HBM/req", "host/req");
  for (const PlanRow& r : p.rows)
    o += fmt::format("{:>8}  {:<9} {:>10} {:<21} {:>10.2f} {:>12.0f} {:>12} {:>12}\n", r.seq_len, to_string(r.mode),
                     plan_int(r.max_concurrency), r.binding_limit, r.at_max.step_ns * 1e-6, r.decode_tokens_per_s,
                     plan_bytes(r.hbm_per_request.value),
                     r.host_per_request.value > 0 ? plan_bytes(r.host_per_request.value) : "-");
  return o;
}

}  // namespace hisparse::sim

// @brief document_to_html: a report document as one self-contained page (inline CSS, PNG plots embedded as data
// URIs).
#include <cctype>
#include <cstdint>

#include <fmt/format.h>

#include "sim/report/report_document.h"

namespace hisparse::sim {

namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += ch;
    }
  }
  return o;
}

// Markdown-style `code` spans in paragraphs become <code>.
std::string inline_code(const std::string& s) {
  std::string o;
  bool open = false;
  for (char ch : s) {
    if (ch == '`') {
      o += open ? "</code>" : "<code>";
      open = !open;
    } else {
      o += esc(std::string(1, ch));
    }
  }
  if (open) o += "</code>";
  return o;
}

std::string base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(in[i]) << 16) | (static_cast<uint8_t>(in[i + 1]) << 8) | static_cast<uint8_t>(in[i + 2]);
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += k[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

const char* kStyle = R"(
body{font-family:-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1f2328;max-width:1180px;
margin:24px auto;padding:0 24px;line-height:1.45;font-size:14px}
h1{font-size:26px;border-bottom:2px solid #d0d7de;padding-bottom:6px}
h2{font-size:20px;margin-top:34px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:16px;margin-top:26px;color:#0b4f8a}
table{border-collapse:collapse;margin:10px 0 16px;font-size:13px;width:100%}
th{background:#f3f5f8;text-align:left;font-weight:600;border-bottom:2px solid #d0d7de}
th,td{padding:5px 8px;border-bottom:1px solid #e4e8ec;vertical-align:top}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
tr:hover td{background:#fafbfc}
td strong{color:#0b4f8a}
code,.f{font-family:"SFMono-Regular",Consolas,"Liberation Mono",monospace;font-size:11.5px;color:#57606a}
.muted{color:#9aa3ab}
.warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px;margin:10px 0}
figure{margin:14px 0 22px;text-align:center}
figure img{max-width:100%;border:1px solid #e4e8ec;border-radius:6px}
figcaption{font-size:13px;color:#57606a;margin-top:4px}
nav{font-size:13px;margin:6px 0 16px}
nav a{margin-right:14px;color:#0969da;text-decoration:none}
ul{padding-left:22px}
li{margin:4px 0}
)";

bool looks_numeric(const std::string& t) {
  return !t.empty() && (std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '-' || t.rfind("—", 0) == 0);
}

}  // namespace

std::string document_to_html(const std::string& title, const std::vector<std::pair<std::string, std::string>>& nav,
                             const std::vector<DocBlock>& doc, const std::vector<DocPlot>& plots) {
  std::string o = fmt::format("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                              "<title>{}</title>\n<style>{}</style></head>\n<body>\n",
                              esc(title), kStyle);
  bool nav_done = false;
  for (const DocBlock& b : doc) {
    switch (b.kind) {
      case DocBlock::kHeading:
        o += fmt::format("<h{0} id=\"{1}\">{2}</h{0}>\n", b.level, esc(b.id), esc(b.text));
        if (b.level == 1 && !nav_done && !nav.empty()) {
          o += "<nav>";
          for (const auto& [id, label] : nav) o += fmt::format("<a href=\"#{}\">{}</a>", esc(id), esc(label));
          o += "</nav>\n";
          nav_done = true;
        }
        break;
      case DocBlock::kParagraph: o += "<p>" + inline_code(b.text) + "</p>\n"; break;
      case DocBlock::kWarning: o += "<div class=\"warn\"><strong>Warning:</strong> " + esc(b.text) + "</div>\n"; break;
      case DocBlock::kList:
        o += "<ul>\n";
        for (const auto& it : b.items) o += "<li>" + inline_code(it) + "</li>\n";
        o += "</ul>\n";
        break;
      case DocBlock::kPlot: {
        const DocPlot& p = plots[static_cast<size_t>(b.plot)];
        if (p.png.empty())
          o += fmt::format("<p class=\"muted\">(plot {} not written: run without --no-plots)</p>\n", esc(p.file));
        else
          o += fmt::format("<figure><img alt=\"{0}\" src=\"data:image/png;base64,{1}\"><figcaption>{0}</figcaption></figure>\n",
                           esc(p.title), base64(p.png));
        break;
      }
      case DocBlock::kTable: {
        if (!b.text.empty()) o += "<p>" + esc(b.text) + "</p>\n";
        o += "<table><thead><tr>";
        for (const auto& h : b.headers) o += "<th>" + esc(h) + "</th>";
        o += "</tr></thead><tbody>\n";
        for (const auto& r : b.rows) {
          o += "<tr>";
          for (size_t i = 0; i < r.size(); ++i) {
            const DocCell& cell = r[i];
            std::string t = esc(cell.text);
            if (cell.formula) t = "<span class=\"f\">" + t + "</span>";
            if (cell.strong) t = "<strong>" + t + "</strong>";
            const bool num = i > 0 && !cell.formula && looks_numeric(cell.text);
            std::string cls = num ? "num" : "";
            if (cell.muted) cls += cls.empty() ? "muted" : " muted";
            o += cls.empty() ? "<td>" + t + "</td>" : fmt::format("<td class=\"{}\">{}</td>", cls, t);
          }
          o += "</tr>\n";
        }
        o += "</tbody></table>\n";
        break;
      }
    }
  }
  return o + "</body></html>\n";
}

}  // namespace hisparse::sim

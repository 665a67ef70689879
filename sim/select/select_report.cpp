// @brief What `hisparse select` writes: select.json, select.csv, select.md and the stdout table, token and page
// granularity, shared and per-KV-head rows side by side (docs/selection.md, "Output").
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/io/output_file.h"
#include "sim/select/select_study.h"

namespace hisparse::sim::select {
namespace {

std::string num(double v) { return std::isfinite(v) ? fmt::format("{:.6f}", v) : "null"; }

std::string granularity(const StudyRow& row) { return row.page_size > 0 ? fmt::format("page{}", row.page_size) : "token"; }
std::string kv_scope(const StudyRow& row) { return row.per_kv_head ? "per-kv-head" : "shared"; }
std::string layer_text(const StudyRow& row) { return row.layer < 0 ? std::string("all") : std::to_string(row.layer); }

double kib_per_step_layer(const BufferStats& b) {
  return b.step_layers ? static_cast<double>(b.h2d_bytes) / static_cast<double>(b.step_layers) / 1024.0 : 0.0;
}

std::vector<int32_t> top_ks_of(const StudyResult& r) {
  std::vector<int32_t> ks;
  for (const StudyRow& row : r.rows)
    if (std::find(ks.begin(), ks.end(), row.top_k) == ks.end()) ks.push_back(row.top_k);
  return ks;
}

std::string group_text(const StudyRow& row, const char* sep) {
  std::string s;
  for (size_t g = 0; g < row.group_recall.size(); ++g) s += fmt::format("{}{:.4f}", g ? sep : "", row.group_recall[g]);
  return s;
}

}  // namespace

std::string study_json(const StudyResult& r) {
  const StudyOptions& o = r.options;
  std::string layers, pages;
  for (size_t i = 0; i < r.layer_ids.size(); ++i) layers += fmt::format("{}{}", i ? ", " : "", r.layer_ids[i]);
  for (size_t i = 0; i < o.page_sizes.size(); ++i) pages += fmt::format("{}{}", i ? ", " : "", o.page_sizes[i]);
  std::string s = "{\n";
  s += fmt::format("  \"source\": {},\n  \"model_layers\": [{}],\n  \"steps\": {},\n  \"prefill\": {},\n", json_quote(r.source),
                   layers, r.steps, r.prefill);
  s += fmt::format("  \"seq_len_first\": {},\n  \"seq_len_last\": {},\n  \"q_heads\": {},\n  \"kv_heads\": {},\n  \"head_dim\": {},\n",
                   r.n_first, r.n_last, r.q_heads, r.kv_heads, r.head_dim);
  s += fmt::format("  \"row_bytes\": {},\n  \"policy\": \"sglang-lru\",\n  \"initial_state\": \"{}\",\n", r.row_bytes,
                   traces::to_string(o.initial_state));
  s += fmt::format(
      "  \"params\": {{\"page_size\": {}, \"sinks\": {}, \"clusters\": {}, \"kmeans_iters\": {}, \"seed\": {}, "
      "\"indexer_dims\": {}, \"indexer_heads_per_group\": {}, \"token_granularity\": {}, \"page_sizes\": [{}], "
      "\"per_kv_head\": {}}},\n",
      o.page_size, o.sinks, o.clusters, o.kmeans_iters, o.seed, o.indexer_dims, o.indexer_heads_per_group,
      o.token_granularity ? "true" : "false", pages, o.per_kv_head ? "true" : "false");
  s += "  \"rows\": [\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const StudyRow& row = r.rows[i];
    std::string groups;
    for (size_t g = 0; g < row.group_recall.size(); ++g) groups += fmt::format("{}{}", g ? ", " : "", num(row.group_recall[g]));
    s += fmt::format("    {{\"selector\": {}, \"top_k\": {}, \"layer\": {}, \"granularity\": \"{}\", \"page_size\": {}, "
                     "\"kv\": \"{}\", \"unit_bytes\": {}, \"step_layers\": {}, \"recall\": {}, \"page_recall\": {}, "
                     "\"group_recall\": {}, \"mass_share\": {}, \"overlap\": {}, \"tokens\": {}, \"score_bytes\": {}, "
                     "\"read_bytes\": {}, \"replay\": [",
                     json_quote(row.selector), row.top_k, row.layer < 0 ? std::string("\"all\"") : std::to_string(row.layer),
                     row.page_size > 0 ? "page" : "token", row.page_size, kv_scope(row), row.unit_bytes, row.step_layers,
                     num(row.recall), row.page_size > 0 ? num(row.page_recall) : "null",
                     row.group_recall.empty() ? std::string("null") : "[" + groups + "]", num(row.mass_share),
                     num(row.overlap), num(row.tokens), num(row.score_bytes), num(row.read_bytes));
    for (size_t h = 0; h < row.buffers.size(); ++h) {
      const BufferStats& b = row.buffers[h];
      s += fmt::format("{}{{\"buffer_size\": {}, \"buffer_pages\": {}, \"selected\": {}, \"misses\": {}, \"hit_rate\": {}, "
                       "\"misses_per_step_layer\": {}, \"h2d_bytes\": {}, \"h2d_bytes_per_step_layer\": {}}}",
                       h ? ", " : "", b.buffer_tokens, row.page_size > 0 ? std::to_string(b.buffer_size) : "null", b.selected,
                       b.misses, num(b.hit_rate()), num(b.misses_per_step_layer()), b.h2d_bytes,
                       num(b.step_layers ? static_cast<double>(b.h2d_bytes) / static_cast<double>(b.step_layers) : 0.0));
    }
    s += fmt::format("]}}{}\n", i + 1 < r.rows.size() ? "," : "");
  }
  s += "  ]\n}\n";
  return s;
}

std::string study_csv(const StudyResult& r) {
  std::string s =
      "selector,top_k,layer,step_layers,recall,mass_share,overlap,buffer_size,misses,misses_per_step_layer,hit_rate,"
      "h2d_bytes,granularity,page_size,kv,buffer_pages,unit_bytes,tokens,page_recall,group_recall,score_bytes,read_bytes\n";
  for (const StudyRow& row : r.rows)
    for (const BufferStats& b : row.buffers)
      s += fmt::format("{},{},{},{},{:.6f},{:.6f},{:.6f},{},{},{:.4f},{:.6f},{},{},{},{},{},{},{:.3f},{},{},{:.1f},{:.1f}\n",
                       row.selector,
                       row.top_k, layer_text(row), row.step_layers, row.recall, row.mass_share, row.overlap,
                       b.buffer_tokens, b.misses, b.misses_per_step_layer(), b.hit_rate(), b.h2d_bytes,
                       row.page_size > 0 ? "page" : "token", row.page_size, kv_scope(row),
                       row.page_size > 0 ? std::to_string(b.buffer_size) : "", row.unit_bytes, row.tokens,
                       row.page_size > 0 ? fmt::format("{:.6f}", row.page_recall) : "", group_text(row, ";"),
                       row.score_bytes, row.read_bytes);
  return s;
}

std::string study_table(const StudyResult& r) {
  std::string s;
  for (int32_t K : top_ks_of(r)) {
    const StudyRow* first = nullptr;
    for (const StudyRow& row : r.rows)
      if (row.top_k == K) {
        first = &row;
        break;
      }
    s += fmt::format(
        "\n== K = {} tokens (page rows: K/P pages of P tokens): recall of the token oracle's top-K attention mass "
        "(per-kv-head: of each head group's own oracle, mean of groups), p-rec = recall of the page oracle's K/P pages, "
        "mass = share of all attention, overlap of adjacent steps, tokens covered, read = modelled KiB read per step-layer "
        "(scoring + the selected tokens' K and V, docs/selection.md); sglang-lru misses per step-layer "
        "(in the row's unit: tokens, or pages; per-kv-head: summed over the {} KV heads) and H2D KiB per step-layer "
        "(measured replay; {} B per token row of every KV head) at H in tokens\n",
        K, r.kv_heads, r.row_bytes);
    std::string head = fmt::format("{:<13} {:<7} {:<11} {:>5} {:>7} {:>7} {:>7} {:>7} {:>6} {:>7}", "selector", "gran",
                                   "kv", "layer", "recall", "p-rec", "mass", "overlap", "tokens", "read");
    for (const BufferStats& b : first->buffers)
      head += fmt::format(" {:>10} {:>9}", fmt::format("miss@{}", b.buffer_tokens), fmt::format("KiB@{}", b.buffer_tokens));
    s += head + "\n";
    for (int pass = 0; pass < 2; ++pass) {
      for (const StudyRow& row : r.rows) {
        if (row.top_k != K || (pass == 0) != (row.layer < 0)) continue;
        std::string line = fmt::format("{:<13} {:<7} {:<11} {:>5} {:>7.4f} {:>7} {:>7.4f} {:>7.4f} {:>6.1f} {:>7.1f}",
                                       row.selector, granularity(row), kv_scope(row), layer_text(row), row.recall,
                                       row.page_size > 0 ? fmt::format("{:.4f}", row.page_recall) : "-", row.mass_share,
                                       row.overlap, row.tokens, row.read_bytes / 1024.0);
        for (const BufferStats& b : row.buffers)
          line += fmt::format(" {:>10.2f} {:>9.2f}", b.misses_per_step_layer(), kib_per_step_layer(b));
        s += line + "\n";
      }
      if (pass == 0) s += "  per layer:\n";
    }
    if (r.options.per_kv_head) {
      s += fmt::format("  recall per KV head group (its query heads' mass, against that group's own top-{} oracle):\n", K);
      for (const StudyRow& row : r.rows)
        if (row.top_k == K && row.layer < 0)
          s += fmt::format("  {:<13} {:<7} {:<11} {}\n", row.selector, granularity(row), kv_scope(row), group_text(row, " "));
    }
  }
  return s;
}

std::string study_markdown(const StudyResult& r) {
  std::string s = fmt::format(
      "# hisparse select: {} ({} steps, n {}..{}, model layers", r.source, r.steps, r.n_first, r.n_last);
  for (int32_t l : r.layer_ids) s += fmt::format(" {}", l);
  s += fmt::format("; {} query heads / {} KV heads x {})\n\n", r.q_heads, r.kv_heads, r.head_dim);
  s += "Measured. All recorded layers together. recall: of the token oracle's top-K attention mass (per-kv-head: of each "
       "KV head group's own oracle, mean of the groups); page recall: of the page oracle's K/P pages; mass: share of all "
       "attention kept; read KiB: modelled bytes read per step-layer (scoring + the selected K and V); misses per step-layer in the row's unit (tokens or pages; per-kv-head summed over heads); KiB: "
       "H2D bytes per step-layer through sglang-lru at H tokens.\n";
  for (int32_t K : top_ks_of(r)) {
    const StudyRow* first = nullptr;
    for (const StudyRow& row : r.rows)
      if (row.top_k == K && row.layer < 0) {
        first = &row;
        break;
      }
    s += fmt::format("\n## K = {} tokens\n\n| selector | granularity | KV | recall | page recall |{} mass | overlap | tokens | "
                     "read KiB |",
                     K, r.options.per_kv_head ? " group recall |" : "");
    std::string rule = "|---|---|---|---:|---:|" + std::string(r.options.per_kv_head ? "---|" : "") + "---:|---:|---:|---:|";
    for (const BufferStats& b : first->buffers) {
      s += fmt::format(" misses @{} | KiB @{} |", b.buffer_tokens, b.buffer_tokens);
      rule += "---:|---:|";
    }
    s += "\n" + rule + "\n";
    for (const StudyRow& row : r.rows) {
      if (row.top_k != K || row.layer >= 0) continue;
      s += fmt::format("| {} | {} | {} | {:.4f} | {} |{} {:.4f} | {:.4f} | {:.1f} | {:.1f} |", row.selector,
                       granularity(row), kv_scope(row), row.recall,
                       row.page_size > 0 ? fmt::format("{:.4f}", row.page_recall) : "-",
                       r.options.per_kv_head ? " " + group_text(row, " / ") + " |" : "", row.mass_share, row.overlap,
                       row.tokens, row.read_bytes / 1024.0);
      for (const BufferStats& b : row.buffers) s += fmt::format(" {:.2f} | {:.2f} |", b.misses_per_step_layer(), kib_per_step_layer(b));
      s += "\n";
    }
  }
  return s;
}

}  // namespace hisparse::sim::select

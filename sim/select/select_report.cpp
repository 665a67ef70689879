// @brief What `hisparse select` writes: select.json, select.csv, select.md and the stdout table, token and page
// granularity, shared and per-KV-head rows side by side (docs/selection.md, "Output").
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/io/output_file.h"
#include "sim/select/select_study.h"

namespace hisparse::sim::select {
namespace {


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
  using Layout = JsonWriter::Layout;
  const StudyOptions& o = r.options;
  // Fractions and byte means at six decimals; non-finite as null.
  JsonWriter j(2);
  j.begin_object().member("source", r.source).key("model_layers").begin_array(Layout::kInline);
  for (int32_t id : r.layer_ids) j.number(id);
  j.end_array().member("steps", r.steps).member("prefill", r.prefill);
  j.member("seq_len_first", r.n_first).member("seq_len_last", r.n_last).member("q_heads", r.q_heads);
  j.member("kv_heads", r.kv_heads).member("head_dim", r.head_dim).member("row_bytes", r.row_bytes);
  j.member("policy", "sglang-lru").member("initial_state", traces::to_string(o.initial_state));
  j.key("params").begin_object(Layout::kInline).member("page_size", o.page_size).member("sinks", o.sinks);
  j.member("clusters", o.clusters).member("kmeans_iters", o.kmeans_iters).member("seed", o.seed);
  j.member("indexer_dims", o.indexer_dims).member("indexer_heads_per_group", o.indexer_heads_per_group);
  j.member("token_granularity", o.token_granularity).key("page_sizes").begin_array(Layout::kInline);
  for (int32_t p : o.page_sizes) j.number(p);
  j.end_array().member("per_kv_head", o.per_kv_head).end_object();
  j.key("rows").begin_array();
  for (const StudyRow& row : r.rows) {
    j.begin_object(Layout::kInline).member("selector", row.selector).member("top_k", row.top_k).key("layer");
    if (row.layer < 0) j.string("all"); else j.number(row.layer);
    j.member("granularity", row.page_size > 0 ? "page" : "token").member("page_size", row.page_size);
    j.member("kv", kv_scope(row)).member("unit_bytes", row.unit_bytes).member("step_layers", row.step_layers);
    j.key("recall").fixed(row.recall, 6).key("page_recall");
    if (row.page_size > 0) j.fixed(row.page_recall, 6); else j.null();
    j.key("group_recall");
    if (row.group_recall.empty()) {
      j.null();
    } else {
      j.begin_array(Layout::kInline);
      for (double g : row.group_recall) j.fixed(g, 6);
      j.end_array();
    }
    j.key("mass_share").fixed(row.mass_share, 6).key("overlap").fixed(row.overlap, 6);
    j.key("tokens").fixed(row.tokens, 6).key("score_bytes").fixed(row.score_bytes, 6);
    j.key("read_bytes").fixed(row.read_bytes, 6).key("replay").begin_array(Layout::kInline);
    for (const BufferStats& b : row.buffers) {
      j.begin_object(Layout::kInline).member("buffer_size", b.buffer_tokens).key("buffer_pages");
      if (row.page_size > 0) j.number(b.buffer_size); else j.null();
      j.member("selected", b.selected).member("misses", b.misses).key("hit_rate").fixed(b.hit_rate(), 6);
      j.key("misses_per_step_layer").fixed(b.misses_per_step_layer(), 6).member("h2d_bytes", b.h2d_bytes);
      j.key("h2d_bytes_per_step_layer")
          .fixed(b.step_layers ? static_cast<double>(b.h2d_bytes) / static_cast<double>(b.step_layers) : 0.0, 6);
      j.end_object();
    }
    j.end_array().end_object();
  }
  j.end_array().end_object();
  return j.str() + "\n";
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

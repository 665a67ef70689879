// @brief The selection study: scoring, selection and metrics per layer (one thread per layer), then the replay of
// each selector's lists through sglang-lru, and the JSON / CSV / table of the result.
#include "sim/select/select_study.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "sim/output_file.h"
#include "sim/replay/replay_engine.h"
#include "sim/select/npz_reader.h"
#include "sim/select/selectors.h"

namespace hisparse::sim::select {
namespace {

const NumArray& need(const std::map<std::string, NumArray>& a, const std::string& name, const std::string& path,
                     size_t rank) {
  const auto it = a.find(name);
  if (it == a.end()) {
    std::string have;
    for (const auto& [k, v] : a) have += fmt::format("{}{} {}", have.empty() ? "" : ", ", k, v.shape_text());
    throw_error("{}: no array '{}' (the file holds: {})", path, name, have);
  }
  if (it->second.shape.size() != rank)
    throw_error("{}: array '{}' has shape {}, expected {} dimensions", it->second.source, name, it->second.shape_text(), rank);
  return it->second;
}

/// Trace records held in memory, one request.
class VectorSource : public traces::TraceSource {
 public:
  VectorSource(traces::TraceMeta meta, const std::vector<traces::StepRecord>& recs) : meta_(std::move(meta)), recs_(recs) {}
  const traces::TraceMeta& meta() const override { return meta_; }
  bool next(traces::StepRecord& out) override {
    if (i_ >= recs_.size()) return false;
    out = recs_[i_++];
    return true;
  }
  std::vector<int64_t> request_ids() override { return {0}; }
  void seek_request(int64_t id) override {
    if (id != 0) throw_error("select: no request {} in the selection trace", id);
    i_ = 0;
  }

 private:
  traces::TraceMeta meta_;
  const std::vector<traces::StepRecord>& recs_;
  size_t i_ = 0;
};

bool ranked(const std::string& sel) { return sel != "sink-recent"; }

std::string num(double v) { return std::isfinite(v) ? fmt::format("{:.6f}", v) : "null"; }

}  // namespace

const std::vector<std::string>& selector_names() {
  static const std::vector<std::string> names = {"oracle", "indexer", "quest", "clusterkv", "sink-recent"};
  return names;
}

KqData load_kq(const std::string& path) {
  const auto a = read_arrays(path);
  KqData d;
  d.source = path;
  const NumArray& keys = need(a, "keys", path, 4);
  const NumArray& queries = need(a, "queries", path, 4);
  const NumArray& seq = need(a, "seq_lens", path, 1);
  d.layers = static_cast<int32_t>(keys.shape[0]);
  d.n_keys = static_cast<int32_t>(keys.shape[1]);
  d.kv_heads = static_cast<int32_t>(keys.shape[2]);
  d.head_dim = static_cast<int32_t>(keys.shape[3]);
  d.steps = static_cast<int32_t>(queries.shape[0]);
  d.q_heads = static_cast<int32_t>(queries.shape[2]);
  if (d.layers < 1 || d.n_keys < 2 || d.kv_heads < 1 || d.head_dim < 1)
    throw_error("{}: keys shape {} must be [layers >= 1, positions >= 2, kv_heads >= 1, head_dim >= 1]", keys.source,
                keys.shape_text());
  if (queries.shape[1] != d.layers || queries.shape[3] != d.head_dim)
    throw_error("{}: queries shape {} does not match keys {} (expected [steps, {}, q_heads, {}])", queries.source,
                queries.shape_text(), keys.shape_text(), d.layers, d.head_dim);
  if (d.steps < 1 || d.q_heads < d.kv_heads || d.q_heads % d.kv_heads != 0)
    throw_error("{}: queries shape {}: need >= 1 step and query heads a multiple of the {} KV heads", queries.source,
                queries.shape_text(), d.kv_heads);
  if (seq.shape[0] != d.steps)
    throw_error("{}: seq_lens shape {} does not match queries' {} steps", seq.source, seq.shape_text(), d.steps);
  d.seq_lens = seq.to_int32();
  for (int32_t s = 0; s < d.steps; ++s)
    if (d.seq_lens[s] < 2 || d.seq_lens[s] > d.n_keys)
      throw_error("{}: seq_lens[{}] = {} outside [2, {}] (the keys' positions)", seq.source, s, d.seq_lens[s], d.n_keys);
  const auto sc = a.find("scaling");
  if (sc == a.end() || sc->second.elements() != 1) {
    // Without a recorded scaling the standard 1/sqrt(head_dim) applies (scaled dot-product attention).
    if (sc != a.end()) throw_error("{}: scaling has shape {}, expected one value", sc->second.source, sc->second.shape_text());
    d.scaling = 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  } else {
    d.scaling = sc->second.to_float()[0];
    if (!(d.scaling > 0) || !std::isfinite(d.scaling)) throw_error("{}: scaling = {} must be > 0", sc->second.source, d.scaling);
  }
  const auto ly = a.find("layers");
  if (ly != a.end()) {
    if (ly->second.shape.size() != 1 || ly->second.shape[0] != d.layers)
      throw_error("{}: layers shape {} does not match the keys' {} layers", ly->second.source, ly->second.shape_text(), d.layers);
    d.layer_ids = ly->second.to_int32();
  } else {
    for (int32_t l = 0; l < d.layers; ++l) d.layer_ids.push_back(l);
  }
  d.keys = keys.to_float();
  d.queries = queries.to_float();
  for (size_t i = 0; i < d.keys.size(); ++i)
    if (!std::isfinite(d.keys[i])) throw_error("{}: keys element {} is not finite", keys.source, i);
  for (size_t i = 0; i < d.queries.size(); ++i)
    if (!std::isfinite(d.queries[i])) throw_error("{}: queries element {} is not finite", queries.source, i);
  return d;
}

traces::TraceMeta StudyResult::trace_meta(int32_t top_k) const {
  traces::TraceMeta m;
  m.layers = static_cast<int32_t>(layer_ids.size());
  m.top_k = top_k;
  m.initial_state = options.initial_state;
  m.source = source;
  return m;
}

StudyResult run_study(const KqData& data, const StudyOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.selectors.empty() || opt.top_ks.empty() || opt.buffer_multiples.empty())
    throw_error("select: need at least one selector, top-k and buffer multiple");
  for (const auto& s : opt.selectors)
    if (std::find(selector_names().begin(), selector_names().end(), s) == selector_names().end())
      throw_error("select: unknown selector '{}' (known: oracle, indexer, quest, clusterkv, sink-recent)", s);
  for (int32_t k : opt.top_ks)
    if (k < 1 || k > data.n_keys) throw_error("select: --top-k {} outside [1, {}]", k, data.n_keys);
  for (int32_t m : opt.buffer_multiples)
    if (m < 1) throw_error("select: --buffer-multiples {} must be >= 1 (H >= K)", m);
  const int32_t S = opt.max_steps > 0 ? std::min(opt.max_steps, data.steps) : data.steps;
  const int32_t L = data.layers, D = data.head_dim, NS = static_cast<int32_t>(opt.selectors.size());
  const int32_t NK = static_cast<int32_t>(opt.top_ks.size());
  const int32_t kmax = *std::max_element(opt.top_ks.begin(), opt.top_ks.end());

  StudyResult r;
  r.source = data.source;
  r.layer_ids = data.layer_ids;
  r.steps = S;
  r.prefill = data.prefill();
  r.n_first = data.seq_lens[0];
  r.n_last = data.seq_lens[S - 1];
  r.q_heads = data.q_heads, r.kv_heads = data.kv_heads, r.head_dim = D;
  // K and V of one token in one layer, fp16 as recorded: 2 tensors x kv_heads x head_dim x 2 bytes.
  r.row_bytes = opt.row_bytes > 0 ? opt.row_bytes : int64_t{2} * data.kv_heads * D * 2;
  r.options = opt;

  // lists[sel][k][layer][step]; per (sel, k, layer): recall / mass / overlap sums.
  using Lists = std::vector<std::vector<std::vector<std::vector<std::vector<int32_t>>>>>;
  Lists lists(NS, std::vector<std::vector<std::vector<std::vector<int32_t>>>>(
                      NK, std::vector<std::vector<std::vector<int32_t>>>(L, std::vector<std::vector<int32_t>>(S))));
  struct Acc { double recall = 0, mass = 0, overlap = 0; int64_t n = 0, pairs = 0; };
  std::vector<Acc> acc(static_cast<size_t>(NS) * NK * L);
  auto A = [&](int32_t s, int32_t k, int32_t l) -> Acc& { return acc[(static_cast<size_t>(s) * NK + k) * L + l]; };

  auto run_layer = [&](int32_t l) {
    const size_t per_layer = static_cast<size_t>(data.n_keys) * data.kv_heads * D;
    LayerKeys keys(std::vector<float>(data.keys.begin() + static_cast<std::ptrdiff_t>(l * per_layer),
                                      data.keys.begin() + static_cast<std::ptrdiff_t>((l + 1) * per_layer)),
                   data.n_keys, data.kv_heads, D);
    const auto uses = [&](const char* s) { return std::find(opt.selectors.begin(), opt.selectors.end(), s) != opt.selectors.end(); };
    IndexerStandIn ix;
    QuestPages qp;
    ClusterIndex ci;
    if (uses("indexer")) ix = build_indexer(keys, data.prefill(), opt.indexer_dims, opt.indexer_heads_per_group);
    if (uses("quest")) qp = build_quest_pages(keys, opt.page_size);
    if (uses("clusterkv")) ci = build_cluster_index(keys, data.prefill(), opt.clusters, opt.kmeans_iters, opt.seed);
    std::vector<int32_t> stamp(static_cast<size_t>(data.n_keys), -1);
    for (int32_t s = 0; s < S; ++s) {
      Query q{data.queries.data() + (static_cast<size_t>(s) * L + l) * data.q_heads * D, data.q_heads, data.scaling,
              data.seq_lens[s]};
      const std::vector<double> score = true_scores(keys, q);
      const std::vector<int32_t> oracle = top_k_by_score(score, q.n, kmax);
      for (int32_t si = 0; si < NS; ++si) {
        const std::string& sel = opt.selectors[si];
        std::vector<int32_t> full;
        if (sel == "oracle") full = oracle;
        else if (sel == "indexer") full = top_k_by_score(indexer_scores(ix, keys, q), q.n, kmax);
        else if (sel == "quest") full = quest_select(qp, keys, q, kmax);
        else if (sel == "clusterkv") full = clusterkv_select(ci, keys, q, kmax);
        for (int32_t ki = 0; ki < NK; ++ki) {
          const int32_t K = opt.top_ks[ki];
          std::vector<int32_t> list = ranked(sel) ? std::vector<int32_t>(full.begin(), full.begin() + std::min<size_t>(full.size(), K))
                                                  : sink_recent_select(q.n, K, opt.sinks);
          const std::vector<int32_t> ok(oracle.begin(), oracle.begin() + std::min<size_t>(oracle.size(), K));
          const double om = selected_mass(score, ok), m = selected_mass(score, list);
          Acc& a = A(si, ki, l);
          a.recall += om > 0 ? m / om : 1.0;
          a.mass += m / data.q_heads;
          ++a.n;
          if (s > 0) {
            const auto& prev = lists[si][ki][l][s - 1];
            for (int32_t p : prev) stamp[p] = s;
            int64_t common = 0;
            for (int32_t p : list) common += stamp[p] == s;
            a.overlap += list.empty() ? 0.0 : static_cast<double>(common) / static_cast<double>(list.size());
            ++a.pairs;
          }
          lists[si][ki][l][s] = std::move(list);
        }
      }
    }
  };
  const int threads = std::max(1, std::min(opt.threads, L));
  std::vector<std::thread> pool;
  std::vector<std::string> errors(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        for (int32_t l = t; l < L; l += threads) run_layer(l);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : pool) th.join();
  for (const auto& e : errors)
    if (!e.empty()) throw Error(e);

  for (int32_t si = 0; si < NS; ++si) {
    for (int32_t ki = 0; ki < NK; ++ki) {
      const int32_t K = opt.top_ks[ki];
      // The lists as trace records: one request, layer-major [layers * K], -1 padded (n < K early on).
      std::vector<traces::StepRecord> recs(static_cast<size_t>(S));
      for (int32_t s = 0; s < S; ++s) {
        recs[s].request_id = 0;
        recs[s].step = s;
        recs[s].seq_len = data.seq_lens[s];
        recs[s].positions.assign(static_cast<size_t>(L) * K, -1);
        for (int32_t l = 0; l < L; ++l)
          std::copy(lists[si][ki][l][s].begin(), lists[si][ki][l][s].end(), recs[s].positions.begin() + static_cast<std::ptrdiff_t>(l) * K);
      }
      ReplayOptions ro;
      ro.policies = {"sglang-lru"};
      for (int32_t m : opt.buffer_multiples) ro.buffer_sizes.push_back(m * K);
      std::sort(ro.buffer_sizes.begin(), ro.buffer_sizes.end());
      ro.buffer_sizes.erase(std::unique(ro.buffer_sizes.begin(), ro.buffer_sizes.end()), ro.buffer_sizes.end());
      ro.row_bytes = r.row_bytes;
      ro.threads = std::max(1, opt.threads);
      ro.keep_step_rows = true;
      const size_t NH = ro.buffer_sizes.size();
      // per [h][layer]: selected, misses, step-layers
      std::vector<std::vector<BufferStats>> per(NH, std::vector<BufferStats>(static_cast<size_t>(L)));
      VectorSource src(r.trace_meta(K), recs);
      run_replay(src, ro, [&](const ReplayRequestRows& rows) {
        for (size_t h = 0; h < NH && h < rows.rows.size(); ++h)
          for (int32_t l = 0; l < L; ++l)
            for (const ReplayStepRow& row : rows.rows[h][l]) {
              BufferStats& b = per[h][l];
              b.selected += row.selected;
              b.misses += row.misses;
              ++b.step_layers;
            }
      });
      for (int32_t l = -1; l < L; ++l) {
        StudyRow row;
        row.selector = opt.selectors[si];
        row.top_k = K;
        row.layer = l < 0 ? -1 : data.layer_ids[l];
        Acc tot;
        for (int32_t x = (l < 0 ? 0 : l); x < (l < 0 ? L : l + 1); ++x) {
          const Acc& a = A(si, ki, x);
          tot.recall += a.recall, tot.mass += a.mass, tot.overlap += a.overlap, tot.n += a.n, tot.pairs += a.pairs;
        }
        row.step_layers = tot.n;
        row.recall = tot.n ? tot.recall / tot.n : 0;
        row.mass_share = tot.n ? tot.mass / tot.n : 0;
        row.overlap = tot.pairs ? tot.overlap / tot.pairs : 0;
        for (size_t h = 0; h < NH; ++h) {
          BufferStats b;
          b.buffer_size = ro.buffer_sizes[h];
          for (int32_t x = (l < 0 ? 0 : l); x < (l < 0 ? L : l + 1); ++x) {
            b.selected += per[h][x].selected, b.misses += per[h][x].misses, b.step_layers += per[h][x].step_layers;
          }
          b.h2d_bytes = b.misses * r.row_bytes;
          row.buffers.push_back(b);
        }
        r.rows.push_back(std::move(row));
      }
      r.traces[{opt.selectors[si], K}] = std::move(recs);
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string study_json(const StudyResult& r) {
  const StudyOptions& o = r.options;
  std::string layers;
  for (size_t i = 0; i < r.layer_ids.size(); ++i) layers += fmt::format("{}{}", i ? ", " : "", r.layer_ids[i]);
  std::string s = "{\n";
  s += fmt::format("  \"source\": {},\n  \"model_layers\": [{}],\n  \"steps\": {},\n  \"prefill\": {},\n", json_quote(r.source),
                   layers, r.steps, r.prefill);
  s += fmt::format("  \"seq_len_first\": {},\n  \"seq_len_last\": {},\n  \"q_heads\": {},\n  \"kv_heads\": {},\n  \"head_dim\": {},\n",
                   r.n_first, r.n_last, r.q_heads, r.kv_heads, r.head_dim);
  s += fmt::format("  \"row_bytes\": {},\n  \"policy\": \"sglang-lru\",\n  \"initial_state\": \"{}\",\n", r.row_bytes,
                   traces::to_string(o.initial_state));
  s += fmt::format(
      "  \"params\": {{\"page_size\": {}, \"sinks\": {}, \"clusters\": {}, \"kmeans_iters\": {}, \"seed\": {}, "
      "\"indexer_dims\": {}, \"indexer_heads_per_group\": {}}},\n",
      o.page_size, o.sinks, o.clusters, o.kmeans_iters, o.seed, o.indexer_dims, o.indexer_heads_per_group);
  s += "  \"rows\": [\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const StudyRow& row = r.rows[i];
    s += fmt::format("    {{\"selector\": {}, \"top_k\": {}, \"layer\": {}, \"step_layers\": {}, \"recall\": {}, "
                     "\"mass_share\": {}, \"overlap\": {}, \"replay\": [",
                     json_quote(row.selector), row.top_k, row.layer < 0 ? std::string("\"all\"") : std::to_string(row.layer),
                     row.step_layers, num(row.recall), num(row.mass_share), num(row.overlap));
    for (size_t h = 0; h < row.buffers.size(); ++h) {
      const BufferStats& b = row.buffers[h];
      s += fmt::format("{}{{\"buffer_size\": {}, \"selected\": {}, \"misses\": {}, \"hit_rate\": {}, "
                       "\"misses_per_step_layer\": {}, \"h2d_bytes\": {}, \"h2d_bytes_per_step_layer\": {}}}",
                       h ? ", " : "", b.buffer_size, b.selected, b.misses, num(b.hit_rate()), num(b.misses_per_step_layer()),
                       b.h2d_bytes, num(b.step_layers ? static_cast<double>(b.h2d_bytes) / b.step_layers : 0.0));
    }
    s += fmt::format("]}}{}\n", i + 1 < r.rows.size() ? "," : "");
  }
  s += "  ]\n}\n";
  return s;
}

std::string study_csv(const StudyResult& r) {
  std::string s = "selector,top_k,layer,step_layers,recall,mass_share,overlap,buffer_size,misses,misses_per_step_layer,hit_rate,h2d_bytes\n";
  for (const StudyRow& row : r.rows)
    for (const BufferStats& b : row.buffers)
      s += fmt::format("{},{},{},{},{:.6f},{:.6f},{:.6f},{},{},{:.4f},{:.6f},{}\n", row.selector, row.top_k,
                       row.layer < 0 ? std::string("all") : std::to_string(row.layer), row.step_layers, row.recall,
                       row.mass_share, row.overlap, b.buffer_size, b.misses, b.misses_per_step_layer(), b.hit_rate(),
                       b.h2d_bytes);
  return s;
}

std::string study_table(const StudyResult& r) {
  std::string s;
  std::vector<int32_t> ks;
  for (const StudyRow& row : r.rows)
    if (std::find(ks.begin(), ks.end(), row.top_k) == ks.end()) ks.push_back(row.top_k);
  for (int32_t K : ks) {
    const StudyRow* first = nullptr;
    for (const StudyRow& row : r.rows)
      if (row.top_k == K) {
        first = &row;
        break;
      }
    s += fmt::format("\n== K = {}: recall of the oracle's attention mass, share of all attention, adjacent-step overlap; "
                     "sglang-lru misses per step-layer and H2D KiB per step-layer ({} B rows)\n",
                     K, r.row_bytes);
    std::string head = fmt::format("{:<12} {:>5} {:>7} {:>7} {:>7}", "selector", "layer", "recall", "mass", "overlap");
    for (const BufferStats& b : first->buffers) head += fmt::format(" {:>9} {:>9}", fmt::format("miss@{}", b.buffer_size),
                                                                     fmt::format("KiB@{}", b.buffer_size));
    s += head + "\n";
    for (int pass = 0; pass < 2; ++pass) {
      for (const StudyRow& row : r.rows) {
        if (row.top_k != K || (pass == 0) != (row.layer < 0)) continue;
        std::string line = fmt::format("{:<12} {:>5} {:>7.4f} {:>7.4f} {:>7.4f}", row.selector,
                                       row.layer < 0 ? std::string("all") : std::to_string(row.layer), row.recall,
                                       row.mass_share, row.overlap);
        for (const BufferStats& b : row.buffers)
          line += fmt::format(" {:>9.2f} {:>9.2f}", b.misses_per_step_layer(),
                              b.misses_per_step_layer() * static_cast<double>(r.row_bytes) / 1024.0);
        s += line + "\n";
      }
      if (pass == 0) s += "  per layer:\n";
    }
  }
  return s;
}

}  // namespace hisparse::sim::select

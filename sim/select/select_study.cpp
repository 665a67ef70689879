// @brief The selection study: scoring, selection and metrics per layer (one thread per layer) at token and page
// granularity, shared and per KV head, then the replay of each selector's lists through sglang-lru (page lists through
// the page trace adapter). The JSON / CSV / table are in select_report.cpp.
#include "sim/select/select_study.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/parallel/task_pool.h"
#include "core/io/output_file.h"
#include "sim/replay/replay_engine.h"
#include "sim/select/double_sparse.h"
#include "sim/select/page_select.h"
#include "sim/select/selectors.h"
#include "traces/npz_reader.h"
#include "traces/page_trace_source.h"

namespace hisparse::sim::select {
namespace {

// The arrays are read by the traces layer's .npy/.npz reader (traces/npz_reader.h).
using traces::NumArray;
using traces::read_arrays;

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

bool ranked(const std::string& sel) { return sel != "sink-recent"; }

/// One granularity and head scope of the study: P = 0 tokens, else pages of P tokens.
struct Config {
  int32_t page_size = 0;
  bool per_kv_head = false;
};

/// One selection problem: every KV head of a layer (shared) or one KV head and its query heads, with the selectors'
/// per-layer structures built for it.
struct Scope {
  const LayerKeys* keys = nullptr;
  IndexerStandIn ix;
  std::map<int32_t, QuestPages> quest;  // by page size
  ClusterIndex ci;
  DoubleSparseChannels ds;
};

/// What one step of one scope yields: the true score, the token oracle and every selector's ranked lists up to the
/// largest K (token positions; pages for page sizes, best first). sink-recent is built per K.
struct ScopeStep {
  std::vector<double> score;
  std::vector<int32_t> oracle;
  std::vector<std::vector<int32_t>> tokens;               // [selector]
  std::vector<std::vector<std::vector<int32_t>>> pages;   // [page size index][selector]
  std::vector<std::vector<int32_t>> page_oracle;          // [page size index]
};

ScopeStep run_scope(const Scope& sc, const Query& q, const StudyOptions& opt, int32_t kmax) {
  ScopeStep st;
  st.score = true_scores(*sc.keys, q);
  st.oracle = top_k_by_score(st.score, q.n, kmax);
  const size_t NS = opt.selectors.size();
  std::vector<double> ix_score, ckv_score;
  const auto uses = [&](const char* s) { return std::find(opt.selectors.begin(), opt.selectors.end(), s) != opt.selectors.end(); };
  if (uses("indexer")) ix_score = indexer_scores(sc.ix, *sc.keys, q);
  if (uses("clusterkv")) ckv_score = clusterkv_scores(sc.ci, *sc.keys, q);
  std::vector<double> ds_score;
  if (uses("double-sparse")) ds_score = double_sparse_scores(sc.ds, *sc.keys, q);
  if (opt.token_granularity) {
    st.tokens.resize(NS);
    for (size_t si = 0; si < NS; ++si) {
      const std::string& sel = opt.selectors[si];
      if (sel == "oracle") st.tokens[si] = st.oracle;
      else if (sel == "indexer") st.tokens[si] = top_k_by_score(ix_score, q.n, kmax);
      else if (sel == "quest") st.tokens[si] = quest_select(sc.quest.at(opt.page_size), *sc.keys, q, kmax);
      else if (sel == "clusterkv") st.tokens[si] = top_k_by_score(ckv_score, q.n, kmax);
      else if (sel == "double-sparse") st.tokens[si] = top_k_by_score(ds_score, q.n, kmax);
    }
  }
  for (int32_t P : opt.page_sizes) {
    const int32_t budget = kmax / P;
    st.page_oracle.push_back(top_pages(page_sums(st.score, q.n, P), budget));
    std::vector<std::vector<int32_t>> per(NS);
    for (size_t si = 0; si < NS; ++si) {
      const std::string& sel = opt.selectors[si];
      if (sel == "oracle") per[si] = st.page_oracle.back();
      // The indexer's scores are ReLU logits: softmax puts a page's mass on its highest ones, and a sum of logits
      // over a page is no mass, so a page is as good as its best token.
      else if (sel == "indexer") per[si] = top_pages(page_maxima(ix_score, q.n, P), budget);
      else if (sel == "quest") per[si] = top_pages(quest_page_scores(sc.quest.at(P), *sc.keys, q), budget);
      // ClusterKV's token score is an estimated attention probability: summed over a page it is the page's mass.
      else if (sel == "clusterkv") per[si] = top_pages(page_sums(ckv_score, q.n, P), budget);
      // Double Sparsity's label score is an estimated attention probability too.
      else if (sel == "double-sparse") per[si] = top_pages(page_sums(ds_score, q.n, P), budget);
    }
    st.pages.push_back(std::move(per));
  }
  return st;
}

/// The list of selector si at budget K in config c (token positions; a page list as its pages' positions).
std::vector<int32_t> list_of(const ScopeStep& st, const StudyOptions& opt, size_t si, int32_t K, int32_t P, int32_t pi,
                             int32_t n) {
  const bool rk = ranked(opt.selectors[si]);
  if (P == 0) {
    if (!rk) return sink_recent_select(n, K, opt.sinks);
    const auto& full = st.tokens[si];
    return std::vector<int32_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(full.size(), K)));
  }
  if (!rk) return page_positions(sink_recent_pages(n, P, K / P, opt.sinks), n, P);
  const auto& full = st.pages[pi][si];
  const std::vector<int32_t> pages(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(full.size(), K / P)));
  return page_positions(pages, n, P);
}

/// The token oracle's top-K, and (page configs) the page oracle's K/P pages as positions.
std::vector<int32_t> prefix(const std::vector<int32_t>& v, size_t k) {
  return std::vector<int32_t>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size(), k)));
}

/// Trace records held in memory, one request (owned elsewhere).
class RecordSource : public traces::TraceSource {
 public:
  RecordSource(traces::TraceMeta meta, const std::vector<traces::StepRecord>& recs) : meta_(std::move(meta)), recs_(recs) {}
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

}  // namespace

const std::vector<std::string>& selector_names() {
  static const std::vector<std::string> names = {"oracle", "indexer", "quest", "clusterkv", "double-sparse",
                                                  "sink-recent"};
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

std::string StudyResult::TraceKey::file_name() const {
  std::string s = fmt::format("{}_k{}", selector, top_k);
  if (page_size > 0) s += fmt::format("_p{}", page_size);
  if (per_kv_head) s += "_kvh";
  return s + ".hstr";
}

traces::TraceMeta StudyResult::trace_meta(int32_t top_k, bool per_kv_head) const {
  traces::TraceMeta m;
  m.layers = static_cast<int32_t>(layer_ids.size()) * (per_kv_head ? kv_heads : 1);
  m.top_k = top_k;
  m.initial_state = options.initial_state;
  m.source = source;
  return m;
}

namespace {

void check_study_options(const KqData& data, const StudyOptions& opt) {
  if (opt.selectors.empty() || opt.top_ks.empty() || opt.buffer_multiples.empty())
    throw_error("select: need at least one selector, top-k and buffer multiple");
  for (const auto& s : opt.selectors)
    if (std::find(selector_names().begin(), selector_names().end(), s) == selector_names().end())
      throw_error("select: unknown selector '{}' (known: oracle, indexer, quest, clusterkv, double-sparse, "
                  "sink-recent)", s);
  for (int32_t k : opt.top_ks)
    if (k < 1 || k > data.n_keys) throw_error("select: --top-k {} outside [1, {}]", k, data.n_keys);
  for (int32_t m : opt.buffer_multiples)
    if (m < 1) throw_error("select: --buffer-multiples {} must be >= 1 (H >= K)", m);
  if (!opt.token_granularity && opt.page_sizes.empty())
    throw_error("select: no granularity to study (token granularity off and no page size)");
  for (int32_t P : opt.page_sizes) {
    traces::check_page_size(P, "select: --page-size");
    for (int32_t k : opt.top_ks)
      if (k % P != 0)
        throw_error("select: --top-k {} is not a multiple of --page-size {}: at page granularity a budget of K tokens "
                    "is K/P whole pages",
                    k, P);
  }
}

/// Sums of one (config, selector, K, layer) cell over its steps.
struct Acc {
  double recall = 0, mass = 0, overlap = 0, tokens = 0, page_recall = 0;
  std::vector<double> group;
  int64_t n = 0, pairs = 0;
};

/// The share of one step's list already in the previous step's list, with a stamp array reused across steps.
class OverlapCounter {
 public:
  explicit OverlapCounter(int32_t n_keys) : stamp_(static_cast<size_t>(n_keys), 0) {}
  double operator()(const std::vector<int32_t>& prev, const std::vector<int32_t>& cur) {
    ++mark_;
    for (int32_t p : prev) stamp_[p] = mark_;
    int64_t common = 0;
    for (int32_t p : cur) common += stamp_[p] == mark_;
    return cur.empty() ? 0.0 : static_cast<double>(common) / static_cast<double>(cur.size());
  }

 private:
  std::vector<int32_t> stamp_;
  int32_t mark_ = 0;
};

/// The selectors' structures of one layer: the shared scope and (per-KV-head study) one scope per KV head.
struct LayerScopes {
  LayerKeys keys;
  Scope shared;
  std::vector<LayerKeys> per_head_keys;
  std::vector<Scope> heads;
};

/// One study over every config, selector, K and layer: selection per layer (layers in parallel, each writing its own
/// slots), then per (config, selector, K) the lists' replay through sglang-lru and the table rows.
class StudyRun {
 public:
  StudyRun(const KqData& data, const StudyOptions& opt, StudyResult& r)
      : data_(data), opt_(opt), r_(r), S_(r.steps), L_(data.layers), D_(data.head_dim), G_(data.kv_heads),
        NS_(static_cast<int32_t>(opt.selectors.size())), NK_(static_cast<int32_t>(opt.top_ks.size())),
        kmax_(*std::max_element(opt.top_ks.begin(), opt.top_ks.end())) {
    for (int32_t P : opt.token_granularity ? std::vector<int32_t>{0} : std::vector<int32_t>{}) add_config(P);
    for (int32_t P : opt.page_sizes) add_config(P);
    NC_ = static_cast<int32_t>(configs_.size());
    lists_.resize(static_cast<size_t>(NC_));
    for (int32_t c = 0; c < NC_; ++c)
      lists_[c].assign(NS_, std::vector<std::vector<StepLists>>(NK_, std::vector<StepLists>(streams(configs_[c]), StepLists(S_))));
    acc_.resize(static_cast<size_t>(NC_) * NS_ * NK_ * L_);
    for (Acc& a : acc_) a.group.assign(opt.per_kv_head ? G_ : 0, 0.0);
  }

  void select_layer(int32_t l) {
    // Built in place: the scopes point at the keys they hold.
    LayerScopes ls{layer_keys(l), {}, {}, {}};
    build_scopes(ls);
    OverlapCounter overlap(data_.n_keys);
    for (int32_t s = 0; s < S_; ++s) {
      const int32_t n = data_.seq_lens[s];
      const Query q{data_.queries.data() + (static_cast<size_t>(s) * L_ + l) * data_.q_heads * D_, data_.q_heads,
                    data_.scaling, n};
      const ScopeStep sh = run_scope(ls.shared, q, opt_, kmax_);
      std::vector<ScopeStep> hs;
      for (int32_t g = 0; g < static_cast<int32_t>(ls.heads.size()); ++g)
        hs.push_back(run_scope(ls.heads[g], head_query(q, G_, D_, g), opt_, kmax_));
      for (int32_t c = 0; c < NC_; ++c)
        for (int32_t si = 0; si < NS_; ++si)
          for (int32_t ki = 0; ki < NK_; ++ki) record_step(c, si, ki, l, s, sh, hs, overlap);
    }
  }

  void replay_and_tabulate(int32_t c, int32_t si, int32_t ki) {
    const Config& cf = configs_[c];
    const int32_t K = opt_.top_ks[ki], unit = std::max(cf.page_size, 1);
    const int64_t unit_bytes = r_.row_bytes / (cf.per_kv_head ? G_ : 1) * unit;
    std::vector<traces::StepRecord> recs = trace_records(c, si, ki);
    std::vector<int32_t> buffer_sizes;
    const std::vector<std::vector<BufferStats>> per = replay_lists(cf, K, unit, unit_bytes, recs, buffer_sizes);
    for (int32_t l = -1; l < L_; ++l) r_.rows.push_back(study_row(c, si, ki, l, unit_bytes, buffer_sizes, per));
    r_.traces[{opt_.selectors[si], K, cf.page_size, cf.per_kv_head}] = std::move(recs);
  }

  int32_t configs() const { return NC_; }
  int32_t selectors() const { return NS_; }
  int32_t budgets() const { return NK_; }

 private:
  using StepLists = std::vector<std::vector<int32_t>>;

  void add_config(int32_t P) {
    configs_.push_back({P, false});
    if (opt_.per_kv_head) configs_.push_back({P, true});
  }
  int32_t streams(const Config& c) const { return c.per_kv_head ? L_ * G_ : L_; }
  int32_t page_index(int32_t P) const {
    return P == 0 ? -1
                  : static_cast<int32_t>(std::find(opt_.page_sizes.begin(), opt_.page_sizes.end(), P) -
                                         opt_.page_sizes.begin());
  }
  bool uses(const char* s) const {
    return std::find(opt_.selectors.begin(), opt_.selectors.end(), s) != opt_.selectors.end();
  }
  Acc& acc(int32_t c, int32_t s, int32_t k, int32_t l) { return acc_[((static_cast<size_t>(c) * NS_ + s) * NK_ + k) * L_ + l]; }

  LayerKeys layer_keys(int32_t l) const {
    const size_t per_layer = static_cast<size_t>(data_.n_keys) * G_ * D_;
    return LayerKeys(std::vector<float>(data_.keys.begin() + static_cast<std::ptrdiff_t>(l * per_layer),
                                        data_.keys.begin() + static_cast<std::ptrdiff_t>((l + 1) * per_layer)),
                     data_.n_keys, G_, D_);
  }

  void build_scopes(LayerScopes& ls) const {
    std::vector<int32_t> quest_sizes;
    if (uses("quest")) {
      if (opt_.token_granularity) quest_sizes.push_back(opt_.page_size);
      quest_sizes.insert(quest_sizes.end(), opt_.page_sizes.begin(), opt_.page_sizes.end());
    }
    Scope& shared = ls.shared;
    shared.keys = &ls.keys;
    if (uses("indexer")) shared.ix = build_indexer(ls.keys, data_.prefill(), opt_.indexer_dims, opt_.indexer_heads_per_group);
    for (int32_t P : quest_sizes)
      if (!shared.quest.count(P)) shared.quest.emplace(P, build_quest_pages(ls.keys, P));
    if (uses("clusterkv")) shared.ci = build_cluster_index(ls.keys, data_.prefill(), opt_.clusters, opt_.kmeans_iters, opt_.seed);
    if (uses("double-sparse")) shared.ds = build_double_sparse(ls.keys, data_.prefill(), opt_.ds_channels);
    if (!opt_.per_kv_head) return;
    for (int32_t g = 0; g < G_; ++g) ls.per_head_keys.push_back(head_keys(ls.keys, g));
    for (int32_t g = 0; g < G_; ++g) {
      Scope h;
      h.keys = &ls.per_head_keys[g];
      // The same dims and centroids as the shared selection: only the scope of the scores differs.
      if (uses("indexer")) h.ix = head_indexer(shared.ix, g);
      if (uses("clusterkv")) h.ci = head_clusters(shared.ci, g);
      if (uses("double-sparse")) h.ds = head_double_sparse(shared.ds, g);
      for (int32_t P : quest_sizes)
        if (!h.quest.count(P)) h.quest.emplace(P, build_quest_pages(ls.per_head_keys[g], P));
      ls.heads.push_back(std::move(h));
    }
  }

  /// Recall of `list` against scope st's token oracle of budget K (and, page configs, its page oracle) and the mass.
  std::pair<double, double> recall_of(const ScopeStep& st, const std::vector<int32_t>& list, int32_t K, int32_t P,
                                      int32_t pi, int32_t n, double& page_ratio) const {
    const double m = selected_mass(st.score, list), om = selected_mass(st.score, prefix(st.oracle, K));
    if (P > 0) {
      const double pm = selected_mass(st.score, page_positions(prefix(st.page_oracle[pi], K / P), n, P));
      page_ratio = pm > 0 ? m / pm : 1.0;
    }
    return {om > 0 ? m / om : 1.0, m};
  }

  void record_step(int32_t c, int32_t si, int32_t ki, int32_t l, int32_t s, const ScopeStep& sh,
                   const std::vector<ScopeStep>& hs, OverlapCounter& overlap) {
    const int32_t P = configs_[c].page_size, pi = page_index(P), K = opt_.top_ks[ki], n = data_.seq_lens[s];
    Acc& a = acc(c, si, ki, l);
    double pr = 0;
    if (!configs_[c].per_kv_head) {
      std::vector<int32_t> list = list_of(sh, opt_, si, K, P, pi, n);
      const auto [rc, m] = recall_of(sh, list, K, P, pi, n, pr);
      a.recall += rc, a.mass += m / data_.q_heads, a.page_recall += pr, a.tokens += static_cast<double>(list.size());
      for (int32_t g = 0; g < static_cast<int32_t>(hs.size()); ++g) {
        const double om = selected_mass(hs[g].score, prefix(hs[g].oracle, K));
        a.group[g] += om > 0 ? selected_mass(hs[g].score, list) / om : 1.0;
      }
      if (s > 0) a.overlap += overlap(lists_[c][si][ki][l][s - 1], list), ++a.pairs;
      lists_[c][si][ki][l][s] = std::move(list);
    } else {
      double rsum = 0, msum = 0, psum = 0, tsum = 0, osum = 0;
      for (int32_t g = 0; g < G_; ++g) {
        std::vector<int32_t> list = list_of(hs[g], opt_, si, K, P, pi, n);
        const auto [rc, m] = recall_of(hs[g], list, K, P, pi, n, pr);
        rsum += rc, msum += m, psum += pr, tsum += static_cast<double>(list.size());
        a.group[g] += rc;
        const size_t stream = static_cast<size_t>(l) * G_ + g;
        if (s > 0) osum += overlap(lists_[c][si][ki][stream][s - 1], list);
        lists_[c][si][ki][stream][s] = std::move(list);
      }
      a.recall += rsum / G_, a.mass += msum / data_.q_heads, a.page_recall += psum / G_, a.tokens += tsum / G_;
      if (s > 0) a.overlap += osum / G_, ++a.pairs;
    }
    ++a.n;
  }

  /// The lists as trace records: one request, stream-major [streams * K], -1 padded (n < K early on).
  std::vector<traces::StepRecord> trace_records(int32_t c, int32_t si, int32_t ki) const {
    const int32_t K = opt_.top_ks[ki], NSt = streams(configs_[c]);
    std::vector<traces::StepRecord> recs(static_cast<size_t>(S_));
    for (int32_t s = 0; s < S_; ++s) {
      recs[s].request_id = 0;
      recs[s].step = s;
      recs[s].seq_len = data_.seq_lens[s];
      recs[s].positions.assign(static_cast<size_t>(NSt) * K, -1);
      for (int32_t x = 0; x < NSt; ++x)
        std::copy(lists_[c][si][ki][x][s].begin(), lists_[c][si][ki][x][s].end(),
                  recs[s].positions.begin() + static_cast<std::ptrdiff_t>(x) * K);
    }
    return recs;
  }

  /// Per [buffer size][stream]: selected, misses and step-layers of the lists replayed through sglang-lru.
  std::vector<std::vector<BufferStats>> replay_lists(const Config& cf, int32_t K, int32_t unit, int64_t unit_bytes,
                                                     const std::vector<traces::StepRecord>& recs,
                                                     std::vector<int32_t>& buffer_sizes) const {
    ReplayOptions ro;
    ro.policies = {"sglang-lru"};
    for (int32_t m : opt_.buffer_multiples) ro.buffer_sizes.push_back(m * K / unit);
    std::sort(ro.buffer_sizes.begin(), ro.buffer_sizes.end());
    ro.buffer_sizes.erase(std::unique(ro.buffer_sizes.begin(), ro.buffer_sizes.end()), ro.buffer_sizes.end());
    ro.row_bytes = unit_bytes;
    ro.threads = std::max(1, opt_.threads);
    ro.keep_step_rows = true;
    const size_t NH = ro.buffer_sizes.size();
    const int32_t NSt = streams(cf);
    std::vector<std::vector<BufferStats>> per(NH, std::vector<BufferStats>(static_cast<size_t>(NSt)));
    std::unique_ptr<traces::TraceSource> src = std::make_unique<RecordSource>(r_.trace_meta(K, cf.per_kv_head), recs);
    // A page list of K/P pages: the page trace's width is the budget, which no list exceeds.
    if (cf.page_size > 0) src = std::make_unique<traces::PageTraceSource>(std::move(src), cf.page_size, K / cf.page_size);
    run_replay(*src, ro, [&](const ReplayRequestRows& rows) {
      for (size_t h = 0; h < NH && h < rows.rows.size(); ++h)
        for (int32_t x = 0; x < NSt; ++x)
          for (const ReplayStepRow& row : rows.rows[h][x]) {
            BufferStats& b = per[h][x];
            b.selected += row.selected;
            b.misses += row.misses;
            ++b.step_layers;
          }
    });
    buffer_sizes = ro.buffer_sizes;
    return per;
  }

  /// One table row: layer l's sums (l = -1: every layer).
  StudyRow study_row(int32_t c, int32_t si, int32_t ki, int32_t l, int64_t unit_bytes,
                     const std::vector<int32_t>& buffer_sizes, const std::vector<std::vector<BufferStats>>& per) {
    const Config& cf = configs_[c];
    const int32_t unit = std::max(cf.page_size, 1), per_stream = cf.per_kv_head ? G_ : 1;
    StudyRow row;
    row.selector = opt_.selectors[si];
    row.top_k = opt_.top_ks[ki];
    row.layer = l < 0 ? -1 : data_.layer_ids[l];
    row.page_size = cf.page_size;
    row.per_kv_head = cf.per_kv_head;
    row.unit_bytes = unit_bytes;
    Acc tot;
    tot.group.assign(opt_.per_kv_head ? G_ : 0, 0.0);
    const int32_t lo = l < 0 ? 0 : l, hi = l < 0 ? L_ : l + 1;
    for (int32_t x = lo; x < hi; ++x) {
      const Acc& a = acc(c, si, ki, x);
      tot.recall += a.recall, tot.mass += a.mass, tot.overlap += a.overlap, tot.tokens += a.tokens;
      tot.page_recall += a.page_recall, tot.n += a.n, tot.pairs += a.pairs;
      for (size_t g = 0; g < tot.group.size(); ++g) tot.group[g] += a.group[g];
    }
    row.step_layers = tot.n;
    const double nn = tot.n ? static_cast<double>(tot.n) : 1.0;
    row.recall = tot.recall / nn;
    row.mass_share = tot.mass / nn;
    row.overlap = tot.pairs ? tot.overlap / static_cast<double>(tot.pairs) : 0;
    row.tokens = tot.tokens / nn;
    row.page_recall = cf.page_size > 0 ? tot.page_recall / nn : -1;
    // One element of the K / V rows: the row holds K and V of every KV head.
    const double elem_bytes = static_cast<double>(r_.row_bytes) / (2.0 * G_ * D_);
    // Quest scores pages of its own P at token granularity, of the row's P at page granularity.
    double sb = 0;
    for (int32_t s = 0; s < S_; ++s)
      sb += selector_score_bytes(row.selector, data_.seq_lens[s], G_, D_, elem_bytes, opt_.indexer_dims,
                                 cf.page_size > 0 ? cf.page_size : opt_.page_size, opt_.clusters, opt_.ds_channels);
    row.score_bytes = sb / S_;
    row.read_bytes = row.score_bytes + row.tokens * static_cast<double>(r_.row_bytes);
    for (double g : tot.group) row.group_recall.push_back(g / nn);
    for (size_t h = 0; h < buffer_sizes.size(); ++h) {
      BufferStats b;
      b.buffer_size = buffer_sizes[h];
      b.buffer_tokens = buffer_sizes[h] * unit;
      for (int32_t x = lo * per_stream; x < hi * per_stream; ++x) {
        b.selected += per[h][x].selected, b.misses += per[h][x].misses;
        if (x % per_stream == 0) b.step_layers += per[h][x].step_layers;  // a step-layer counts once, not per head
      }
      b.h2d_bytes = b.misses * unit_bytes;
      row.buffers.push_back(b);
    }
    return row;
  }

  const KqData& data_;
  const StudyOptions& opt_;
  StudyResult& r_;
  const int32_t S_, L_, D_, G_, NS_, NK_, kmax_;
  int32_t NC_ = 0;
  std::vector<Config> configs_;
  std::vector<std::vector<std::vector<std::vector<StepLists>>>> lists_;  // [config][sel][k][stream][step]
  std::vector<Acc> acc_;
};

}  // namespace

StudyResult run_study(const KqData& data, const StudyOptions& opt, const std::function<void(int64_t)>& layers_done) {
  const auto t0 = std::chrono::steady_clock::now();
  check_study_options(data, opt);
  const int32_t S = opt.max_steps > 0 ? std::min(opt.max_steps, data.steps) : data.steps;
  const int32_t G = data.kv_heads;
  StudyResult r;
  r.source = data.source;
  r.layer_ids = data.layer_ids;
  r.steps = S;
  r.prefill = data.prefill();
  r.n_first = data.seq_lens[0];
  r.n_last = data.seq_lens[S - 1];
  r.q_heads = data.q_heads, r.kv_heads = G, r.head_dim = data.head_dim;
  // K and V of one token in one layer, fp16 as recorded: 2 tensors x kv_heads x head_dim x 2 bytes.
  r.row_bytes = opt.row_bytes > 0 ? opt.row_bytes : int64_t{2} * G * data.head_dim * 2;
  if (opt.per_kv_head && r.row_bytes % G != 0)
    throw_error("select: --row-bytes {} is not divisible by the {} KV heads: a per-KV-head buffer moves one head's share",
                r.row_bytes, G);
  r.options = opt;
  StudyRun run(data, opt, r);
  // Layers are independent and write their own slots; a failure is reported as the lowest layer's.
  std::mutex done_mutex;
  int64_t done = 0;
  parallel_for(static_cast<size_t>(data.layers), opt.threads, [&](size_t l) {
    run.select_layer(static_cast<int32_t>(l));
    if (!layers_done) return;
    std::lock_guard<std::mutex> lock(done_mutex);
    layers_done(++done);
  });
  for (int32_t c = 0; c < run.configs(); ++c)
    for (int32_t si = 0; si < run.selectors(); ++si)
      for (int32_t ki = 0; ki < run.budgets(); ++ki) run.replay_and_tabulate(c, si, ki);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace hisparse::sim::select

// @brief The selection study: load_kq's errors, and each selector on constructed
// inputs whose answer is known (Quest's bound, a dominant key, sink + recent positions, separated clusters, the
// indexer's dims), and the study's invariants (oracle recall 1) on a small fixture.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <set>

#include <unistd.h>

#include "core/error.h"
#include "traces/npz_reader.h"
#include "sim/select/select_study.h"
#include "sim/select/selectors.h"

namespace hisparse::sim::select {
namespace {

using traces::NumArray;
using traces::parse_npy;

namespace fs = std::filesystem;

const std::string kData = std::string(HISPARSE_SOURCE_DIR) + "/tests/traces/data/npz";

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string scratch(const std::string& name) {
  const auto d = fs::path(HISPARSE_BINARY_DIR) / "test_scratch" / ("select_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

void write(const std::string& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// Keys with random values in [-1, 1) (seeded), [n][kv_heads][dim].
std::vector<float> random_keys(int32_t n, int32_t kv, int32_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(static_cast<size_t>(n) * kv * dim);
  for (float& x : v) x = static_cast<float>(static_cast<int32_t>(rng() % 2001) - 1000) / 1000.0f;
  return v;
}

TEST_CASE("load_kq reads the fixture's layers, shapes, scaling and sequence lengths") {
  const KqData d = load_kq(kData + "/kq_deflate.npz");
  CHECK(d.layers == 2);
  CHECK(d.layer_ids == std::vector<int32_t>{3, 7});
  CHECK(d.n_keys == 40);
  CHECK(d.kv_heads == 1);
  CHECK(d.q_heads == 2);
  CHECK(d.steps == 6);
  CHECK(d.scaling == 0.5f);
  CHECK(d.seq_lens == std::vector<int32_t>{35, 36, 37, 38, 39, 40});
  CHECK(d.prefill() == 34);
  CHECK(d.queries[5] == static_cast<float>((5 % 17) - 8) / 8.0f);
}

TEST_CASE("load_kq names the array and the shapes that do not fit") {
  const std::string dir = scratch("kq_missing_queries");
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"keys.npy", "seq_lens.npy", "scaling.npy"}) fs::copy_file(kData + "/kq_dir/" + f, dir + "/" + f);
  std::string e = error_of([&] { load_kq(dir); });
  CHECK(e.find("no array 'queries'") != std::string::npos);
  CHECK(e.find("keys [2, 40, 1, 4]") != std::string::npos);

  // seq_lens of the wrong length: the .npy bytes of int32 [3] = {35, 36, 37}.
  const std::string bad = scratch("kq_bad_seq");
  fs::remove_all(bad);
  fs::copy(kData + "/kq_dir", bad);
  const NumArray s = parse_npy(slurp(kData + "/kq_dir/seq_lens.npy"), "x");
  std::string npy = slurp(kData + "/kq_dir/seq_lens.npy");
  const size_t hdr = npy.size() - s.bytes.size();
  std::string header = npy.substr(0, hdr);
  const size_t pos = header.find("(6,)");
  REQUIRE(pos != std::string::npos);
  header.replace(pos, 4, "(3,)");
  write(bad + "/seq_lens.npy", header + npy.substr(hdr, 12));
  e = error_of([&] { load_kq(bad); });
  CHECK(e.find("seq_lens shape [3]") != std::string::npos);

  // A header that promises more data than the file holds.
  e = error_of([&] { parse_npy(header + npy.substr(hdr, 8), "short.npy"); });
  CHECK(e.find("short.npy") != std::string::npos);
  CHECK(e.find("needs 12 data bytes") != std::string::npos);
}

TEST_CASE("Quest's bound is an upper bound of every key's score in its page, including the partial last page") {
  const int32_t n = 203, kv = 2, D = 16, P = 16;
  LayerKeys keys(random_keys(n, kv, D, 7), n, kv, D);
  const QuestPages pages = build_quest_pages(keys, P);
  CHECK(pages.pages == 13);
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> q(D);
    for (float& x : q) x = static_cast<float>(static_cast<int32_t>(rng() % 2001) - 1000) / 500.0f;
    for (int32_t g = 0; g < kv; ++g)
      for (int32_t p = 0; p < pages.pages; ++p) {
        const size_t base = (static_cast<size_t>(g) * pages.pages + p) * D;
        const float u = quest_bound(q.data(), &pages.mins[base], &pages.maxs[base], D);
        for (int32_t j = p * P; j < std::min(n, (p + 1) * P); ++j) {
          float dot = 0;
          for (int32_t d = 0; d < D; ++d) dot += q[d] * keys.row(j, g)[d];
          REQUIRE(dot <= u);
        }
      }
  }
}

TEST_CASE("one dominant key: oracle, Quest, ClusterKV and the indexer pick it first; oracle recall is 1") {
  const int32_t n = 300, kv = 1, D = 8, star = 137;
  std::vector<float> rows = random_keys(n, kv, D, 3);
  for (float& x : rows) x *= 0.05f;  // every other key small
  std::vector<float> q = {1, -1, 0.5f, 0, 0, 2, -0.5f, 1};
  for (int32_t d = 0; d < D; ++d) rows[static_cast<size_t>(star) * D + d] = 3.0f * q[d];
  LayerKeys keys(rows, n, kv, D);
  std::vector<float> q2(q);
  q2.insert(q2.end(), q.begin(), q.end());  // 2 query heads, both = q (GQA 2:1)
  const Query query2{q2.data(), 2, 0.125f, n};

  const auto score = true_scores(keys, query2);
  double total = 0;
  for (double s : score) total += s;
  CHECK(total == doctest::Approx(2.0).epsilon(1e-12));  // Σ_j score = query heads
  const auto oracle = top_k_by_score(score, n, 16);
  REQUIRE(oracle.size() == 16);
  CHECK(oracle[0] == star);
  CHECK(selected_mass(score, oracle) / selected_mass(score, oracle) == 1.0);
  std::vector<int32_t> reversed(oracle.rbegin(), oracle.rend());
  CHECK(selected_mass(score, reversed) == selected_mass(score, oracle));  // order-independent, bit for bit

  const QuestPages pages = build_quest_pages(keys, 16);
  const auto quest = quest_select(pages, keys, query2, 20);
  REQUIRE(quest.size() == 20);
  CHECK(quest[0] == 128);  // the page of 137 (positions 128..143) comes first, its positions ascending
  CHECK(std::find(quest.begin(), quest.begin() + 16, star) != quest.begin() + 16);

  const ClusterIndex ci = build_cluster_index(keys, n, 8, 20, 5);
  const auto ckv = clusterkv_select(ci, keys, query2, 4);
  // 137 is far from every other key: k-means++ gives it its own cluster, the best one.
  CHECK(ckv[0] == star);

  const IndexerStandIn ix = build_indexer(keys, n, 4, 1);
  const auto idx = top_k_by_score(indexer_scores(ix, keys, query2), n, 4);
  CHECK(idx[0] == star);
}

TEST_CASE("sink + recent picks exactly the sinks and the newest K - S positions") {
  CHECK(sink_recent_select(100, 10, 4) == std::vector<int32_t>{0, 1, 2, 3, 94, 95, 96, 97, 98, 99});
  CHECK(sink_recent_select(100, 3, 0) == std::vector<int32_t>{97, 98, 99});
  CHECK(sink_recent_select(8, 10, 4) == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(sink_recent_select(50, 4, 9) == std::vector<int32_t>{0, 1, 2, 3});  // sinks clamped to K
}

TEST_CASE("k-means recovers well-separated clusters, deterministically; ClusterKV serves the best cluster first") {
  const int32_t per = 30, C = 3, D = 4, n = per * C;
  const float centre[C][D] = {{10, 0, 0, 0}, {0, 10, 0, 0}, {0, 0, -10, 10}};
  std::mt19937 rng(17);
  std::vector<float> rows(static_cast<size_t>(n) * D);
  std::vector<int32_t> truth(static_cast<size_t>(n));
  for (int32_t j = 0; j < n; ++j) {
    const int32_t c = (j * 7) % C;  // interleaved, so a cluster is not a run of positions
    truth[j] = c;
    for (int32_t d = 0; d < D; ++d)
      rows[static_cast<size_t>(j) * D + d] = centre[c][d] + static_cast<float>(static_cast<int32_t>(rng() % 201) - 100) / 200.0f;
  }
  const KMeansResult a = kmeans(rows.data(), n, D, C, 50, 42);
  const KMeansResult b = kmeans(rows.data(), n, D, C, 50, 42);
  CHECK(a.assign == b.assign);
  CHECK(a.centroids == b.centroids);
  // Same partition as the truth, up to the labels.
  std::set<std::pair<int32_t, int32_t>> pairs;
  for (int32_t j = 0; j < n; ++j) pairs.insert({truth[j], a.assign[j]});
  CHECK(pairs.size() == static_cast<size_t>(C));
  for (int32_t c = 0; c < C; ++c) {
    double err = 0;
    const int32_t label = a.assign[c];  // position c has truth (c * 7) % 3
    for (int32_t d = 0; d < D; ++d) err += std::fabs(a.centroids[static_cast<size_t>(label) * D + d] - centre[truth[c]][d]);
    CHECK(err < 1.0);
  }

  LayerKeys keys(rows, n, 1, D);
  const ClusterIndex ci = build_cluster_index(keys, n, C, 50, 42);
  std::vector<float> q = {0, 1, 0, 0};  // towards cluster 1
  const Query query{q.data(), 1, 1.0f, n};
  const auto sel = clusterkv_select(ci, keys, query, per + 5);
  REQUIRE(sel.size() == static_cast<size_t>(per + 5));
  for (int32_t i = 0; i < per; ++i) CHECK(truth[sel[i]] == 1);
  for (int32_t i = 1; i < per; ++i) CHECK(sel[i - 1] < sel[i]);  // ties inside a cluster: lower position first
}

TEST_CASE("the indexer stand-in keeps the highest-energy key dimensions") {
  const int32_t n = 50, D = 6;
  std::vector<float> rows(static_cast<size_t>(n) * D, 0.01f);
  for (int32_t j = 0; j < n; ++j) rows[static_cast<size_t>(j) * D + 4] = 2.0f, rows[static_cast<size_t>(j) * D + 1] = -1.0f;
  LayerKeys keys(rows, n, 1, D);
  const IndexerStandIn ix = build_indexer(keys, n, 2, 1);
  CHECK(ix.dims.at(0) == std::vector<int32_t>{1, 4});
  CHECK_THROWS_WITH_AS(build_indexer(keys, n, 7, 1), doctest::Contains("--indexer-dims 7"), Error);
}

TEST_CASE("the study on the fixture: every selector, oracle recall 1, lists valid, same result for any thread count") {
  const KqData d = load_kq(kData + "/kq_stored.npz");
  StudyOptions o;
  o.selectors = selector_names();
  o.top_ks = {4, 8};
  o.buffer_multiples = {1, 2};
  o.clusters = 4;
  o.page_size = 4;
  o.sinks = 2;
  o.indexer_dims = 2;
  o.ds_channels = 2;
  o.threads = 1;
  const StudyResult r = run_study(d, o);
  CHECK(r.row_bytes == 2 * 1 * 4 * 2);
  REQUIRE(r.rows.size() == selector_names().size() * 2 * 3);
  for (const StudyRow& row : r.rows) {
    INFO(row.selector << " K " << row.top_k << " layer " << row.layer);
    CHECK(row.step_layers == (row.layer < 0 ? 12 : 6));
    CHECK(row.recall <= 1.0 + 1e-12);
    CHECK(row.mass_share <= 1.0 + 1e-12);
    if (row.selector == "oracle") CHECK(row.recall == 1.0);
    REQUIRE(row.buffers.size() == 2);
    CHECK(row.buffers[0].buffer_size == row.top_k);
    CHECK(row.buffers[1].misses <= row.buffers[0].misses);
    CHECK(row.buffers[0].h2d_bytes == row.buffers[0].misses * r.row_bytes);
  }
  for (const auto& [key, recs] : r.traces) {
    REQUIRE(recs.size() == 6);
    for (const auto& rec : recs)
      for (int32_t p : rec.positions) CHECK((p >= -1 && p < rec.seq_len));
  }
  // sink-recent at K 4, S 2: {0, 1, n-2, n-1}; between steps n grows by one, so 2 of 4 stay.
  const auto& sr = r.traces.at({"sink-recent", 4});
  CHECK(std::vector<int32_t>(sr[0].positions.begin(), sr[0].positions.begin() + 4) == std::vector<int32_t>{0, 1, 33, 34});
  for (const StudyRow& row : r.rows)
    if (row.selector == "sink-recent" && row.top_k == 4) CHECK(row.overlap == doctest::Approx(0.75));

  o.threads = 3;
  const StudyResult r3 = run_study(d, o);
  CHECK(study_json(r3) == study_json(r));
  CHECK(study_csv(r3) == study_csv(r));
}

}  // namespace
}  // namespace hisparse::sim::select

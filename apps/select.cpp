// @brief `hisparse select`: the selection study (docs/selection.md). From recorded keys and decode queries, the top-k
// lists of oracle, indexer stand-in, Quest, ClusterKV and sink + recent, in tokens or pages, shared or per KV head;
// their recall of the oracle's attention mass, adjacent-step overlap, and sglang-lru misses / PCIe bytes per buffer
// size; table, select.json, select.csv, select.md, a PNG, and optionally each row's lists as a native trace.
#include <filesystem>
#include <string>
#include <thread>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "apps/command_line.h"
#include "apps/command.h"
#include "apps/list_args.h"
#include "sim/report/plot_script.h"
#include "core/error.h"
#include "core/io/output_file.h"
#include "core/progress.h"
#include "sim/select/select_study.h"
#include "traces/page_trace_source.h"
#include "traces/trace_writer.h"

namespace hisparse::apps {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

std::vector<int32_t> parse_page_sizes(const std::string& pages_text) {
  std::vector<int32_t> page_sizes;
  for (const std::string& p : split_list(pages_text)) {
    int64_t v = 0;
    try {
      size_t used = 0;
      v = std::stoll(p, &used);
      if (used != p.size()) throw std::invalid_argument(p);
    } catch (const std::exception&) {
      throw_error("select: --page-size '{}' is not a whole number of tokens", p);
    }
    traces::check_page_size(v, "select: --page-size");
    page_sizes.push_back(static_cast<int32_t>(v));
  }
  return page_sizes;
}

void check_select_counts(const sim::select::StudyOptions& opt, int64_t seed) {
  if (seed < 0) throw_error("select: --seed {} must be >= 0", seed);
  if (opt.row_bytes < 0) throw_error("select: --row-bytes {} must be >= 0", opt.row_bytes);
  if (opt.sinks < 0) throw_error("select: --sinks {} must be >= 0", opt.sinks);
  if (opt.clusters < 1) throw_error("select: --clusters {} must be >= 1", opt.clusters);
  if (opt.kmeans_iters < 1) throw_error("select: --kmeans-iters {} must be >= 1", opt.kmeans_iters);
  if (opt.max_steps < 0) throw_error("select: --steps {} must be >= 0", opt.max_steps);
}

void write_select_traces(const sim::select::StudyResult& r, const std::string& traces_dir) {
  create_output_directory(traces_dir, "--write-traces");
  for (const auto& [key, recs] : r.traces) {
    const std::string path = (fs::path(traces_dir) / key.file_name()).string();
    auto w = traces::make_native_writer(path, r.trace_meta(key.top_k, key.per_kv_head));
    for (const auto& rec : recs) w->write(rec);
    w->finish();
  }
  fmt::print("wrote {} traces to {}\n", r.traces.size(), traces_dir);
}

}  // namespace

int run_select(int argc, char** argv) {
  std::string kq_path, selectors_text, ks_text, mult_text, out_dir, traces_dir, initial_text, gran_text, pages_text;
  sim::select::StudyOptions opt;
  int64_t seed = 1;
  po::options_description desc(
      "hisparse select --kq KQ.npz [options]\n"
      "Top-k lists by several selectors from recorded keys and queries, side by side: recall of the oracle's attention\n"
      "mass, adjacent-step overlap, and the sglang-lru swap-in misses and H2D bytes at H = m*K, at token and/or page\n"
      "granularity, shared by the KV heads and/or per KV head (docs/selection.md)");
  desc.add_options()("help,h", "show this help")(
      "kq", po::value(&kq_path)->required(),
      ".npz (numpy savez / savez_compressed) or directory of .npy files: keys [layers, N, kv_heads, D], queries "
      "[steps, layers, q_heads, D], seq_lens [steps], scaling, optional layers (traces/real/README.md)")(
      "selectors", po::value(&selectors_text)->default_value("oracle,indexer,quest,clusterkv,double-sparse,sink-recent"),
      "which selectors, in report order")(
      "top-k", po::value(&ks_text)->default_value("128,256"), "K values (the recorded SmolLM2 traces use 128 and 256)")(
      "buffer-multiples", po::value(&mult_text)->default_value("1,2,4"), "replay at H = m*K for each m")(
      "granularity", po::value(&gran_text)->default_value("token"),
      "token | page | token,page: token lists replayed in tokens, and/or every selector choosing K/P pages of P tokens "
      "replayed in pages (K a multiple of P)")(
      "page-size", po::value(&pages_text)->default_value("16"),
      "page sizes P in tokens, comma-separated: each one a page-granularity study; the first is also Quest's page at "
      "token granularity")(
      "per-kv-head", "also select per (layer, KV head) from that head's query heads only, each with its own buffer "
      "(rows next to the shared ones)")(
      "sinks", po::value(&opt.sinks)->default_value(4), "sink-recent: initial tokens kept")(
      "clusters", po::value(&opt.clusters)->default_value(256), "ClusterKV: k-means centroids per KV head (prefill keys)")(
      "kmeans-iters", po::value(&opt.kmeans_iters)->default_value(20), "ClusterKV: Lloyd iterations at most")(
      "seed", po::value(&seed)->default_value(1), "ClusterKV: k-means++ seed")(
      "indexer-dims", po::value(&opt.indexer_dims)->default_value(16),
      "indexer stand-in: key dimensions kept per KV head (highest prefill energy)")(
      "indexer-heads", po::value(&opt.indexer_heads_per_group)->default_value(1),
      "indexer stand-in: query heads used per GQA group")(
      "ds-channels", po::value(&opt.ds_channels)->default_value(16),
      "double-sparse: heavy channels per KV head in the label cache (largest mean |k| over the prompt; SGLang "
      "--ds-heavy-channel-num)")(
      "row-bytes", po::value(&opt.row_bytes)->default_value(0),
      "bytes moved per missed row and layer; 0: K and V in fp16 from the data's shape (2 * kv_heads * D * 2)")(
      "steps", po::value(&opt.max_steps)->default_value(0), "use the first N steps only (0: all)")(
      "initial-state", po::value(&initial_text)->default_value("identity"),
      "buffer state before the first step: identity | empty (docs/swap_in.md)")(
      "threads", po::value(&opt.threads), "worker threads (default: hardware threads); output is identical for any")(
      "out", po::value(&out_dir), "write select.json, select.csv and select.png into this directory")(
      "no-plots", "with --out: skip the PNG")(
      "write-traces", po::value(&traces_dir),
      "write each row's lists as <dir>/<selector>_k<K>[_p<P>][_kvh].hstr (native token traces for hisparse replay; "
      "page rows: replay with --page-size P; per-KV-head: layers x kv_heads lists)");
  po::variables_map vm;
  if (!parse_flags(parse_args(argc, argv, desc), desc, vm)) return 0;
  opt.selectors = split_list(selectors_text);
  opt.token_granularity = false;
  bool page_granularity = false;
  for (const std::string& g : split_list(gran_text)) {
    if (g == "token") opt.token_granularity = true;
    else if (g == "page") page_granularity = true;
    else throw_error("select: --granularity '{}' unknown (expected token, page or token,page)", g);
  }
  if (!opt.token_granularity && !page_granularity)
    throw_error("select: --granularity '{}' names no granularity (expected token, page or token,page)", gran_text);
  const std::vector<int32_t> page_sizes = parse_page_sizes(pages_text);
  if (page_sizes.empty()) throw_error("select: --page-size '{}' names no page size", pages_text);
  opt.page_size = page_sizes.front();
  if (page_granularity) opt.page_sizes = page_sizes;
  opt.per_kv_head = vm.count("per-kv-head") > 0;
  for (int64_t k : parse_count_list(ks_text, "select", "--top-k", 1, int64_t{1} << 20, "128,256"))
    opt.top_ks.push_back(static_cast<int32_t>(k));
  for (int64_t m : parse_count_list(mult_text, "select", "--buffer-multiples", 1, 1024, "1,2,4"))
    opt.buffer_multiples.push_back(static_cast<int32_t>(m));
  check_select_counts(opt, seed);
  opt.seed = static_cast<uint64_t>(seed);
  opt.initial_state = traces::parse_initial_state(initial_text, "--initial-state");
  if (!vm.count("threads")) opt.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  const sim::select::KqData data = sim::select::load_kq(kq_path);
  fmt::print("select: {}: {} layers (model layers", kq_path, data.layers);
  for (int32_t l : data.layer_ids) fmt::print(" {}", l);
  fmt::print("), {} steps, n {}..{}, {} query heads / {} KV heads x {}, scaling {}\n", data.steps, data.seq_lens.front(),
             data.seq_lens.back(), data.q_heads, data.kv_heads, data.head_dim, data.scaling);
  ProgressReporter progress("select", data.layers, progress_wanted_by_default(), "layers");
  const sim::select::StudyResult r =
      sim::select::run_study(data, opt, [&](int64_t done) { progress.update(static_cast<double>(done)); });
  progress.finish();
  fmt::print("{}", sim::select::study_table(r));
  fmt::print("\nrecall = mass(selected) / mass(oracle top-K) of the true score Σ_h softmax; mass = share of all attention; "
             "{} steps x {} layers in {:.1f} s\n",
             r.steps, r.layer_ids.size(), r.seconds);

  if (!traces_dir.empty()) write_select_traces(r, traces_dir);
  if (!out_dir.empty()) {
    create_output_directory(out_dir);
    write_file_atomically((fs::path(out_dir) / "select.json").string(), sim::select::study_json(r));
    write_file_atomically((fs::path(out_dir) / "select.csv").string(), sim::select::study_csv(r));
    write_file_atomically((fs::path(out_dir) / "select.md").string(), sim::select::study_markdown(r));
    const fs::path png = fs::path(out_dir) / "select.png";
    if (vm.count("no-plots")) {
      fs::remove(png);
    } else {
      sim::run_plot_script("plot_select.py", out_dir, "select");
    }
    fmt::print("wrote {}/select.json, select.csv, select.md{}\n", out_dir, vm.count("no-plots") ? "" : ", select.png");
  }
  return 0;
}

}  // namespace hisparse::apps

// @brief The replay request (sim/api/replay_request.h) gives what run_replay gives when called by hand on the same
// trace, sets pages up as the CLI documents (bytes = page misses × P × row bytes), names the flag in every error, and
// runs the CUDA backend only through the caller's hook; the advice after it (sim/api/replay_advice.h, the second call)
// checks a scenario against the trace, sets the row bytes and completes replay.json.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "core/error.h"
#include "core/memory_budget.h"
#include "core/scenario_loader.h"
#include "sim/api/replay_advice.h"
#include "sim/api/replay_request.h"
#include "sim/replay/replay_report.h"
#include "traces/page_trace_source.h"
#include "traces/trace_generator.h"
#include "traces/trace_writer.h"

using namespace hisparse;
using namespace hisparse::sim;

namespace {

constexpr const char* kDsv32 = "dsv32-8xh200-1tb";

/// The trace files written by this process, removed at exit.
struct TempTraces {
  std::vector<std::filesystem::path> paths;
  ~TempTraces() {
    std::error_code ec;
    for (const auto& p : paths) std::filesystem::remove(p, ec);
  }
} temp_traces;

/// A small synthetic trace written as a native file (one per top_k and length, per process), so the request opens a
/// path as the CLI does.
std::string trace_file(int32_t top_k, int32_t prompt_len = 0) {
  if (prompt_len == 0) prompt_len = 4 * top_k;
  const auto path = std::filesystem::temp_directory_path() /
                    ("hisparse_replay_request_" + std::to_string(::getpid()) + "_k" + std::to_string(top_k) + "_n" +
                     std::to_string(prompt_len) + ".hstrace");
  if (std::filesystem::exists(path)) return path.string();
  traces::GeneratorOptions g;
  g.requests = 2;
  g.steps = 24;
  g.layers = 3;
  g.top_k = top_k;
  g.prompt_len = prompt_len;
  g.seed = 7;
  auto src = traces::make_generated_trace(g);
  auto out = traces::make_native_writer(path.string(), src->meta());
  traces::copy_trace(*src, *out);
  temp_traces.paths.push_back(path);
  return path.string();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

ReplayRequest small_request(int32_t top_k = 256) {
  ReplayRequest r;
  r.trace = trace_file(top_k);
  r.buffer_sizes = {2 * top_k, top_k};
  r.policies = {"sglang-lru", "belady"};
  r.threads = 2;
  return r;
}

}  // namespace

TEST_CASE("ReplayRequest: replay.json and replay.csv are those of run_replay called by hand on the same trace") {
  const ReplayRequest r = small_request();
  const ReplayOutcome got = run_replay_request(r);
  auto src = traces::open_trace(r.trace, {});
  ReplayOptions o;
  o.policies = r.policies;
  o.buffer_sizes = {256, 512};  // ascending, as the request replays them
  o.row_bytes = 1152;
  o.threads = 2;
  const ReplayResult expected = run_replay(*src, o);
  MESSAGE("same counts, same files; no scenario, so the recommendation says why there is none and no step time");
  REQUIRE(got.result.configs.size() == 4);
  CHECK(got.result.configs[0].buffer_size == 256);
  REQUIRE(got.result.configs[0].misses > 0);  // H = K: every newly selected token is a miss
  CHECK(got.row_bytes == 1152);
  CHECK(got.json == replay_json(expected, 1152, no_deployment_recommendation_json()));
  CHECK(got.csv == replay_csv(expected));
  CHECK(got.step_time_json.empty());
  CHECK(got.page_note.empty());
  MESSAGE("the replay's text ends with its table and notes; the caller says why nothing is recommended");
  CHECK(got.text.find("no recommendation") == std::string::npos);
  CHECK(no_recommendation_text(got.result.meta.source)
            .find("no recommendation: choosing device_buffer_size needs a deployment") != std::string::npos);
}

TEST_CASE("ReplayRequest: print hears the whole text, rows every kept row, checked runs first") {
  ReplayRequest r = small_request();
  r.keep_step_rows = true;
  std::string heard;
  int64_t rows = 0;
  ReplayHooks h;
  h.print = [&](const std::string& s) { heard += s; };
  int checked = 0;
  bool checked_first = false;
  h.checked = [&] {
    ++checked;
    checked_first = heard.empty() && rows == 0;
  };
  h.rows = [&](const ReplayRequestRows& q) {
    for (const auto& config : q.rows)
      for (const auto& layer : config) rows += static_cast<int64_t>(layer.size());
  };
  const ReplayOutcome got = run_replay_request(r, h);
  MESSAGE("2 requests x 24 steps x 3 layers x 4 configurations = 576 rows; printed text = outcome.text");
  CHECK(heard == got.text);
  CHECK(rows == 2 * 24 * 3 * 4);
  MESSAGE("the checked hook runs once, before any row or table");
  CHECK(checked == 1);
  CHECK(checked_first);
  r.lookahead_mb = 0;
  MESSAGE("a refused request never reaches it");
  CHECK_THROWS(run_replay_request(r, h));
  CHECK(checked == 1);
}

TEST_CASE("ReplayRequest: pages: sizes in tokens become pages, and a miss moves P x row bytes everywhere") {
  ReplayRequest r = small_request();
  r.trace = trace_file(256, 16384);  // 1024 pages of context: a 256-token list touches pages far apart
  r.page_size = 16;
  traces::PageTraceSource paged(traces::open_trace(r.trace, {}), 16);
  // The smallest buffer allowed, the widest page list, so that pages are evicted and moved.
  const int32_t width = paged.meta().top_k;
  r.buffer_sizes = {width * 16};
  r.policies = {"sglang-lru"};
  const ReplayOutcome got = run_replay_request(r);
  ReplayOptions o;
  o.policies = r.policies;
  o.buffer_sizes = {width};
  o.row_bytes = 1152 * 16;
  o.threads = 2;
  const ReplayResult expected = run_replay(paged, o);
  MESSAGE("H = " << width * 16 << " tokens = " << width
                 << " pages, some missed; row bytes 1152 x 16; the totals use the page bytes as the table does");
  REQUIRE(got.result.configs.size() == 1);
  REQUIRE(got.result.configs[0].misses > 0);
  CHECK(got.row_bytes == 1152 * 16);
  CHECK(got.result.configs[0].buffer_size == width);
  CHECK(got.result.configs[0].h2d_bytes == got.result.configs[0].misses * 1152 * 16);
  CHECK(got.json == replay_json(expected, 1152 * 16, no_deployment_recommendation_json()));
  CHECK(got.page_note.rfind("page replay: pages of 16 tokens", 0) == 0);
  CHECK(got.page_note.find(std::to_string(width * 16) + " tokens = " + std::to_string(width) + " pages") !=
        std::string::npos);
  CHECK(got.text.rfind(got.page_note, 0) == 0);
}

TEST_CASE("ReplayRequest: page set-up errors name the flag and the value") {
  ReplayRequest r = small_request();
  r.page_size = 16;
  r.buffer_sizes = {4100};
  MESSAGE("4100 tokens is no multiple of 16");
  CHECK(error_of([&] { run_replay_request(r); })
            .rfind("replay: --buffer-sizes 4100 with --page-size 16: expected", 0) == 0);
  r.buffer_sizes = {16};
  MESSAGE("one page cannot hold the widest layer list (at least 16 pages of a 256-wide list over 1024+ tokens)");
  CHECK(error_of([&] { run_replay_request(r); }).rfind("replay: --buffer-sizes 16 with --page-size 16: expected", 0) ==
        0);
  MESSAGE("pages with a scenario are refused by the advice's plan: the advisor prices token rows");
  r = small_request(2048);
  r.page_size = 64;
  AdviseRequest a;
  a.setup.scenario = kDsv32;
  CHECK(error_of([&] { plan_replay_advice(r, a); }).rfind("replay: --page-size 64 with --scenario", 0) == 0);
}

TEST_CASE("ReplayRequest: option errors keep the CLI's wording") {
  ReplayRequest r = small_request();
  r.backend = "tpu";
  MESSAGE("an unknown backend, a look-ahead of 0 MiB and a top_k of 0 are each refused by name");
  CHECK(error_of([&] { run_replay_request(r); }) == "replay: --backend 'tpu' unknown (expected cpu or cuda)");
  r.backend = "cpu";
  r.lookahead_mb = 0;
  CHECK(error_of([&] { run_replay_request(r); }) == "replay: --lookahead-mb 0 must be in 1..2^30");
  r.lookahead_mb = 1024;
  r.top_k = 0;
  CHECK(error_of([&] { run_replay_request(r); }) == "replay: --top-k 0 must be >= 1");
}

TEST_CASE("ReplayRequest: backend cuda runs only through the caller's hook") {
  ReplayRequest r = small_request();
  r.backend = "cuda";
  MESSAGE("without ReplayHooks::cuda the error says why (the kernels are in another target)");
  CHECK(error_of([&] { run_replay_request(r); }).rfind("replay: --backend cuda: this caller has no CUDA replay", 0) ==
        0);
  int calls = 0;
  bool had_opener = false;
  ReplayHooks h;
  h.cuda = [&](traces::TraceSource& source, const ReplayOptions& o, const ReplayRowSink& sink,
               const TraceOpener& open) {
    ++calls;
    had_opener = static_cast<bool>(open) && open()->meta().top_k == 256;
    return run_replay(source, o, sink);
  };
  const ReplayOutcome got = run_replay_request(r, h);
  r.backend = "cpu";
  MESSAGE("with a hook it is called once, with a cursor opener on the same trace, and its result is reported");
  CHECK(calls == 1);
  CHECK(had_opener);
  CHECK(got.json == run_replay_request(r).json);
}

/// The CLI's two calls with a scenario: the advice's plan (checks, row bytes), the replay, the advice on its outcome.
ReplayOutcome replay_and_advise(ReplayRequest r, const AdviseRequest& a) {
  r.row_bytes = plan_replay_advice(r, a).row_bytes;
  ReplayOutcome out = run_replay_request(r);
  advise_replay(r, out, a);
  return out;
}

TEST_CASE("replay advice: a scenario is checked against the trace and sets the row bytes") {
  ReplayRequest r = small_request(1024);
  AdviseRequest a;
  a.setup.scenario = "gptoss-120b-1xh200";
  MESSAGE("a GQA model has no sparse indexer: nothing to advise");
  CHECK(error_of([&] { plan_replay_advice(r, a); }).rfind("replay: --scenario gptoss-120b-1xh200: model ", 0) == 0);
  CHECK(error_of([&] { plan_replay_advice(r, a); }).find("has no sparse indexer (gqa+swa attention)") != std::string::npos);
  a.setup.scenario = kDsv32;
  MESSAGE("a trace of top_k 1024 does not describe a top_k 2048 deployment unless it is rescaled");
  CHECK(error_of([&] { plan_replay_advice(r, a); })
            .rfind("replay: trace " + r.trace + " has top_k 1024 but scenario " + kDsv32 + " runs top_k 2048", 0) == 0);
  a.misses.rescale_trace_top_k = true;
  r.buffer_sizes = {1024, 2048};
  a.seq_lens = {8192};
  const ReplayOutcome replayed = run_replay_request(r);
  const ReplayOutcome got = replay_and_advise(r, a);
  const Scenario s = load_scenario(kDsv32);
  MESSAGE("rescaled: advised; rows are the model's latent rows in the deployment's kv_dtype; step time modelled");
  CHECK(got.row_bytes == latent_row_bytes(s.model, s.deployment.kv_dtype));
  CHECK(got.step_time_json.size() > 2);
  CHECK(got.recommendation_json.rfind("{\"", 0) == 0);
  CHECK(got.recommendation_json != no_deployment_recommendation_json());
  CHECK(got.text.find("advice for " + s.deployment.name) != std::string::npos);
  CHECK(got.json.find("\"step_time\"") != std::string::npos);
  MESSAGE("the replay alone recommends nothing and models no step time (the advice is the second call)");
  CHECK(replayed.recommendation_json == no_deployment_recommendation_json());
  CHECK(replayed.json.find("\"step_time\"") == std::string::npos);
  CHECK(replayed.text.find("advice for") == std::string::npos);
  MESSAGE("the advice's --kv-dtype override is the deployment the rows must describe: fp8 latent rows, not the "
          "YAML's bf16 ones (the same override the advice prices)");
  a.setup.overrides.kv_dtype = "fp8";
  const int64_t fp8_rows = plan_replay_advice(r, a).row_bytes;
  CHECK(fp8_rows == latent_row_bytes(s.model, KvDtype::kFp8));
  CHECK(fp8_rows != got.row_bytes);
  a.setup.overrides.kv_dtype.reset();
  r.row_bytes = 1000;
  r.row_bytes_given = true;
  MESSAGE("a given row size is kept");
  CHECK(plan_replay_advice(r, a).row_bytes == 1000);
}

TEST_CASE("ReplayRequest: a trace handed in as a source replays as the file; the advice needs the file") {
  const ReplayRequest r = small_request();
  ReplayHooks h;
  const std::string path = r.trace;
  h.open_trace = [path] { return traces::open_trace(path, {}); };
  ReplayRequest labelled = r;
  labelled.trace = "a label";
  MESSAGE("same trace through the hook: the same replay.json");
  CHECK(run_replay_request(labelled, h).json == run_replay_request(r).json);
  MESSAGE("the advice reads the trace file again: a label that is no file is refused, naming it");
  AdviseRequest a;
  a.setup.scenario = kDsv32;
  CHECK(error_of([&] { plan_replay_advice(labelled, a); }).find("a label") != std::string::npos);
}

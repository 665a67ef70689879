// @brief The replay request's checks, set-up and run (see replay_request.h).
#include "sim/api/replay_request.h"

#include <algorithm>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "core/family/family_registry.h"
#include "core/io/output_file.h"
#include "cpu_ref/policies/registry.h"
#include "sim/replay/replay_report.h"
#include "sim/replay/replay_v2_session.h"
#include "traces/page_trace_source.h"
#include "traces/shared_topk_source.h"

namespace hisparse::sim {

namespace {

/// One line per hisparse-v2 policy: the SGLang coordinator whose admission rules it replays (docs/swap_in.md).
std::string v2_coordinator_note(const ReplayOptions& opt) {
  std::string out;
  for (const auto& p : opt.policies) {
    const std::string spec = cpu_ref::with_v2_coordinator(p, opt.v2_coordinator);
    const size_t colon = spec.find(':');
    if (spec.substr(0, colon) != "hisparse-v2") continue;
    const cpu_ref::HisparseV2Spec v2 = cpu_ref::parse_hisparse_v2_arg(spec.substr(colon + 1));
    const bool current = v2.rules == V2Coordinator::kCurrent;
    out += fmt::format(
        "{}: admission as SGLang's {} V2 coordinator (hisparse_v2_coordinator.py at {}): {}\n", p,
        cpu_ref::v2_coordinator_name(v2.rules), current ? kV2CurrentCommit : kV2OlderCommit,
        current ? "a request whose evicted prefix is shorter than the buffer H runs as standard (all resident)"
                : "every request with a whole prompt page has its page-aligned prefix evicted, whatever H");
  }
  return out;
}

/// The V2 session's pools from the request, checked (docs/swap_in.md, "Admission over a trace").
cpu_ref::V2SessionPools v2_session_pools(const ReplayRequest& r) {
  if (r.v2_device_pool_tokens < 1 || r.v2_host_pool_tokens < 0 || r.v2_indexer_pages < -1 || r.v2_node_tokens < 0)
    throw_error("replay: V2 session: --v2-device-pool-tokens {} (expected >= 1), --v2-host-pool-tokens {} (>= 0, 0 "
                "unbounded), --v2-indexer-pages {} (>= 0, or -1 unbounded), --v2-node-tokens {} (>= 0, 0 one node)",
                r.v2_device_pool_tokens, r.v2_host_pool_tokens, r.v2_indexer_pages, r.v2_node_tokens);
  if (r.backend != "cpu" || r.page_size != 0)
    throw_error("replay: the V2 session (--v2-device-pool-tokens) runs on --backend cpu in tokens only (got --backend "
                "{}, --page-size {})", r.backend, r.page_size);
  return {r.v2_device_pool_tokens, r.v2_host_pool_tokens, r.v2_indexer_pages, r.v2_node_tokens};
}

/// Collects the printed text and hands each piece to the caller as it comes.
struct Printer {
  const ReplayHooks& hooks;
  std::string& text;
  void operator()(const std::string& s) const {
    text += s;
    if (hooks.print) hooks.print(s);
  }
};

/// The trace's cursors: `base` the file with its overrides (or the caller's source) and its shared layers; `cursor`
/// any further one, paged as the first (at the first's page width).
struct TraceCursors {
  TraceOpener base;
  int32_t page_size = 0;
  int32_t page_width = 0;
  std::unique_ptr<traces::TraceSource> open() const {
    auto s = base();
    if (page_width > 0) return std::make_unique<traces::PageTraceSource>(std::move(s), page_size, page_width);
    return s;
  }
};

/// The request's own checks (errors say "replay: --flag value ..." as the CLI's) and the base cursor.
TraceOpener checked_base(const ReplayRequest& request, const ReplayHooks& hooks) {
  const traces::TraceOpenOptions open_opts = replay_trace_open_options(request);
  // The trace as a file (with its overrides) or as the caller's own source.
  const TraceOpener open_file = hooks.open_trace
                                    ? hooks.open_trace
                                    : TraceOpener([trace = request.trace, open_opts] {
                                        return traces::open_trace(trace, open_opts);
                                      });
  if (request.shared_topk_group < 1 || request.shared_topk_offset < 1)
    throw_error("replay: --shared-topk-group {} / --shared-topk-offset {}: expected both >= 1",
                request.shared_topk_group, request.shared_topk_offset);
  if (request.threads < 0) throw_error("replay: --threads {} (expected >= 1, or 0 = the hardware threads)", request.threads);
  refuse_output_over_input(request.per_step_csv, "--per-step-csv", request.trace, "--trace");
  if (request.backend != "cpu" && request.backend != "cuda")
    throw_error("replay: --backend '{}' unknown (expected cpu or cuda)", request.backend);
  if (request.backend == "cuda" && !hooks.cuda)
    throw_error("replay: --backend cuda: this caller has no CUDA replay (the swap-in kernels are in target "
                "hisparse_replay_cuda, which the caller links and hands in as ReplayHooks::cuda)");
  if (request.lookahead_mb < 1 || request.lookahead_mb > (int64_t{1} << 30))
    throw_error("replay: --lookahead-mb {} must be in 1..2^30", request.lookahead_mb);
  // Declared shared layers (IndexShare): each takes its anchor's list, in every cursor.
  const int32_t topk_group = request.shared_topk_group, topk_offset = request.shared_topk_offset;
  if (topk_group <= 1) return open_file;
  return [open_file, topk_group, topk_offset] {
    return std::unique_ptr<traces::TraceSource>(
        std::make_unique<traces::SharedTopkTraceSource>(open_file(), topk_group, topk_offset));
  };
}

/// Pages (page_size > 0): the source becomes its pages, the buffer sizes and row bytes are converted, and the note
/// that says so is returned ("" in tokens).
std::string apply_pages(const ReplayRequest& request, std::unique_ptr<traces::TraceSource>& source,
                        TraceCursors& cursors, ReplayOptions& opt) {
  const int32_t page_size = request.page_size;
  if (page_size == 0) return "";
  traces::check_page_size(page_size, "replay: --page-size");
  source = std::make_unique<traces::PageTraceSource>(std::move(source), page_size);
  const int32_t page_width = source->meta().top_k;
  std::string map;
  for (int32_t& h : opt.buffer_sizes) {
    if (h % page_size != 0 || h / page_size < page_width)
      throw_error("replay: --buffer-sizes {} with --page-size {}: expected a multiple of {} tokens holding at least "
                  "the {} pages the widest layer list of {} touches (>= {} tokens)",
                  h, page_size, page_size, page_width, request.trace, int64_t{page_width} * page_size);
    map += fmt::format("{}{} tokens = {} pages", map.empty() ? "" : ", ", h, h / page_size);
    h /= page_size;
  }
  if (opt.row_bytes > (int64_t{1} << 40) / page_size)
    throw_error("replay: --row-bytes {} x --page-size {} overflows the byte counters", opt.row_bytes, page_size);
  opt.row_bytes *= page_size;
  cursors.page_size = page_size;
  cursors.page_width = page_width;
  return fmt::format(
      "page replay: pages of {} tokens; the table's top_k and buffer sizes are in PAGES: top_k {} pages (the "
      "widest layer list), H {}; a miss moves one page = {} B\n",
      page_size, page_width, map, opt.row_bytes);
}

/// The replay's options from the request (buffer sizes ascending, in tokens until apply_pages).
ReplayOptions replay_options(const ReplayRequest& request, const ReplayHooks& hooks) {
  ReplayOptions opt;
  opt.lookahead_bytes = static_cast<size_t>(request.lookahead_mb) << 20;
  opt.policies = request.policies;
  opt.v2_coordinator = cpu_ref::parse_v2_coordinator(request.v2_coordinator, "replay: --v2-coordinator");
  if (request.v2_device_pool_tokens != 0) opt.v2_pools = v2_session_pools(request);
  opt.buffer_sizes = request.buffer_sizes;
  std::sort(opt.buffer_sizes.begin(), opt.buffer_sizes.end());
  opt.threads =
      request.threads > 0 ? request.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  opt.keep_step_rows = request.keep_step_rows || !request.per_step_csv.empty();
  opt.row_bytes = request.row_bytes;
  opt.progress = hooks.progress;
  return opt;
}

}  // namespace

traces::TraceOpenOptions replay_trace_open_options(const ReplayRequest& request) {
  traces::TraceOpenOptions open_opts;
  if (!request.initial_state.empty())
    open_opts.initial_state = traces::parse_initial_state(request.initial_state, "--initial-state");
  if (request.top_k) {
    if (*request.top_k < 1) throw_error("replay: --top-k {} must be >= 1", *request.top_k);
    open_opts.top_k = *request.top_k;
  }
  return open_opts;
}

std::string no_recommendation_text(const std::string& trace) {
  return fmt::format("\nno recommendation: choosing device_buffer_size needs a deployment (HBM per request, PCIe "
                     "shared by the batch, the TPOT SLO); pass --scenario S, or run `hisparse advise --scenario S "
                     "--trace {}`\n",
                     trace);
}

ReplayOutcome run_replay_request(const ReplayRequest& request, const ReplayHooks& hooks) {
  ReplayOutcome out;
  const Printer print{hooks, out.text};
  TraceCursors cursors;
  cursors.base = checked_base(request, hooks);
  std::unique_ptr<traces::TraceSource> source = cursors.base();
  ReplayOptions opt = replay_options(request, hooks);
  out.page_note = apply_pages(request, source, cursors, opt);
  print(out.page_note);
  const TraceOpener open_cursor = [cursors] { return cursors.open(); };
  opt.open_trace = open_cursor;  // the CPU driver's lanes, when there are more threads than layers
  if (opt.v2_pools) opt = with_v2_schedules(opt, source->meta());  // the V2 session, before anything is replayed

  if (hooks.checked) hooks.checked();
  std::unique_ptr<StepCsvWriter> csv;
  if (!request.per_step_csv.empty()) csv = std::make_unique<StepCsvWriter>(request.per_step_csv);
  std::vector<ReplayConfigStats> config_names;
  for (const auto& p : opt.policies) {
    for (int32_t H : opt.buffer_sizes) {
      ReplayConfigStats s;
      s.policy = p;
      s.buffer_size = H;
      config_names.push_back(s);
    }
  }
  const int64_t row_bytes = opt.row_bytes;
  const ReplayRowSink sink = [&](const ReplayRequestRows& rows) {
    if (hooks.rows) hooks.rows(rows);
    if (csv) csv->write(rows, config_names, row_bytes);
  };
  out.result = request.backend == "cuda" ? hooks.cuda(*source, opt, sink, open_cursor) : run_replay(*source, opt, sink);
  // No decode step, no selection: a hit rate is 0 / 0, not 100 % (issue 40 item 7). Refused before any output is
  // committed, in the CLI (non-zero exit) and in Python (an error) alike.
  if (out.result.decode_steps == 0)
    throw_error("replay: trace {} has no decode step (its requests have 0 steps): the hit rate is undefined "
                "(nothing was selected), not 100 %; expected a trace with at least one step",
                request.trace);
  if (csv) csv->finish();
  out.row_bytes = row_bytes;

  print(format_replay_table(out.result, row_bytes));
  print(v2_coordinator_note(opt));
  print(format_v2_session(opt));
  if (out.result.lookahead_steps > 0) print(format_lookahead(out.result));
  out.recommendation_json = no_deployment_recommendation_json();
  out.json = replay_json(out.result, row_bytes, out.recommendation_json, out.step_time_json);
  out.csv = replay_csv(out.result);
  return out;
}

}  // namespace hisparse::sim

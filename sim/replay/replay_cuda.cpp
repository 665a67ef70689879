// @brief run_replay_cuda (see replay_cuda.h): groups of requests read side by side, one batch row per (request, layer),
// one device state set per buffer size, per-step counters back and reduced like the CPU replay.
#include "sim/replay/replay_cuda.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "cuda/replay_swap_in.h"
#include "traces/trace_limits.h"

namespace hisparse::sim {

namespace {
thread_local double g_kernel_seconds = 0;

const char* error_name(int32_t code) {
  switch (code) {
    case cuda::kSwapInOutOfRange: return "a position out of [0, seq_len) or a negative entry other than -1";
    case cuda::kSwapInDuplicate: return "a position selected twice";
    case cuda::kSwapInNoHostCopy: return "a miss without a host copy";
    case cuda::kSwapInHostRowOutOfPool: return "a host row outside the pool";
    case cuda::kSwapInCorruptState: return "more misses than evictable slots (corrupt state)";
    default: return "an unknown error code";
  }
}
}  // namespace

double last_replay_cuda_kernel_seconds() { return g_kernel_seconds; }

ReplayResult run_replay_cuda(traces::TraceSource& source, const ReplayOptions& options,
                             const std::function<void(const ReplayRequestRows&)>& row_sink,
                             const ReplayCudaOptions& cuda_options) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  g_kernel_seconds = 0;
  const traces::TraceMeta meta = source.meta();
  const int32_t L = meta.layers, K = meta.top_k;
  if (L < 1 || K < 1) throw_error("replay: trace {} declares {} layers and top_k {}", meta.source, L, K);
  if (options.policies.empty()) throw_error("replay: --policy names no policy");
  if (options.buffer_sizes.empty()) throw_error("replay: --buffer-sizes names no buffer size");
  for (const auto& p : options.policies)
    if (p != "sglang-lru")
      throw_error("replay --backend cuda: policy '{}': the swap-in kernels implement sglang-lru (the contract) only; "
                  "replay '{}' with --backend cpu",
                  p, p);
  for (int32_t H : options.buffer_sizes)
    if (H < K || H > traces::kMaxSeqLen)
      throw_error("replay: buffer size {} (--buffer-sizes) must be in top_k {} .. {}", H, K, traces::kMaxSeqLen);

  ReplayResult result;
  result.meta = meta;
  result.threads = 1;
  std::vector<ReplayConfigStats> stats;
  for (const auto& p : options.policies)
    for (int32_t H : options.buffer_sizes) {
      ReplayConfigStats s;
      s.policy = p;
      s.buffer_size = H;
      s.miss_hist.assign(static_cast<size_t>(K) + 1, 0);
      s.step_miss_hist.assign(static_cast<size_t>(L) * K + 1, 0);
      result.configs.push_back(std::move(s));
    }
  const size_t C = result.configs.size();

  const std::vector<int64_t> ids = source.request_ids();
  const int32_t group =
      cuda_options.open_trace
          ? std::max<int32_t>(1, std::min<int32_t>(static_cast<int32_t>(std::min<size_t>(ids.size(), 1 << 20)),
                                                   cuda_options.max_rows / L))
          : 1;
  const int32_t rows = group * L;
  std::vector<std::unique_ptr<cuda::ReplaySwapIn>> gpu;
  for (size_t c = 0; c < C; ++c) {
    gpu.push_back(std::make_unique<cuda::ReplaySwapIn>(rows, result.configs[c].buffer_size, K));
    if (c > 0) gpu[c]->share_input_of(*gpu[0]);
  }
  std::vector<int32_t> selected(static_cast<size_t>(rows) * K, -1), seq_len(static_cast<size_t>(rows), 0);
  std::vector<int64_t> counters(static_cast<size_t>(rows) * cuda::kCounterWords);
  std::vector<int32_t> errors(static_cast<size_t>(rows) * 2);

  for (size_t g0 = 0; g0 < std::max<size_t>(ids.size(), 1); g0 += static_cast<size_t>(group)) {
    const size_t gn = std::min<size_t>(static_cast<size_t>(group), ids.size() - std::min(g0, ids.size()));
    if (gn == 0) break;
    // One cursor per request of the group (the caller's own source for a group of one: it streams in order).
    std::vector<std::unique_ptr<traces::TraceSource>> owned(gn);
    std::vector<traces::TraceSource*> src(gn);
    for (size_t r = 0; r < gn; ++r) {
      if (group == 1) {
        // Groups of one run in trace order on the caller's source; the first record of this request was read (and
        // dropped) when the previous request ended, so go back to its start.
        source.seek_request(ids[g0 + r]);
        src[r] = &source;
      } else {
        owned[r] = cuda_options.open_trace();
        owned[r]->seek_request(ids[g0 + r]);
        src[r] = owned[r].get();
      }
    }
    std::vector<traces::StepRecord> rec(gn), next(gn);
    std::vector<bool> has(gn);
    std::vector<ReplayRequestRows> req_rows(gn);
    std::vector<std::vector<int32_t>> req_seq(gn);
    for (size_t r = 0; r < gn; ++r) {
      has[r] = src[r]->next(next[r]) && next[r].request_id == ids[g0 + r];
      req_rows[r].request_id = ids[g0 + r];
      req_rows[r].rows.assign(C, std::vector<std::vector<ReplayStepRow>>(static_cast<size_t>(L)));
    }
    bool first = true;
    while (std::any_of(has.begin(), has.end(), [](bool b) { return b; })) {
      std::fill(seq_len.begin(), seq_len.end(), 0);  // rows of finished requests are padding
      for (size_t r = 0; r < gn; ++r) {
        if (!has[r]) continue;
        std::swap(rec[r], next[r]);
        const traces::StepRecord& x = rec[r];
        if (x.seq_len < 1 || x.seq_len > traces::kMaxSeqLen || x.positions.size() != static_cast<size_t>(L) * K)
          throw_error("replay: trace {}: request {}, step {}: seq_len {} and {} positions (expected 1..{} and {} x {})",
                      meta.source, x.request_id, x.step, x.seq_len, x.positions.size(), traces::kMaxSeqLen, L, K);
        std::copy(x.positions.begin(), x.positions.end(), selected.begin() + static_cast<std::ptrdiff_t>(r * L * K));
        std::fill(seq_len.begin() + static_cast<std::ptrdiff_t>(r * L),
                  seq_len.begin() + static_cast<std::ptrdiff_t>((r + 1) * L), x.seq_len);
        if (first) {
          for (size_t c = 0; c < C; ++c) {
            // An `empty` request whose first step has n <= H was preloaded whole (SwapInPolicy::step).
            const InitialState st = meta.initial_state == InitialState::kEmpty && x.seq_len > result.configs[c].buffer_size
                                        ? InitialState::kEmpty
                                        : InitialState::kIdentity;
            gpu[c]->init_rows(static_cast<int32_t>(r) * L, L, st);
          }
        }
      }
      first = false;
      gpu[0]->upload(selected.data(), seq_len.data());
      for (size_t c = 0; c < C; ++c) {
        gpu[c]->step();
        gpu[c]->collect(counters.data(), errors.data());
        for (size_t r = 0; r < gn; ++r) {
          if (!has[r]) continue;
          for (int32_t l = 0; l < L; ++l) {
            const size_t b = r * static_cast<size_t>(L) + static_cast<size_t>(l);
            if (errors[b * 2] != 0)
              throw_error("replay --backend cuda: trace {}: request {}, layer {}, step {}: the swap-in kernel rejected "
                          "entry {}: {}",
                          meta.source, rec[r].request_id, l, rec[r].step, errors[b * 2 + 1], error_name(errors[b * 2]));
            const int64_t* k = &counters[b * cuda::kCounterWords];
            req_rows[r].rows[c][static_cast<size_t>(l)].push_back(
                {rec[r].seq_len, static_cast<int32_t>(k[0]), static_cast<int32_t>(k[1]), static_cast<int32_t>(k[2]),
                 static_cast<int32_t>(k[3])});
          }
        }
      }
      for (size_t r = 0; r < gn; ++r) {
        if (!has[r]) continue;
        req_rows[r].steps.push_back(rec[r].step);
        req_seq[r].push_back(rec[r].seq_len);
        has[r] = src[r]->next(next[r]) && next[r].request_id == ids[g0 + r];
      }
    }
    for (size_t r = 0; r < gn; ++r) {
      add_request_rows(result, req_rows[r], req_seq[r], options.row_bytes);
      if (options.keep_step_rows && row_sink) row_sink(req_rows[r]);
    }
    if (options.progress) {
      ReplayProgress p;
      p.requests_done = result.requests;
      p.requests_total = static_cast<int64_t>(ids.size());
      p.steps_done = result.decode_steps;
      p.entries_done = result.entries;
      p.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      options.progress(p);
    }
  }
  for (const auto& g : gpu) g_kernel_seconds += g->kernel_seconds();
  result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return result;
}

}  // namespace hisparse::sim

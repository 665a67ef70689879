// @brief run_replay_cuda (see replay_cuda.h): lanes of requests read side by side by the host threads into pinned
// staging slots, submitted to the GPU without waiting, counters consumed a ring's length later and reduced in trace
// order.
#include "sim/replay/cuda/replay_cuda.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <map>

#include "core/error.h"
#include "cuda/replay_swap_in.h"
#include "sim/replay/replay_cuda_pool.h"
#include "traces/trace_limits.h"

namespace hisparse::sim {

namespace {

using Clock = std::chrono::steady_clock;
thread_local ReplayCudaTiming g_timing;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

/// L consecutive batch rows replaying one request at a time.
struct Lane {
  std::unique_ptr<traces::TraceSource> owned;
  traces::TraceSource* src = nullptr;
  int64_t req = -1;    // index into the trace's request ids; -1: idle
  bool fresh = false;  // assigned for this step: seek, first record, state reset
  bool got = false;    // rec holds this step of req
  traces::StepRecord rec;  // reused: the reader refills its buffer, no allocation per step once warm
};

/// A request's rows, from its first step until it is reduced (in trace order, so possibly after later ones ended).
struct Request {
  ReplayRequestRows rows;
  std::vector<int32_t> seq_lens;
  bool done = false;
  bool empty = false;  // no step record at all: the CPU replay never sees it, so it is not counted
};

/// What was staged in a slot, for reading its counters back.
struct SlotMeta {
  bool submitted = false;
  std::vector<int64_t> req, step;  // per lane; req -1: padding
  std::vector<int32_t> seq_len;
  std::vector<int64_t> finished;   // requests whose last step was staged before this slot's
};

}  // namespace

ReplayCudaTiming last_replay_cuda_timing() { return g_timing; }

ReplayResult run_replay_cuda(traces::TraceSource& source, const ReplayOptions& options,
                             const std::function<void(const ReplayRequestRows&)>& row_sink,
                             const ReplayCudaOptions& cuda_options) {
  const auto t0 = Clock::now();
  g_timing = ReplayCudaTiming{};
  ReplayCudaTiming timing;
  const traces::TraceMeta meta = source.meta();
  const int32_t L = meta.layers, K = meta.top_k;
  if (L < 1 || K < 1) throw_error("replay: trace {} declares {} layers and top_k {}", meta.source, L, K);
  if (options.policies.empty()) throw_error("replay: --policy names no policy");
  if (options.buffer_sizes.empty()) throw_error("replay: --buffer-sizes names no buffer size");
  if (options.threads < 1) throw_error("replay: --threads {} must be >= 1", options.threads);
  if (cuda_options.slots < 1 || cuda_options.slots > 64)
    throw_error("replay --backend cuda: {} staging slots (expected 1..64)", cuda_options.slots);
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
  std::vector<int32_t> sizes;
  for (const auto& p : options.policies)
    for (int32_t H : options.buffer_sizes) {
      ReplayConfigStats s;
      s.policy = p;
      s.buffer_size = H;
      s.miss_hist.assign(static_cast<size_t>(K) + 1, 0);
      s.step_miss_hist.assign(static_cast<size_t>(L) * K + 1, 0);
      result.configs.push_back(std::move(s));
      sizes.push_back(H);
    }
  const size_t C = result.configs.size();
  const size_t Ls = static_cast<size_t>(L), LK = Ls * static_cast<size_t>(K);

  const std::vector<int64_t> ids = source.request_ids();
  const size_t lanes_n = cuda_options.open_trace
                             ? std::clamp<size_t>(static_cast<size_t>(std::max(cuda_options.max_rows, 1) / L), 1,
                                                  std::max<size_t>(ids.size(), 1))
                             : 1;
  const int32_t rows = static_cast<int32_t>(lanes_n * Ls);
  const int32_t S = cuda_options.slots;
  // The device comes up (CUDA context, allocations, pinning: the command's largest fixed cost) while the host threads
  // open the lanes' cursors and read their first step.
  std::future<std::unique_ptr<cuda::ReplaySwapIn>> device_future = std::async(std::launch::async, [&] {
    const auto t_dev = Clock::now();
    auto d = std::make_unique<cuda::ReplaySwapIn>(rows, K, sizes, S);
    timing.device_start_seconds = since(t_dev);
    return d;
  });
  std::unique_ptr<cuda::ReplaySwapIn> dev;

  replay_detail::ReplayTaskPool pool(std::min<int>(options.threads, static_cast<int>(lanes_n)));
  result.threads = pool.threads();
  std::vector<Lane> lanes(lanes_n);
  if (cuda_options.open_trace) {
    pool.run(lanes_n, [&](size_t i) {
      lanes[i].owned = cuda_options.open_trace();
      lanes[i].src = lanes[i].owned.get();
    });
  } else {
    lanes[0].src = &source;  // one lane: requests in turn on the caller's cursor
  }

  const auto init_code = static_cast<int8_t>(
      meta.initial_state == InitialState::kEmpty ? cuda::kReplayRowEmptyUnlessFits : cuda::kReplayRowIdentity);
  const auto keep_code = static_cast<int8_t>(cuda::kReplayRowKeep);
  int32_t slot = 0;  // the slot being filled
  // Copies lane i's record into the slot's staging (the rows of lane i are its own: tasks never share bytes).
  auto stage = [&](size_t i) {
    const Lane& ln = lanes[i];
    std::memcpy(dev->selected(slot) + i * LK, ln.rec.positions.data(), LK * sizeof(int32_t));
    std::fill_n(dev->seq_len(slot) + i * Ls, Ls, ln.rec.seq_len);
    std::fill_n(dev->init(slot) + i * Ls, Ls, ln.fresh ? init_code : keep_code);
  };
  // Reads lane i's next step (a fresh lane: its request's first), checks it as the CPU replay does, stages it.
  auto read_lane = [&](size_t i) {
    Lane& ln = lanes[i];
    const int64_t id = ids[static_cast<size_t>(ln.req)];
    if (ln.fresh) ln.src->seek_request(id);
    ln.got = ln.src->next(ln.rec) && ln.rec.request_id == id;
    if (!ln.got) return;
    const traces::StepRecord& r = ln.rec;
    if (r.seq_len < 1 || r.seq_len > traces::kMaxSeqLen)
      throw_error("replay: trace {}: request {}, step {}: seq_len {} (expected 1..{})", meta.source, r.request_id,
                  r.step, r.seq_len, traces::kMaxSeqLen);
    if (r.positions.size() != LK)
      throw_error("replay: trace {}: request {}, step {} holds {} positions, expected layers x top_k = {} x {}",
                  meta.source, r.request_id, r.step, r.positions.size(), L, K);
    if (dev) stage(i);
  };

  std::map<int64_t, Request> requests;  // started and not yet reduced, by index
  size_t next_start = 0, next_reduce = 0;
  // Reduces every finished request at the head of trace order (add_request_rows sums; step_seq_lens and the row
  // sink see requests in trace order, as with the CPU replay).
  auto reduce_ready = [&] {
    bool any = false;
    for (auto it = requests.begin(); it != requests.end() && it->first == static_cast<int64_t>(next_reduce) &&
                                     it->second.done;
         it = requests.erase(it), ++next_reduce) {
      if (it->second.empty) continue;
      add_request_rows(result, it->second.rows, it->second.seq_lens, options.row_bytes);
      if (options.keep_step_rows && row_sink) row_sink(it->second.rows);
      any = true;
    }
    if (any && options.progress) {
      ReplayProgress p;
      p.requests_done = result.requests;
      p.requests_total = static_cast<int64_t>(ids.size());
      p.steps_done = result.decode_steps;
      p.entries_done = result.entries;
      p.seconds = since(t0);
      options.progress(p);
    }
  };
  std::vector<SlotMeta> metas(static_cast<size_t>(S));
  auto consume = [&](int32_t s) {
    SlotMeta& m = metas[static_cast<size_t>(s)];
    if (!m.submitted) return;
    const auto t_wait = Clock::now();
    dev->wait(s);
    timing.host_wait_seconds += since(t_wait);
    for (size_t i = 0; i < lanes_n; ++i) {
      if (m.req[i] < 0) continue;
      Request& q = requests.at(m.req[i]);
      for (size_t c = 0; c < C; ++c) {
        const int64_t* counters = dev->counters(s, c);
        const int32_t* errors = dev->errors(s, c);
        for (size_t l = 0; l < Ls; ++l) {
          const size_t b = i * Ls + l;
          if (errors[b * 2] != 0)
            throw_error("replay --backend cuda: trace {}: request {}, layer {}, step {}: the swap-in kernel rejected "
                        "entry {}: {}",
                        meta.source, q.rows.request_id, l, m.step[i], errors[b * 2 + 1], error_name(errors[b * 2]));
          const int64_t* k = counters + b * cuda::kCounterWords;
          q.rows.rows[c][l].push_back({m.seq_len[i], static_cast<int32_t>(k[0]), static_cast<int32_t>(k[1]),
                                       static_cast<int32_t>(k[2]), static_cast<int32_t>(k[3])});
        }
      }
      q.rows.steps.push_back(m.step[i]);
      q.seq_lens.push_back(m.seq_len[i]);
    }
    for (int64_t f : m.finished) requests.at(f).done = true;
    m.finished.clear();
    m.submitted = false;
    reduce_ready();
  };

  std::vector<size_t> todo;
  std::vector<int64_t> finished;
  while (true) {
    consume(slot);  // the slot's previous step: its staging is free again
    const auto t_read = Clock::now();
    for (Lane& ln : lanes) ln.fresh = false;
    // Lanes in the middle of a request read its next step.
    todo.clear();
    for (size_t i = 0; i < lanes_n; ++i)
      if (lanes[i].req >= 0) todo.push_back(i);
    pool.run(todo.size(), [&](size_t j) { read_lane(todo[j]); });
    finished.clear();
    for (size_t i : todo)
      if (!lanes[i].got) {
        finished.push_back(lanes[i].req);
        lanes[i].req = -1;
      }
    // Idle lanes take the next requests in trace order (deterministic: lane order), until every lane has a step or
    // the trace has no request left (a request without records frees its lane at once).
    while (next_start < ids.size()) {
      todo.clear();
      for (size_t i = 0; i < lanes_n && next_start < ids.size(); ++i)
        if (lanes[i].req < 0) {
          lanes[i].req = static_cast<int64_t>(next_start++);
          lanes[i].fresh = true;
          todo.push_back(i);
        }
      if (todo.empty()) break;
      pool.run(todo.size(), [&](size_t j) { read_lane(todo[j]); });
      for (size_t i : todo) {
        Request& q = requests[lanes[i].req];
        if (!lanes[i].got) {
          q.done = q.empty = true;
          lanes[i].req = -1;
          continue;
        }
        q.rows.request_id = ids[static_cast<size_t>(lanes[i].req)];
        q.rows.rows.assign(C, std::vector<std::vector<ReplayStepRow>>(Ls));
      }
    }
    result.read_seconds += since(t_read);
    if (!dev) {
      // First step: the device was coming up while it was read; stage it now.
      dev = device_future.get();
      todo.clear();
      for (size_t i = 0; i < lanes_n; ++i)
        if (lanes[i].req >= 0 && lanes[i].got) todo.push_back(i);
      pool.run(todo.size(), [&](size_t j) { stage(todo[j]); });
    }
    SlotMeta& m = metas[static_cast<size_t>(slot)];
    m.finished = finished;
    bool any_step = false, any_init = false;
    m.req.assign(lanes_n, -1);
    m.step.assign(lanes_n, 0);
    m.seq_len.assign(lanes_n, 0);
    for (size_t i = 0; i < lanes_n; ++i) {
      const Lane& ln = lanes[i];
      if (ln.req >= 0 && ln.got) {
        any_step = true;
        any_init = any_init || ln.fresh;
        m.req[i] = ln.req;
        m.step[i] = ln.rec.step;
        m.seq_len[i] = ln.rec.seq_len;
      } else {
        std::fill_n(dev->seq_len(slot) + i * Ls, Ls, 0);  // padding rows: states untouched
        std::fill_n(dev->init(slot) + i * Ls, Ls, keep_code);
      }
    }
    if (!any_step) break;
    dev->submit(slot, any_init);
    m.submitted = true;
    slot = (slot + 1) % S;
  }
  // Drain the ring in step order, then the requests that ended with the trace.
  for (int32_t k = 0; k < S; ++k) consume((slot + k) % S);
  for (int64_t f : metas[static_cast<size_t>(slot)].finished) requests.at(f).done = true;
  reduce_ready();
  if (!requests.empty())
    throw_error("replay --backend cuda: trace {}: {} requests left unreduced (internal error)", meta.source,
                requests.size());

  result.peak_window_bytes = dev->staging_bytes() + lanes_n * LK * sizeof(int32_t);
  timing.kernel_seconds = dev->kernel_seconds();
  timing.lanes = static_cast<int32_t>(lanes_n);
  timing.slots = S;
  g_timing = timing;
  result.seconds = since(t0);
  return result;
}

}  // namespace hisparse::sim

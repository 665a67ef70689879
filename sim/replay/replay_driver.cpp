// @brief run_replay_session (see replay_driver.h): lanes of requests read side by side by the host threads into the
// session's staging slots, submitted without waiting, counters consumed a ring's length later and reduced in trace
// order.
#include "sim/replay/replay_driver.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <map>

#include "core/error.h"
#include "cpu_ref/policies/registry.h"
#include "sim/replay/replay_cpu_session.h"
#include "sim/replay/replay_cuda_pool.h"
#include "traces/trace_limits.h"

namespace hisparse::sim {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// L consecutive batch rows replaying one request at a time.
struct Lane {
  std::unique_ptr<traces::TraceSource> owned;
  traces::TraceSource* src = nullptr;
  int64_t req = -1;    // index into the trace's request ids; -1: idle
  bool fresh = false;  // assigned for this step: seek, first record, state reset
  bool got = false;    // rec() holds this step of req
  // Reused: the reader refills its buffer, no allocation per step once warm. One per step of a slot when the session
  // borrows the lists (they must live until its submit), else one.
  std::vector<traces::StepRecord> recs = std::vector<traces::StepRecord>(1);
  size_t at = 0;  // the record of the step being filled
  traces::StepRecord& rec() { return recs[at]; }
  const traces::StepRecord& rec() const { return recs[at]; }
};

/// A request's rows, from its first step until it is reduced (in trace order, so possibly after later ones ended).
struct Request {
  ReplayRequestRows rows;
  std::vector<int32_t> seq_lens;
  bool done = false;
  bool empty = false;  // no step record at all: the windowed engine never sees it, so it is not counted
};

/// What was staged in one step of a slot, for reading its counters back.
struct SlotMeta {
  std::vector<int64_t> req, step;  // per lane; req -1: padding
  std::vector<int32_t> seq_len;
  std::vector<int64_t> finished;   // requests whose last step was staged before this slot's
};

}  // namespace

ReplayResult run_replay_session(traces::TraceSource& source, const ReplayOptions& options,
                                const std::function<void(const ReplayRequestRows&)>& row_sink,
                                const ReplayDriverOptions& driver_options, const SwapInSessionFactory& factory,
                                ReplayDriverTiming* timing_out) {
  const auto t0 = Clock::now();
  ReplayDriverTiming timing;
  const traces::TraceMeta meta = source.meta();
  const int32_t L = meta.layers, K = meta.top_k;
  if (L < 1 || K < 1) throw_error("replay: trace {} declares {} layers and top_k {}", meta.source, L, K);
  if (options.policies.empty()) throw_error("replay: --policy names no policy");
  if (options.buffer_sizes.empty()) throw_error("replay: --buffer-sizes names no buffer size");
  if (options.threads < 1) throw_error("replay: --threads {} must be >= 1", options.threads);
  for (int32_t H : options.buffer_sizes)
    if (H < K || H > traces::kMaxSeqLen)
      throw_error("replay: buffer size {} (--buffer-sizes) must be in top_k {} .. {}", H, K, traces::kMaxSeqLen);

  ReplayResult result;
  result.meta = meta;
  SwapInSessionShape shape;
  shape.top_k = K;
  shape.initial = meta.initial_state;
  shape.row_bytes = options.row_bytes;
  for (const auto& p : options.policies)
    for (int32_t H : options.buffer_sizes) {
      ReplayConfigStats s;
      s.policy = p;
      s.buffer_size = H;
      s.miss_hist.assign(static_cast<size_t>(K) + 1, 0);
      s.step_miss_hist.assign(static_cast<size_t>(L) * K + 1, 0);
      result.configs.push_back(std::move(s));
      const std::string spec = cpu_ref::with_v2_coordinator(p, options.v2_coordinator);
      cpu_ref::check_policy_top_k(p, K);
      shape.configs.push_back({spec, H});
    }
  const size_t C = result.configs.size();
  const size_t Ls = static_cast<size_t>(L), LK = Ls * static_cast<size_t>(K);

  const std::vector<int64_t> ids = source.request_ids();
  const size_t lanes_n = driver_options.open_trace
                             ? std::clamp<size_t>(static_cast<size_t>(std::max(driver_options.max_rows, 1) / L), 1,
                                                  std::max<size_t>(ids.size(), 1))
                             : 1;
  shape.rows = static_cast<int32_t>(lanes_n * Ls);
  // The session comes up (for a GPU: context, allocations, pinning, the command's largest fixed cost) while the host
  // threads open the lanes' cursors and read their first step.
  std::future<std::unique_ptr<SwapInSession>> session_future = std::async(std::launch::async, [&] {
    const auto t_start = Clock::now();
    auto s = factory(shape);
    timing.session_start_seconds = since(t_start);
    return s;
  });
  std::unique_ptr<SwapInSession> session;
  int32_t S = 0;

  replay_detail::ReplayTaskPool pool(std::min<int>(options.threads, static_cast<int>(lanes_n)));
  result.threads = pool.threads();
  std::vector<Lane> lanes(lanes_n);
  // (An exception below leaves through session_future's destructor, which waits for the factory's thread.)
  if (driver_options.open_trace) {
    pool.run(lanes_n, [&](size_t i) {
      lanes[i].owned = driver_options.open_trace();
      lanes[i].src = lanes[i].owned.get();
    });
  } else {
    lanes[0].src = &source;  // one lane: requests in turn on the caller's cursor
  }

  int32_t slot = 0;   // the slot being filled
  int32_t W = 1;      // steps per slot (the session's)
  int32_t sub = 0;    // the step of the slot being filled
  bool borrow = false;  // the session reads the lanes' records (SwapInSession::borrows_lists)
  SessionStaging st;  // the slot's staging
  SessionStaging cur; // its block for step `sub`
  const size_t rows = lanes_n * Ls;
  auto block = [&](int32_t j) {
    const size_t o = static_cast<size_t>(j) * rows;
    return SessionStaging{st.selected + o * static_cast<size_t>(K), st.seq_len + o, st.init + o, st.request + o,
                          st.layer + o, st.step + o, st.lists ? st.lists + o : nullptr};
  };
  // Copies lane i's record into the step's staging (the rows of lane i are its own: tasks never share bytes).
  auto stage = [&](size_t i) {
    const Lane& ln = lanes[i];
    if (borrow) {
      for (size_t l = 0; l < Ls; ++l) cur.lists[i * Ls + l] = ln.rec().positions.data() + l * static_cast<size_t>(K);
    } else {
      std::memcpy(cur.selected + i * LK, ln.rec().positions.data(), LK * sizeof(int32_t));
    }
    for (size_t l = 0; l < Ls; ++l) {
      const size_t b = i * Ls + l;
      cur.seq_len[b] = ln.rec().seq_len;
      cur.init[b] = ln.fresh ? SessionRowInit::kStart : SessionRowInit::kKeep;
      cur.request[b] = ln.rec().request_id;
      cur.layer[b] = static_cast<int32_t>(l);
      cur.step[b] = ln.rec().step;
    }
  };
  // Reads lane i's next step (a fresh lane: its request's first), checks it as the windowed engine does, stages it.
  auto read_lane = [&](size_t i) {
    Lane& ln = lanes[i];
    const int64_t id = ids[static_cast<size_t>(ln.req)];
    if (ln.fresh) ln.src->seek_request(id);
    ln.got = ln.src->next(ln.rec()) && ln.rec().request_id == id;
    if (!ln.got) return;
    const traces::StepRecord& r = ln.rec();
    if (r.seq_len < 1 || r.seq_len > traces::kMaxSeqLen)
      throw_error("replay: trace {}: request {}, step {}: seq_len {} (expected 1..{})", meta.source, r.request_id,
                  r.step, r.seq_len, traces::kMaxSeqLen);
    if (r.positions.size() != LK)
      throw_error("replay: trace {}: request {}, step {} holds {} positions, expected layers x top_k = {} x {}",
                  meta.source, r.request_id, r.step, r.positions.size(), L, K);
    if (session) stage(i);
  };

  std::map<int64_t, Request> requests;  // started and not yet reduced, by index
  size_t next_start = 0, next_reduce = 0;
  // Reduces every finished request at the head of trace order (add_request_rows sums; step_seq_lens and the row
  // sink see requests in trace order, as with the windowed engine).
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
  std::vector<std::vector<SlotMeta>> metas;  // [slot][step of the slot]
  std::vector<char> submitted;               // [slot]
  auto consume = [&](int32_t s) {
    if (!submitted[static_cast<size_t>(s)]) return;
    const auto t_wait = Clock::now();
    session->wait(s);
    timing.wait_seconds += since(t_wait);
    for (int32_t j = 0; j < W; ++j) {
      SlotMeta& m = metas[static_cast<size_t>(s)][static_cast<size_t>(j)];
      for (size_t i = 0; i < lanes_n; ++i) {
        if (m.req[i] < 0) continue;
        Request& q = requests.at(m.req[i]);
        for (size_t c = 0; c < C; ++c) {
          const SessionRowCounts* counts = session->counts(s, c) + static_cast<size_t>(j) * rows;
          for (size_t l = 0; l < Ls; ++l) {
            const SessionRowCounts& k = counts[i * Ls + l];
            q.rows.rows[c][l].push_back({m.seq_len[i], k.selected, k.hits, k.newest_hits, k.misses});
          }
        }
        q.rows.steps.push_back(m.step[i]);
        q.seq_lens.push_back(m.seq_len[i]);
      }
      for (int64_t f : m.finished) requests.at(f).done = true;
      m.finished.clear();
    }
    submitted[static_cast<size_t>(s)] = 0;
    reduce_ready();
  };
  auto submit = [&] {
    session->submit(slot);
    submitted[static_cast<size_t>(slot)] = 1;
    slot = (slot + 1) % S;
    sub = 0;
  };

  std::vector<size_t> todo;
  std::vector<int64_t> finished, final_finished;
  while (true) {
    if (session) {
      if (sub == 0) {
        consume(slot);  // the slot's previous steps: its staging is free again
        st = session->staging(slot);
      }
      cur = block(sub);
      if (borrow)
        for (Lane& ln : lanes) ln.at = static_cast<size_t>(sub);
    }
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
    if (!session) {
      // First step: the session was coming up while it was read; stage it now.
      session = session_future.get();
      S = session->slots();
      W = session->steps_per_slot();
      if (S < 1 || W < 1)
        throw_error("replay: session {} offers {} slots of {} steps (expected >= 1 each)", session->name(), S, W);
      metas.assign(static_cast<size_t>(S), std::vector<SlotMeta>(static_cast<size_t>(W)));
      borrow = session->borrows_lists();
      if (borrow && !session->staging(slot).lists)
        throw_error("replay: session {} borrows lists but stages none (internal error)", session->name());
      if (borrow)
        for (Lane& ln : lanes) ln.recs.resize(static_cast<size_t>(W));  // the first step's is recs[0]
      submitted.assign(static_cast<size_t>(S), 0);
      st = session->staging(slot);
      cur = block(0);
      todo.clear();
      for (size_t i = 0; i < lanes_n; ++i)
        if (lanes[i].req >= 0 && lanes[i].got) todo.push_back(i);
      pool.run(todo.size(), [&](size_t j) { stage(todo[j]); });
    }
    SlotMeta& m = metas[static_cast<size_t>(slot)][static_cast<size_t>(sub)];
    m.finished = finished;
    bool any_step = false;
    m.req.assign(lanes_n, -1);
    m.step.assign(lanes_n, 0);
    m.seq_len.assign(lanes_n, 0);
    for (size_t i = 0; i < lanes_n; ++i) {
      const Lane& ln = lanes[i];
      if (ln.req >= 0 && ln.got) {
        any_step = true;
        m.req[i] = ln.req;
        m.step[i] = ln.rec().step;
        m.seq_len[i] = ln.rec().seq_len;
      } else {
        std::fill_n(cur.seq_len + i * Ls, Ls, 0);  // padding rows: states untouched
        std::fill_n(cur.init + i * Ls, Ls, SessionRowInit::kKeep);
      }
    }
    if (!any_step) {
      // The trace is done. Its last requests are marked done after the drain; a slot filled in part goes with its
      // remaining steps as padding.
      final_finished.swap(m.finished);
      if (sub > 0) {
        for (int32_t j = sub + 1; j < W; ++j) {
          const SessionStaging pad = block(j);
          std::fill_n(pad.seq_len, rows, 0);
          std::fill_n(pad.init, rows, SessionRowInit::kKeep);
          SlotMeta& e = metas[static_cast<size_t>(slot)][static_cast<size_t>(j)];
          e.req.assign(lanes_n, -1);
          e.finished.clear();
        }
        submit();
      }
      break;
    }
    if (++sub == W) submit();
  }
  // Drain the ring in step order, then the requests that ended with the trace.
  for (int32_t k = 0; k < S; ++k) consume((slot + k) % S);
  for (int64_t f : final_finished) requests.at(f).done = true;
  reduce_ready();
  if (!requests.empty())
    throw_error("replay: trace {}: {} requests left unreduced (internal error)", meta.source, requests.size());

  result.peak_window_bytes = session->staging_bytes() + lanes_n * LK * sizeof(int32_t);
  timing.backend_seconds = session->backend_seconds();
  timing.lanes = static_cast<int32_t>(lanes_n);
  timing.slots = S;
  if (timing_out) *timing_out = timing;
  result.seconds = since(t0);
  return result;
}

ReplayResult run_replay_cpu_session(traces::TraceSource& source, const ReplayOptions& options,
                                    const std::function<void(const ReplayRequestRows&)>& row_sink,
                                    const std::function<std::unique_ptr<traces::TraceSource>()>& open_trace) {
  const int32_t L = std::max(source.meta().layers, 1), K = std::max(source.meta().top_k, 1);
  if (options.threads < 1) throw_error("replay: --threads {} must be >= 1", options.threads);
  ReplayDriverOptions d;
  const int32_t lanes = open_trace ? (options.threads + L - 1) / L : 1;
  if (lanes > 1) d.open_trace = open_trace;
  d.max_rows = lanes * L;
  const size_t step_bytes = static_cast<size_t>(lanes) * static_cast<size_t>(L) * static_cast<size_t>(K) * 4;
  const auto steps = static_cast<int32_t>(std::clamp<size_t>(options.batch_bytes / step_bytes, 1, 4096));
  const int threads = options.threads;
  const cpu_ref::V2Schedules& v2 = options.v2_schedules;
  const auto make = [threads, steps, &v2](const SwapInSessionShape& shape) {
    auto session = std::make_unique<CountingSwapInSession>(shape, threads, 1, steps);
    session->use_v2_schedules(v2);  // hisparse-v2 follows the V2 session's schedules, when there are any
    return session;
  };
  ReplayResult r = run_replay_session(source, options, row_sink, d, make);
  // The session's threads step the rows (the driver's read the lanes): the replay ran on as many as it has rows for.
  r.threads = std::min<int>(threads, lanes * L);
  return r;
}

}  // namespace hisparse::sim

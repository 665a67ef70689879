// @brief run_replay_session (see replay_driver.h): lanes of requests read side by side by the host threads into the
// session's staging slots (offline policies through the look-ahead stage), submitted without waiting, counters
// consumed a ring's length later and reduced in trace order.
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
#include "sim/replay/replay_lookahead.h"
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
  bool got = false;    // now holds this step of req
  // Reused: the reader refills its buffer, no allocation per step once warm. One per step of a slot when the session
  // borrows the lists (they must live until its submit), else one.
  std::vector<traces::StepRecord> recs = std::vector<traces::StepRecord>(1);
  size_t at = 0;  // the record of the step being filled
  const traces::StepRecord* now = nullptr;  // the step being staged: recs[at], or the look-ahead window's
  std::unique_ptr<replay_detail::LookAheadWindow> ahead;  // offline configurations: the look-ahead stage
  const traces::StepRecord& rec() const { return *now; }
};

/// A request's rows, from its first step until it is reduced (in trace order, so possibly after later ones ended).
struct Request {
  ReplayRequestRows rows;
  std::vector<int32_t> seq_lens;
  bool done = false;
  bool empty = false;  // no step record at all: not counted
};

/// What was staged in one step of a slot, for reading its counters back.
struct SlotMeta {
  std::vector<int64_t> req, step;  // per lane; req -1: padding
  std::vector<int32_t> seq_len;
  std::vector<int64_t> finished;   // requests whose last step was staged before this slot's
};

/// One run of the driver: its stages are the methods below, in the order run() calls them per step.
class Driver {
 public:
  Driver(traces::TraceSource& source, const ReplayOptions& options,
         const std::function<void(const ReplayRequestRows&)>& row_sink, const ReplayDriverOptions& driver_options)
      : source_(source), options_(options), row_sink_(row_sink), driver_options_(driver_options), meta_(source.meta()) {}

  ReplayResult run(const SwapInSessionFactory& factory, ReplayDriverTiming* timing_out);

 private:
  void configure();
  void open_lanes();
  void start_session();
  SessionStaging block(int32_t j) const;
  void check_record(const traces::StepRecord& r) const;
  void stage(size_t i);
  void read_lane(size_t i);
  void read_running();
  void admit_requests();
  void build_lookahead();
  bool record_step();
  void reduce_ready();
  void consume(int32_t s);
  void submit();

  traces::TraceSource& source_;
  const ReplayOptions& options_;
  const std::function<void(const ReplayRequestRows&)>& row_sink_;
  const ReplayDriverOptions& driver_options_;
  const traces::TraceMeta meta_;
  const Clock::time_point t0_ = Clock::now();
  ReplayDriverTiming timing_;
  ReplayResult result_;
  int32_t L_ = 0, K_ = 0;
  size_t C_ = 0, Ls_ = 0, LK_ = 0;
  SwapInSessionShape shape_;
  std::vector<int32_t> future_index_;  // per configuration: its offline buffer size's index, or -1 (online)
  replay_detail::LookAheadShape ahead_shape_;
  bool offline_ = false;

  std::vector<int64_t> ids_;
  size_t lanes_n_ = 1, rows_ = 0;
  std::unique_ptr<replay_detail::ReplayTaskPool> pool_;
  std::vector<Lane> lanes_;
  std::future<std::unique_ptr<SwapInSession>> session_future_;
  std::unique_ptr<SwapInSession> session_;
  int32_t S_ = 0;        // slots
  int32_t W_ = 1;        // steps per slot (the session's)
  int32_t slot_ = 0;     // the slot being filled
  int32_t sub_ = 0;      // the step of the slot being filled
  bool borrow_ = false;  // the session reads the lanes' records (SwapInSession::borrows_lists)
  SessionStaging st_;    // the slot's staging
  SessionStaging cur_;   // its block for step sub_

  std::map<int64_t, Request> requests_;  // started and not yet reduced, by index
  size_t next_start_ = 0, next_reduce_ = 0;
  std::vector<std::vector<SlotMeta>> metas_;  // [slot][step of the slot]
  std::vector<char> submitted_;               // [slot]
  std::vector<size_t> todo_;
  std::vector<int64_t> finished_, final_finished_;
};

/// The options and the configurations (policy-major), the session's shape and, with offline policies, the look-ahead.
void Driver::configure() {
  L_ = meta_.layers;
  K_ = meta_.top_k;
  if (L_ < 1 || K_ < 1) throw_error("replay: trace {} declares {} layers and top_k {}", meta_.source, L_, K_);
  if (options_.policies.empty()) throw_error("replay: --policy names no policy");
  if (options_.buffer_sizes.empty()) throw_error("replay: --buffer-sizes names no buffer size");
  if (options_.threads < 1) throw_error("replay: --threads {} must be >= 1", options_.threads);
  for (int32_t H : options_.buffer_sizes)
    if (H < K_ || H > traces::kMaxSeqLen)
      throw_error("replay: buffer size {} (--buffer-sizes) must be in top_k {} .. {}", H, K_, traces::kMaxSeqLen);
  result_.meta = meta_;
  shape_.top_k = K_;
  shape_.initial = meta_.initial_state;
  shape_.row_bytes = options_.row_bytes;
  for (const auto& p : options_.policies) {
    const std::string spec = cpu_ref::with_v2_coordinator(p, options_.v2_coordinator);
    const bool offline = cpu_ref::make_policy(spec)->needs_future();  // also rejects unknown names
    cpu_ref::check_policy_top_k(p, K_);
    for (int32_t H : options_.buffer_sizes) {
      ReplayConfigStats s;
      s.policy = p;
      s.buffer_size = H;
      s.miss_hist.assign(static_cast<size_t>(K_) + 1, 0);
      s.step_miss_hist.assign(static_cast<size_t>(L_) * K_ + 1, 0);
      result_.configs.push_back(std::move(s));
      shape_.configs.push_back({spec, H});
      auto& sizes = ahead_shape_.offline_H;
      const auto it = std::find(sizes.begin(), sizes.end(), H);
      future_index_.push_back(!offline ? -1 : static_cast<int32_t>(it - sizes.begin()));
      if (offline && it == sizes.end()) sizes.push_back(H);
    }
  }
  C_ = result_.configs.size();
  Ls_ = static_cast<size_t>(L_);
  LK_ = Ls_ * static_cast<size_t>(K_);
  offline_ = !ahead_shape_.offline_H.empty();
  if (offline_) {
    ahead_shape_.layers = L_;
    ahead_shape_.top_k = K_;
    ahead_shape_.steps =
        replay_detail::lookahead_steps(options_.lookahead_bytes, L_, K_, ahead_shape_.offline_H.size());
    ahead_shape_.check = [this](const traces::StepRecord& r) { check_record(r); };
    result_.lookahead_steps = static_cast<int64_t>(ahead_shape_.steps);
  }
  ids_ = source_.request_ids();
  // Offline policies replay one request at a time (rows = layers): the look-ahead window then bounds what is held
  // at once, whatever the thread count, as --lookahead-mb says.
  lanes_n_ = driver_options_.open_trace && !offline_
                 ? std::clamp<size_t>(static_cast<size_t>(std::max(driver_options_.max_rows, 1) / L_), 1,
                                      std::max<size_t>(ids_.size(), 1))
                 : 1;
  rows_ = lanes_n_ * Ls_;
  shape_.rows = static_cast<int32_t>(rows_);
}

/// The host threads (one per lane; per layer for the look-ahead's futures) and the lanes' cursors.
void Driver::open_lanes() {
  const size_t work = offline_ ? Ls_ : lanes_n_;
  pool_ = std::make_unique<replay_detail::ReplayTaskPool>(std::min<int>(options_.threads, static_cast<int>(work)));
  result_.threads = pool_->threads();
  lanes_.resize(lanes_n_);
  if (driver_options_.open_trace && !offline_) {
    pool_->run(lanes_n_, [&](size_t i) {
      lanes_[i].owned = driver_options_.open_trace();
      lanes_[i].src = lanes_[i].owned.get();
    });
  } else {
    lanes_[0].src = &source_;  // one lane: requests in turn on the caller's cursor
  }
  if (offline_)
    for (Lane& ln : lanes_) ln.ahead = std::make_unique<replay_detail::LookAheadWindow>();
}

SessionStaging Driver::block(int32_t j) const {
  const size_t o = static_cast<size_t>(j) * rows_;
  return SessionStaging{st_.selected + o * static_cast<size_t>(K_), st_.seq_len + o, st_.init + o, st_.request + o,
                        st_.layer + o, st_.step + o, st_.lists ? st_.lists + o : nullptr,
                        st_.futures ? st_.futures + o * C_ : nullptr};
}

/// Every source is held to the readers' bound (they check it too; sources may be any).
void Driver::check_record(const traces::StepRecord& r) const {
  if (r.seq_len < 1 || r.seq_len > traces::kMaxSeqLen)
    throw_error("replay: trace {}: request {}, step {}: seq_len {} (expected 1..{})", meta_.source, r.request_id,
                r.step, r.seq_len, traces::kMaxSeqLen);
  if (r.positions.size() != LK_)
    throw_error("replay: trace {}: request {}, step {} holds {} positions, expected layers x top_k = {} x {}",
                meta_.source, r.request_id, r.step, r.positions.size(), L_, K_);
}

/// Copies lane i's record into the step's staging (the rows of lane i are its own: tasks never share bytes), with
/// the futures of a look-ahead window that starts at this step.
void Driver::stage(size_t i) {
  Lane& ln = lanes_[i];
  if (borrow_ && !ln.ahead) {
    for (size_t l = 0; l < Ls_; ++l) cur_.lists[i * Ls_ + l] = ln.rec().positions.data() + l * static_cast<size_t>(K_);
  } else {
    // A look-ahead window recycles the records of steps already staged when it slides: the lists are copied.
    std::memcpy(cur_.selected + i * LK_, ln.rec().positions.data(), LK_ * sizeof(int32_t));
    if (cur_.lists) std::fill_n(cur_.lists + i * Ls_, Ls_, nullptr);
  }
  for (size_t l = 0; l < Ls_; ++l) {
    const size_t b = i * Ls_ + l;
    cur_.seq_len[b] = ln.rec().seq_len;
    cur_.init[b] = ln.fresh ? SessionRowInit::kStart : SessionRowInit::kKeep;
    cur_.request[b] = ln.rec().request_id;
    cur_.layer[b] = static_cast<int32_t>(l);
    cur_.step[b] = ln.rec().step;
  }
  if (ln.ahead && ln.ahead->needs_futures()) {
    auto& futures = ln.ahead->futures();
    for (size_t l = 0; l < Ls_; ++l)
      for (size_t c = 0; c < C_; ++c)
        if (future_index_[c] >= 0)
          cur_.futures[(i * Ls_ + l) * C_ + c] = futures[l][static_cast<size_t>(future_index_[c])];
    for (auto& per_layer : futures)
      for (auto& f : per_layer) f.reset();  // the staging holds them now
    ln.ahead->futures_staged();
  }
}

/// Reads lane i's next step (a fresh lane: its request's first), checks it, stages it (a look-ahead window owing its
/// futures is staged once they are built).
void Driver::read_lane(size_t i) {
  Lane& ln = lanes_[i];
  const int64_t id = ids_[static_cast<size_t>(ln.req)];
  if (ln.fresh) ln.src->seek_request(id);
  if (ln.ahead) {
    if (ln.fresh && !ln.ahead->start(ahead_shape_, *ln.src, id)) {
      ln.got = false;
      return;
    }
    ln.now = ln.ahead->next(*ln.src);
    ln.got = ln.now != nullptr;
    if (!ln.got || ln.ahead->needs_futures()) return;
  } else {
    ln.now = &ln.recs[ln.at];
    ln.got = ln.src->next(ln.recs[ln.at]) && ln.now->request_id == id;
    if (!ln.got) return;
    check_record(ln.rec());
  }
  if (session_) stage(i);
}

/// Lanes in the middle of a request read its next step; a request without one is finished.
void Driver::read_running() {
  for (Lane& ln : lanes_) ln.fresh = false;
  todo_.clear();
  for (size_t i = 0; i < lanes_n_; ++i)
    if (lanes_[i].req >= 0) todo_.push_back(i);
  pool_->run(todo_.size(), [&](size_t j) { read_lane(todo_[j]); });
  finished_.clear();
  for (size_t i : todo_)
    if (!lanes_[i].got) {
      finished_.push_back(lanes_[i].req);
      if (lanes_[i].ahead) result_.lookahead_cut_requests += lanes_[i].ahead->cut();
      lanes_[i].req = -1;
    }
}

/// Per-request admission: idle lanes take the next requests in trace order (deterministic: lane order), until every
/// lane has a step or the trace has no request left (a request without records frees its lane at once).
void Driver::admit_requests() {
  while (next_start_ < ids_.size()) {
    todo_.clear();
    for (size_t i = 0; i < lanes_n_ && next_start_ < ids_.size(); ++i)
      if (lanes_[i].req < 0) {
        lanes_[i].req = static_cast<int64_t>(next_start_++);
        lanes_[i].fresh = true;
        todo_.push_back(i);
      }
    if (todo_.empty()) break;
    pool_->run(todo_.size(), [&](size_t j) { read_lane(todo_[j]); });
    for (size_t i : todo_) {
      Request& q = requests_[lanes_[i].req];
      if (!lanes_[i].got) {
        q.done = q.empty = true;
        lanes_[i].req = -1;
        continue;
      }
      q.rows.request_id = ids_[static_cast<size_t>(lanes_[i].req)];
      q.rows.rows.assign(C_, std::vector<std::vector<ReplayStepRow>>(Ls_));
    }
  }
}

/// The look-ahead stage: a lane whose window starts at this step has its layers' futures built (in parallel over
/// layers), then its step staged with them.
void Driver::build_lookahead() {
  if (!offline_) return;
  for (size_t i = 0; i < lanes_n_; ++i) {
    Lane& ln = lanes_[i];
    if (ln.req < 0 || !ln.got || !ln.ahead->needs_futures()) continue;
    pool_->run(Ls_, [&](size_t l) { ln.ahead->build_futures(static_cast<int32_t>(l)); });
    result_.peak_lookahead_bytes = std::max(result_.peak_lookahead_bytes, ln.ahead->held_bytes());
    if (session_) stage(i);
  }
}

/// First step: the session was coming up while it was read; stage it now.
void Driver::start_session() {
  session_ = session_future_.get();
  S_ = session_->slots();
  W_ = session_->steps_per_slot();
  if (S_ < 1 || W_ < 1)
    throw_error("replay: session {} offers {} slots of {} steps (expected >= 1 each)", session_->name(), S_, W_);
  if (offline_ && (!session_->takes_futures() || !session_->staging(slot_).futures))
    throw_error("replay: session {} takes no futures, so it cannot step an offline policy (internal error)",
                session_->name());
  metas_.assign(static_cast<size_t>(S_), std::vector<SlotMeta>(static_cast<size_t>(W_)));
  borrow_ = session_->borrows_lists();
  if (borrow_ && !session_->staging(slot_).lists)
    throw_error("replay: session {} borrows lists but stages none (internal error)", session_->name());
  if (borrow_)
    for (Lane& ln : lanes_)
      if (!ln.ahead) {
        ln.recs.resize(static_cast<size_t>(W_));  // the first step's is recs[0] (moved: `now` follows it)
        ln.now = &ln.recs[0];
      }
  submitted_.assign(static_cast<size_t>(S_), 0);
  st_ = session_->staging(slot_);
  cur_ = block(0);
  todo_.clear();
  for (size_t i = 0; i < lanes_n_; ++i)
    if (lanes_[i].req >= 0 && lanes_[i].got) todo_.push_back(i);
  pool_->run(todo_.size(), [&](size_t j) { stage(todo_[j]); });
}

/// Notes what the step staged (for its counters) and pads idle lanes. False once the trace is done: then the slot,
/// if filled in part, goes with its remaining steps as padding.
bool Driver::record_step() {
  SlotMeta& m = metas_[static_cast<size_t>(slot_)][static_cast<size_t>(sub_)];
  m.finished = finished_;
  bool any_step = false;
  m.req.assign(lanes_n_, -1);
  m.step.assign(lanes_n_, 0);
  m.seq_len.assign(lanes_n_, 0);
  for (size_t i = 0; i < lanes_n_; ++i) {
    const Lane& ln = lanes_[i];
    if (ln.req >= 0 && ln.got) {
      any_step = true;
      m.req[i] = ln.req;
      m.step[i] = ln.rec().step;
      m.seq_len[i] = ln.rec().seq_len;
    } else {
      std::fill_n(cur_.seq_len + i * Ls_, Ls_, 0);  // padding rows: states untouched
      std::fill_n(cur_.init + i * Ls_, Ls_, SessionRowInit::kKeep);
    }
  }
  if (any_step) return true;
  // The trace's last requests are marked done after the drain.
  final_finished_.swap(m.finished);
  if (sub_ > 0) {
    for (int32_t j = sub_ + 1; j < W_; ++j) {
      const SessionStaging pad = block(j);
      std::fill_n(pad.seq_len, rows_, 0);
      std::fill_n(pad.init, rows_, SessionRowInit::kKeep);
      SlotMeta& e = metas_[static_cast<size_t>(slot_)][static_cast<size_t>(j)];
      e.req.assign(lanes_n_, -1);
      e.finished.clear();
    }
    submit();
  }
  return false;
}

/// Reduces every finished request at the head of trace order (add_request_rows sums; step_seq_lens and the row sink
/// see requests in trace order).
void Driver::reduce_ready() {
  bool any = false;
  for (auto it = requests_.begin(); it != requests_.end() && it->first == static_cast<int64_t>(next_reduce_) &&
                                    it->second.done;
       it = requests_.erase(it), ++next_reduce_) {
    if (it->second.empty) continue;
    add_request_rows(result_, it->second.rows, it->second.seq_lens, options_.row_bytes);
    if (options_.keep_step_rows && row_sink_) row_sink_(it->second.rows);
    any = true;
  }
  if (any && options_.progress) {
    ReplayProgress p;
    p.requests_done = result_.requests;
    p.requests_total = static_cast<int64_t>(ids_.size());
    p.steps_done = result_.decode_steps;
    p.entries_done = result_.entries;
    p.seconds = since(t0_);
    options_.progress(p);
  }
}

/// Waits for slot s and files its counters under their requests.
void Driver::consume(int32_t s) {
  if (!submitted_[static_cast<size_t>(s)]) return;
  const auto t_wait = Clock::now();
  session_->wait(s);
  timing_.wait_seconds += since(t_wait);
  for (int32_t j = 0; j < W_; ++j) {
    SlotMeta& m = metas_[static_cast<size_t>(s)][static_cast<size_t>(j)];
    for (size_t i = 0; i < lanes_n_; ++i) {
      if (m.req[i] < 0) continue;
      Request& q = requests_.at(m.req[i]);
      for (size_t c = 0; c < C_; ++c) {
        const SessionRowCounts* counts = session_->counts(s, c) + static_cast<size_t>(j) * rows_;
        for (size_t l = 0; l < Ls_; ++l) {
          const SessionRowCounts& k = counts[i * Ls_ + l];
          q.rows.rows[c][l].push_back({m.seq_len[i], k.selected, k.hits, k.newest_hits, k.misses});
        }
      }
      q.rows.steps.push_back(m.step[i]);
      q.seq_lens.push_back(m.seq_len[i]);
    }
    for (int64_t f : m.finished) requests_.at(f).done = true;
    m.finished.clear();
  }
  submitted_[static_cast<size_t>(s)] = 0;
  reduce_ready();
}

void Driver::submit() {
  session_->submit(slot_);
  submitted_[static_cast<size_t>(slot_)] = 1;
  slot_ = (slot_ + 1) % S_;
  sub_ = 0;
}

ReplayResult Driver::run(const SwapInSessionFactory& factory, ReplayDriverTiming* timing_out) {
  configure();
  // The session comes up (for a GPU: context, allocations, pinning, the command's largest fixed cost) while the host
  // threads open the lanes' cursors and read their first step. (An exception below leaves through session_future_'s
  // destructor, which waits for the factory's thread.)
  session_future_ = std::async(std::launch::async, [this, &factory] {
    const auto t_start = Clock::now();
    auto s = factory(shape_);
    timing_.session_start_seconds = since(t_start);
    return s;
  });
  open_lanes();
  while (true) {
    if (session_) {
      if (sub_ == 0) {
        consume(slot_);  // the slot's previous steps: its staging is free again
        st_ = session_->staging(slot_);
      }
      cur_ = block(sub_);
      if (borrow_)
        for (Lane& ln : lanes_) ln.at = static_cast<size_t>(sub_);
    }
    const auto t_read = Clock::now();
    read_running();
    admit_requests();
    build_lookahead();
    result_.read_seconds += since(t_read);
    if (!session_) start_session();
    if (!record_step()) break;
    if (++sub_ == W_) submit();
  }
  // Drain the ring in step order, then the requests that ended with the trace.
  for (int32_t k = 0; k < S_; ++k) consume((slot_ + k) % S_);
  for (int64_t f : final_finished_) requests_.at(f).done = true;
  reduce_ready();
  if (!requests_.empty())
    throw_error("replay: trace {}: {} requests left unreduced (internal error)", meta_.source, requests_.size());
  result_.peak_window_bytes = session_->staging_bytes() + lanes_n_ * LK_ * sizeof(int32_t);
  timing_.backend_seconds = session_->backend_seconds();
  timing_.lanes = static_cast<int32_t>(lanes_n_);
  timing_.slots = S_;
  if (timing_out) *timing_out = timing_;
  result_.seconds = since(t0_);
  return std::move(result_);
}

}  // namespace

ReplayResult run_replay_session(traces::TraceSource& source, const ReplayOptions& options,
                                const std::function<void(const ReplayRequestRows&)>& row_sink,
                                const ReplayDriverOptions& driver_options, const SwapInSessionFactory& factory,
                                ReplayDriverTiming* timing_out) {
  Driver driver(source, options, row_sink, driver_options);
  return driver.run(factory, timing_out);
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
  const bool reference_lru = options.reference_lru;
  const cpu_ref::V2Schedules& v2 = options.v2_schedules;
  const auto make = [threads, steps, reference_lru, &v2](const SwapInSessionShape& shape) {
    auto session = std::make_unique<CountingSwapInSession>(shape, threads, 1, steps, reference_lru);
    session->use_v2_schedules(v2);  // hisparse-v2 follows the V2 session's schedules, when there are any
    return session;
  };
  ReplayDriverTiming timing;
  ReplayResult r = run_replay_session(source, options, row_sink, d, make, &timing);
  // The session's threads step the rows (the driver's read the lanes): the replay ran on as many as it has rows for.
  r.threads = std::min<int>(threads, timing.lanes * L);
  return r;
}

}  // namespace hisparse::sim

// @brief Multi-turn sessions in the serving engine (RequestSpec::session_id, turn, think_time): a user reads the answer
// before typing the next turn, so turn t > 0 of a session is sent at max(its arrival, the end of turn t − 1 + its
// think time); a turn whose arrival comes first waits. The end of a turn is its last token, or its rejection. Closed
// loop (--concurrency): each client runs one session at a time, as a multi-turn benchmark's clients do: it sends the
// session's turns in order, each a turn's think time after the previous one ended, then takes the next session (the
// workload's sessions in order of their first turn, cycling) after the clients' --think-time. A workload without
// sessions keeps the plain cycle through its requests.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "sim/serving/engine.h"

namespace hisparse::sim::serving {

namespace {

/// The sessions of `requests` (session_id >= 0), each as its requests' indices in turn order, sessions in the order of
/// their first request. Errors, naming the workload: a negative turn or think time, a turn twice, a missing turn.
std::vector<std::vector<int64_t>> session_turn_lists(const std::vector<RequestSpec>& requests,
                                                     const std::string& workload) {
  std::map<int64_t, std::map<int32_t, int64_t>> by_session;  // session → turn → request
  std::vector<int64_t> order;
  for (size_t i = 0; i < requests.size(); ++i) {
    const RequestSpec& r = requests[i];
    if (r.session_id < 0) continue;
    if (r.turn < 0 || r.think_time < 0)
      throw_error("workload {}: request {} of session {} has turn {} and think time {} ns (expected both >= 0)",
                  workload, r.id, r.session_id, r.turn, r.think_time);
    auto [it, added] = by_session.try_emplace(r.session_id);
    if (added) order.push_back(r.session_id);
    if (!it->second.emplace(r.turn, static_cast<int64_t>(i)).second)
      throw_error("workload {}: session {} has turn {} twice (requests {} and {})", workload, r.session_id, r.turn,
                  requests[static_cast<size_t>(it->second[r.turn])].id, r.id);
  }
  std::vector<std::vector<int64_t>> lists;
  for (int64_t id : order) {
    std::vector<int64_t> turns;
    for (const auto& [turn, i] : by_session[id]) {
      if (turn != static_cast<int32_t>(turns.size()))
        throw_error("workload {}: session {} has turn {} (request {}) but no turn {}", workload, id, turn,
                    requests[static_cast<size_t>(i)].id, turn - 1);
      turns.push_back(i);
    }
    lists.push_back(std::move(turns));
  }
  return lists;
}

}  // namespace

void Engine::link_sessions() {
  const std::vector<std::vector<int64_t>> sessions = session_turn_lists(specs_, w_.name);
  if (sessions.empty()) return;
  prev_turn_.assign(specs_.size(), -1);
  next_turn_.assign(specs_.size(), -1);
  turn_end_.assign(specs_.size(), -1);
  turn_held_.assign(specs_.size(), 0);
  result_.sessions += static_cast<int64_t>(sessions.size());
  for (const std::vector<int64_t>& turns : sessions)
    for (size_t t = 1; t < turns.size(); ++t) {
      prev_turn_[static_cast<size_t>(turns[t])] = turns[t - 1];
      next_turn_[static_cast<size_t>(turns[t - 1])] = turns[t];
    }
}

void Engine::link_closed_loop_sessions() {
  session_turns_ = session_turn_lists(w_.requests, w_.name);
  if (session_turns_.empty()) return;
  for (const RequestSpec& r : w_.requests)
    if (r.session_id < 0)
      throw_error("workload {}: request {} is in no session while others are; closed-loop clients run whole sessions "
                  "(expected every request to name its session)", w_.name, r.id);
  client_session_.assign(static_cast<size_t>(opt_.clients.concurrency), {-1, 0});
}

int64_t Engine::next_closed_loop_spec(int32_t client, SimTime* at) {
  if (session_turns_.empty()) return static_cast<int64_t>(specs_.size() % w_.requests.size());
  auto& [session, turn] = client_session_[static_cast<size_t>(client)];
  if (session >= 0 && turn < session_turns_[static_cast<size_t>(session)].size()) {
    // The session's next turn: its own think time after the previous turn ended, not the clients' --think-time.
    const int64_t i = session_turns_[static_cast<size_t>(session)][turn++];
    *at = sim_.now() + w_.requests[static_cast<size_t>(i)].think_time;
    return i;
  }
  session = next_session_++ % static_cast<int64_t>(session_turns_.size());
  turn = 1;
  ++result_.sessions;
  return session_turns_[static_cast<size_t>(session)][0];
}

bool Engine::turn_waits(int64_t i) {
  if (prev_turn_.empty()) return false;
  const int64_t p = prev_turn_[static_cast<size_t>(i)];
  if (p < 0) return false;
  const SimTime end = turn_end_[static_cast<size_t>(p)];
  if (end < 0) {  // the previous turn still runs: released when it ends (turn_done)
    turn_held_[static_cast<size_t>(i)] = 1;
    ++result_.held_turns;
    return true;
  }
  const SimTime at = end + spec(i).think_time;
  if (at <= sim_.now()) return false;
  ++result_.held_turns;
  sim_.schedule(at, handler_, kRelease, i);
  return true;
}

void Engine::turn_done(int64_t i) {
  if (next_turn_.empty() || static_cast<size_t>(i) >= next_turn_.size()) return;
  turn_end_[static_cast<size_t>(i)] = sim_.now();
  const int64_t n = next_turn_[static_cast<size_t>(i)];
  if (n < 0 || !turn_held_[static_cast<size_t>(n)]) return;  // not arrived yet: its arrival sees the end
  turn_held_[static_cast<size_t>(n)] = 0;
  sim_.schedule(sim_.now() + spec(n).think_time, handler_, kRelease, n);
}

}  // namespace hisparse::sim::serving

// @brief Multi-turn sessions in the serving engine (RequestSpec::session_id, turn, think_time): a user reads the answer
// before typing the next turn, so turn t > 0 of a session is sent at max(its arrival, the end of turn t − 1 + its
// think time); a turn whose arrival comes first waits. The end of a turn is its last token, or its rejection. Closed
// loop (--concurrency): each client runs one session at a time, as a multi-turn benchmark's clients do: it sends the
// session's turns in order, each a turn's think time after the previous one ended, then takes the next session (the
// workload's sessions in order of their first turn, cycling) after the clients' --think-time. A workload without
// sessions keeps the plain cycle through its requests.
#include <map>
#include <utility>

#include "core/error.h"
#include "sim/serving/engine.h"

namespace hisparse::sim::serving {

void Engine::link_sessions() {
  std::map<std::pair<int64_t, int32_t>, int64_t> turns;  // (session, turn) → request
  for (size_t i = 0; i < specs_.size(); ++i) {
    const RequestSpec& r = specs_[i];
    if (r.session_id < 0) continue;
    if (r.turn < 0 || r.think_time < 0)
      throw_error("workload {}: request {} of session {} has turn {} and think time {} ns (expected both >= 0)", w_.name,
                  r.id, r.session_id, r.turn, r.think_time);
    if (!turns.emplace(std::make_pair(r.session_id, r.turn), static_cast<int64_t>(i)).second)
      throw_error("workload {}: session {} has turn {} twice (requests {} and {})", w_.name, r.session_id, r.turn,
                  specs_[static_cast<size_t>(turns[{r.session_id, r.turn}])].id, r.id);
  }
  if (turns.empty()) return;
  prev_turn_.assign(specs_.size(), -1);
  next_turn_.assign(specs_.size(), -1);
  turn_end_.assign(specs_.size(), -1);
  turn_held_.assign(specs_.size(), 0);
  int64_t last_session = -1;
  for (const auto& [key, i] : turns) {
    if (key.first != last_session) ++result_.sessions;
    last_session = key.first;
    if (key.second == 0) continue;
    const auto prev = turns.find({key.first, key.second - 1});
    if (prev == turns.end())
      throw_error("workload {}: session {} has turn {} (request {}) but no turn {}", w_.name, key.first, key.second,
                  specs_[static_cast<size_t>(i)].id, key.second - 1);
    prev_turn_[static_cast<size_t>(i)] = prev->second;
    next_turn_[static_cast<size_t>(prev->second)] = i;
  }
}

void Engine::link_closed_loop_sessions() {
  std::map<int64_t, std::map<int32_t, int64_t>> by_session;  // session → turn → workload request
  std::vector<int64_t> order;                               // sessions by their first request in the workload
  for (size_t i = 0; i < w_.requests.size(); ++i) {
    const RequestSpec& r = w_.requests[i];
    if (r.session_id < 0) continue;
    auto [it, added] = by_session.try_emplace(r.session_id);
    if (added) order.push_back(r.session_id);
    if (!it->second.emplace(r.turn, static_cast<int64_t>(i)).second)
      throw_error("workload {}: session {} has turn {} twice", w_.name, r.session_id, r.turn);
  }
  if (order.empty()) return;
  for (const RequestSpec& r : w_.requests)
    if (r.session_id < 0)
      throw_error("workload {}: request {} is in no session while others are; closed-loop clients run whole sessions "
                  "(expected every request to name its session)", w_.name, r.id);
  for (int64_t id : order) {
    std::vector<int64_t> turns;
    for (const auto& [turn, i] : by_session[id]) {
      if (turn != static_cast<int32_t>(turns.size()))
        throw_error("workload {}: session {} has turn {} but no turn {}", w_.name, id, turn, turns.size());
      turns.push_back(i);
    }
    session_turns_.push_back(std::move(turns));
  }
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

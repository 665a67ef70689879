// @brief Multi-turn sessions in the serving engine (RequestSpec::session_id, turn, think_time): a user reads the answer
// before typing the next turn, so turn t > 0 of a session is sent at max(its arrival, the end of turn t − 1 + its
// think time); a turn whose arrival comes first waits. The end of a turn is its last token, or its rejection. Open
// loop only: closed-loop clients (--concurrency) make their own think times and cycle the workload's lengths.
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

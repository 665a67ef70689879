// @brief Seeded conversations with growing prompts and shared prefix blocks (conversation_generator.h).
#include "sim/workload/conversation_generator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core/error.h"
#include "sim/workload/prefix_blocks.h"

namespace hisparse::sim {
namespace {

void check_spec(const ConversationSpec& s) {
  if (!(s.rate_per_s > 0)) throw_error("{} workload: rate {} must be > 0 per second", s.kind, s.rate_per_s);
  if (s.block_tokens < 1) throw_error("{} workload: block_tokens {} must be >= 1", s.kind, s.block_tokens);
  if (s.shared_prefix_tokens < 0)
    throw_error("{} workload: system_prompt_tokens {} must be >= 0", s.kind, s.shared_prefix_tokens);
  if (s.max_context_tokens > 0 && s.max_context_tokens <= s.shared_prefix_tokens)
    throw_error("{} workload: max_context_tokens {} must exceed system_prompt_tokens {}", s.kind, s.max_context_tokens,
                s.shared_prefix_tokens);
}

// One conversation's turns, appended to `out`; returns nothing, draws from `rng` in a fixed order per turn.
void add_conversation(const ConversationSpec& s, int64_t session, SimTime start, const std::vector<uint64_t>& shared,
                      std::mt19937_64& rng, BlockIdSource& ids, std::vector<RequestSpec>& out) {
  const int32_t turns = s.turns.draw_count(rng);
  const int64_t limit = s.max_context_tokens > 0 ? s.max_context_tokens : std::numeric_limits<int32_t>::max();
  RequestSpec prev;
  for (int32_t t = 0; t < turns; ++t) {
    RequestSpec r;
    r.session_id = session;
    r.turn = t;
    const int64_t message = t == 0 ? s.first_tokens.draw_count(rng) : s.appended_tokens.draw_count(rng);
    const int64_t output = s.output_tokens.draw_count(rng);
    const SimTime think = t == 0 ? 0 : static_cast<SimTime>(std::llround(s.think_time.draw(rng)));
    const int64_t base = t == 0 ? s.shared_prefix_tokens : int64_t{prev.input_tokens} + prev.output_tokens;
    if (base + message + output > limit) break;  // the context window is full: the conversation ends here
    r.input_tokens = static_cast<int32_t>(base + message);
    r.output_tokens = static_cast<int32_t>(output);
    r.think_time = think;
    r.arrival = t == 0 ? start : prev.arrival + think;
    // Turn t resends turn t − 1's prompt and answer: it agrees with that sequence up to its end, so it shares the
    // answer's blocks as well (which the cache keys once turn t − 1 finishes, RequestSpec::sequence_blocks).
    const int64_t prev_sequence = int64_t{prev.input_tokens} + prev.output_tokens;
    r.prefix_blocks = t == 0 ? extend_blocks(shared, s.shared_prefix_tokens, r.input_tokens, s.shared_prefix_tokens,
                                             s.block_tokens, ids)
                             : extend_blocks(prev.sequence_blocks, prev_sequence, r.input_tokens, prev_sequence,
                                             s.block_tokens, ids);
    r.sequence_blocks = extend_blocks(r.prefix_blocks, r.input_tokens, int64_t{r.input_tokens} + r.output_tokens,
                                      r.input_tokens, s.block_tokens, ids);
    out.push_back(r);
    prev = std::move(r);
  }
}

}  // namespace

Workload generate_conversations(const ConversationSpec& s) {
  check_spec(s);
  std::mt19937_64 rng(s.seed);
  BlockIdSource ids;
  // The shared prefix's blocks come first (ids 0, 1, …): every conversation's turn 0 extends them.
  std::vector<uint64_t> shared;
  for (int64_t b = 0; b < (int64_t{s.shared_prefix_tokens} + s.block_tokens - 1) / s.block_tokens; ++b)
    shared.push_back(ids.next());
  Workload w;
  w.source = fmt::format("{} generator(seed={})", s.kind, s.seed);
  w.block_tokens = s.block_tokens;
  double t = 0;
  for (int64_t session = 0;; ++session) {
    t += -std::log(1.0 - uniform01(rng)) / s.rate_per_s;
    const SimTime start = static_cast<SimTime>(std::floor(t * 1e9));
    if (start >= s.duration) break;
    add_conversation(s, session, start, shared, rng, ids, w.requests);
  }
  // Arrival order (stable: a session's turns never swap, as arrival(t) >= arrival(t - 1)); ids follow it.
  std::stable_sort(w.requests.begin(), w.requests.end(),
                   [](const RequestSpec& a, const RequestSpec& b) { return a.arrival < b.arrival; });
  for (size_t i = 0; i < w.requests.size(); ++i) w.requests[i].id = static_cast<int64_t>(i);
  return w;
}

ConversationSpec read_conversation_yaml(StrictMap& root, const ConversationKeys& keys, const std::string& kind) {
  ConversationSpec s;
  s.kind = kind;
  read_poisson_arrivals(root, &s.seed, &s.rate_per_s, &s.duration);
  root.get("block_tokens", &s.block_tokens, 1, 1 << 20);
  root.get("system_prompt_tokens", &s.shared_prefix_tokens, 0, 1 << 30);
  root.get("max_context_tokens", &s.max_context_tokens, 0, int64_t{1} << 31);
  constexpr double kMaxTokens = 1 << 30;
  const auto read = [&](const char* key, Unit unit, double lo, double hi) {
    root.require(key);
    return read_distribution(root, key, unit, lo, hi);
  };
  s.turns = read(keys.turns, Unit::kNone, 1, 1e6);
  s.first_tokens = read(keys.first, Unit::kNone, 1, kMaxTokens);
  s.appended_tokens = read(keys.appended, Unit::kNone, 1, kMaxTokens);
  s.output_tokens = read(keys.output, Unit::kNone, 1, kMaxTokens);
  s.think_time = read(keys.think, Unit::kNanoseconds, 0, 1e15);
  root.finish();
  if (s.max_context_tokens > 0 && s.max_context_tokens <= s.shared_prefix_tokens)
    throw_error("{}: got {}, expected more than system_prompt_tokens ({}) or 0 (no limit)",
                root.where("max_context_tokens"), s.max_context_tokens, s.shared_prefix_tokens);
  return s;
}

}  // namespace hisparse::sim

// @brief Conversation workloads (sim/workload/): the prefix block arithmetic of prompts that extend one another, the
// seeded multi-turn session and agentic generators, their strict YAML reader, the bundled YAMLs, and the sessions
// recovered from the Mooncake conversation trace's hash_ids chains.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "sim/serving/prefix/prefix_pages.h"
#include "sim/workload/conversation_generator.h"
#include "sim/workload/distribution.h"
#include "sim/workload/prefix_blocks.h"
#include "sim/workload/trace_sessions.h"
#include "sim/workload/workload.h"
#include "tests/sim/workload/temp_file.h"

using namespace hisparse::sim;
using hisparse::sim::test::write_temp;

namespace {

// Every field of every request, as text: two workloads print the same bytes only if they are the same.
std::string dump(const Workload& w) {
  std::ostringstream o;
  o << w.block_tokens << '\n';
  for (const RequestSpec& r : w.requests) {
    o << r.id << ' ' << r.arrival << ' ' << r.input_tokens << ' ' << r.output_tokens << ' ' << r.session_id << ' '
      << r.turn << ' ' << r.think_time << ' ';
    for (uint64_t b : r.prefix_blocks) o << b << ',';
    o << ' ';
    for (uint64_t b : r.sequence_blocks) o << b << ',';
    o << '\n';
  }
  return o.str();
}

// Two turns, every length fixed: turn 0 = 1,100 tokens answered with 300, turn 1 adds a 50-token message; sessions
// open at 0.01 per second for an hour (about 36 of them).
ConversationSpec two_turn_spec() {
  ConversationSpec s;
  s.rate_per_s = 1e-2;
  s.duration = 3600LL * 1'000'000'000;
  s.turns = Distribution::fixed(2);
  s.first_tokens = Distribution::fixed(1100);
  s.appended_tokens = Distribution::fixed(50);
  s.output_tokens = Distribution::fixed(300);
  s.think_time = Distribution::fixed(5e9);
  return s;
}

const std::string kSource = HISPARSE_SOURCE_DIR;

/// A Mooncake trace of `lines` ({time stamp ms, input, output, hash_ids}) read back, its sessions derived.
struct TraceLine {
  int64_t ms, input, output;
  std::vector<uint64_t> blocks;
};
std::pair<Workload, TraceSessions> sessions_of(const std::string& name, const std::vector<TraceLine>& lines) {
  std::string text;
  for (const TraceLine& l : lines) {
    text += "{\"timestamp\": " + std::to_string(l.ms) + ", \"input_length\": " + std::to_string(l.input) +
            ", \"output_length\": " + std::to_string(l.output) + ", \"hash_ids\": [";
    for (size_t i = 0; i < l.blocks.size(); ++i) text += (i ? ", " : "") + std::to_string(l.blocks[i]);
    text += "]}\n";
  }
  const std::string p = write_temp(name, text);
  Workload w = read_mooncake_trace(p);
  std::remove(p.c_str());
  const TraceSessions s = derive_sessions(w);
  return {w, s};
}

}  // namespace

TEST_CASE("prefix blocks: only whole blocks inside the agreeing tokens are shared") {
  // Expected (512-token blocks): a 1,100-token prompt has blocks [0, 512), [512, 1024), [1024, 1100); a prompt that
  // goes on past it shares floor(1100 / 512) = 2 (the partial third block now holds other tokens too).
  CHECK(shared_block_count(3, 1100, 1450, 1100, 512) == 2);
  // Expected: a base ending on a block boundary (1,024 tokens) shares both of its blocks.
  CHECK(shared_block_count(2, 1024, 1450, 1024, 512) == 2);
  // Expected: identical prompts share every block, the partial last one included (same tokens, same end).
  CHECK(shared_block_count(3, 1100, 1100, 1100, 512) == 3);
  // Expected: agreeing on 511 tokens shares nothing; an agreement longer than either prompt is an error.
  CHECK(shared_block_count(3, 1100, 1450, 511, 512) == 0);
  CHECK_THROWS_AS(shared_block_count(3, 1100, 1450, 1200, 512), hisparse::Error);
  BlockIdSource ids;
  for (int i = 0; i < 3; ++i) ids.next();  // ids 0, 1, 2 name the base's blocks
  // Expected: ceil(1450 / 512) = 3 blocks: the base's first two ids, then the next fresh id, 3.
  CHECK(extend_blocks({0, 1, 2}, 1100, 1450, 1100, 512, ids) == std::vector<uint64_t>{0, 1, 3});
}

TEST_CASE("sessions: a hand-made two-turn session repeats exactly the previous prompt's whole blocks") {
  ConversationSpec s = two_turn_spec();
  const Workload w = generate_conversations(s);
  REQUIRE(w.requests.size() >= 2);
  const RequestSpec& t0 = w.requests[0];
  const RequestSpec* t1 = nullptr;
  for (const RequestSpec& r : w.requests)
    if (r.session_id == t0.session_id && r.turn == 1) t1 = &r;
  REQUIRE(t1 != nullptr);
  // Expected: turn 0 is 1,100 tokens in ceil(1100 / 512) = 3 blocks, ids 0, 1, 2 (no system prompt).
  CHECK(t0.turn == 0);
  CHECK(t0.input_tokens == 1100);
  CHECK(t0.prefix_blocks == std::vector<uint64_t>{0, 1, 2});
  // Expected: turn 1 = 1,100 + 300 (the answer) + 50 (the new message) = 1,450 tokens, 3 blocks; it shares blocks
  // 0 and 1 and not block 2, which held tokens 1024-1099 of turn 0 and holds 1024-1449 of turn 1 (the answer's start).
  CHECK(t1->input_tokens == 1450);
  REQUIRE(t1->prefix_blocks.size() == 3);
  CHECK(t1->prefix_blocks[0] == 0);
  CHECK(t1->prefix_blocks[1] == 1);
  CHECK(t1->prefix_blocks[2] != 2);
  // Expected: released 5 s (the think time) after turn 0's arrival at the earliest; the think time travels with it.
  CHECK(t1->think_time == 5'000'000'000);
  CHECK(t1->arrival == t0.arrival + 5'000'000'000);
  CHECK(w.block_tokens == 512);
  // Expected: at 64-token pages the prefix cache's keys of the two prompts agree on exactly the 2 × 8 = 16 pages of
  // the shared blocks (turn 0 has 17 whole pages, turn 1 has 22: 1450 / 64 = 22.6).
  const auto k0 = prompt_pages(t0, 512, 64), k1 = prompt_pages(*t1, 512, 64);
  CHECK(k0.size() == 17);
  CHECK(k1.size() == 22);
  size_t common = 0;
  while (common < k0.size() && k0[common] == k1[common]) ++common;
  CHECK(common == 16);
}

TEST_CASE("sessions: a turn shares its previous turn's answer blocks, which the finished turn's cache keys name") {
  ConversationSpec s = two_turn_spec();
  s.output_tokens = Distribution::fixed(1000);
  const Workload w = generate_conversations(s);
  const RequestSpec& t0 = w.requests[0];
  const RequestSpec* t1 = nullptr;
  for (const RequestSpec& r : w.requests)
    if (r.session_id == t0.session_id && r.turn == 1) t1 = &r;
  REQUIRE(t1 != nullptr);
  // Expected: turn 0's prompt is blocks 0 1 2 (1,100 tokens); its prompt + answer (2,100 tokens) is 5 blocks: the
  // prompt's 2 whole ones, then 3 fresh ones (block 2 of the prompt was partial, so the answer's first block is new).
  CHECK(t0.prefix_blocks == std::vector<uint64_t>{0, 1, 2});
  REQUIRE(t0.sequence_blocks.size() == 5);
  CHECK(t0.sequence_blocks[0] == 0);
  CHECK(t0.sequence_blocks[1] == 1);
  CHECK(t0.sequence_blocks[2] != 2);
  // Expected: turn 1 (2,100 + 50 = 2,150 tokens) shares the sequence's first floor(2100 / 512) = 4 blocks, two of
  // them the answer's, and has one block of its own.
  CHECK(t1->input_tokens == 2150);
  REQUIRE(t1->prefix_blocks.size() == 5);
  CHECK(std::equal(t1->prefix_blocks.begin(), t1->prefix_blocks.begin() + 4, t0.sequence_blocks.begin()));
  CHECK(t1->prefix_blocks[4] != t0.sequence_blocks[4]);
  // Expected at 64-token pages: turn 0 inserts at its finish the whole pages of 1,100 + 1,000 − 1 = 2,099 written
  // tokens: 4 blocks × 8 = 32 (the fifth block holds 51 tokens, no whole page); turn 1's prompt keys agree with those
  // 32 (against 16 if only the prompt were keyed).
  const auto done = finished_pages(t0, 512, 64), k1 = prompt_pages(*t1, 512, 64);
  CHECK(done.size() == 32);
  CHECK(k1.size() == 33);
  size_t common = 0;
  while (common < done.size() && done[common] == k1[common]) ++common;
  CHECK(common == 32);
  // A request without sequence_blocks inserts its prompt's pages.
  RequestSpec plain = t0;
  plain.sequence_blocks.clear();
  CHECK(finished_pages(plain, 512, 64) == prompt_pages(plain, 512, 64));
}

TEST_CASE("sessions: a conversation ends before a turn that would not fit the context window") {
  ConversationSpec s = two_turn_spec();
  s.turns = Distribution::fixed(10);
  s.first_tokens = Distribution::fixed(1000);
  s.appended_tokens = Distribution::fixed(100);
  s.output_tokens = Distribution::fixed(100);
  s.max_context_tokens = 1500;
  const Workload w = generate_conversations(s);
  // Expected: prompt + output per turn is 1,100, 1,300, 1,500, then 1,700 > 1,500: three turns per session.
  std::map<int64_t, int> turns;
  for (const RequestSpec& r : w.requests) ++turns[r.session_id];
  REQUIRE(!turns.empty());
  for (const auto& [session, n] : turns) CHECK(n == 3);
}

TEST_CASE("sessions and agentic runs: the same seed gives the same bytes, another seed other ones") {
  for (const char* name : {"multiturn_chat", "agentic_coding"}) {
    const std::string path = kSource + "/scenarios/workloads/" + name + ".yaml";
    const Workload a = load_workload(path), b = load_workload(path);
    // Expected: two loads of one YAML are identical to the byte; both have requests.
    REQUIRE(!a.requests.empty());
    CHECK(dump(a) == dump(b));
  }
  ConversationSpec s = two_turn_spec();
  s.turns.kind = Distribution::Kind::kGeometric;
  s.turns.mean = 3;
  s.turns.min = 1;
  s.turns.max = 50;
  s.seed = 7;
  const std::string seven = dump(generate_conversations(s));
  CHECK(seven == dump(generate_conversations(s)));
  s.seed = 8;
  // Expected: another seed draws other start times.
  CHECK(seven != dump(generate_conversations(s)));
}

TEST_CASE("agentic: the system prompt's whole blocks carry the same ids in every run") {
  const Workload w = load_workload(kSource + "/scenarios/workloads/agentic_coding.yaml");
  // Expected: system_prompt_tokens 8192 = 16 whole 512-token blocks, ids 0-15 at the head of every request of every
  // run; block 16 (the task onward) differs between runs.
  std::set<int64_t> sessions;
  std::map<int64_t, uint64_t> block16;
  for (const RequestSpec& r : w.requests) {
    REQUIRE(r.prefix_blocks.size() > 16);
    for (uint64_t b = 0; b < 16; ++b) CHECK(r.prefix_blocks[b] == b);
    if (r.turn == 0) block16[r.session_id] = r.prefix_blocks[16];
    sessions.insert(r.session_id);
  }
  CHECK(sessions.size() >= 2);
  std::set<uint64_t> distinct;
  for (const auto& [session, b] : block16) distinct.insert(b);
  CHECK(distinct.size() == block16.size());
  // Expected: a system prompt of 1,000 tokens shares only its whole block (block 0); its partial block is followed by
  // each run's own task, so block 1 differs between runs.
  ConversationSpec s = two_turn_spec();
  s.kind = "agentic";
  s.shared_prefix_tokens = 1000;
  const Workload small = generate_conversations(s);
  std::set<uint64_t> second;
  int firsts = 0;
  for (const RequestSpec& r : small.requests) {
    CHECK(r.prefix_blocks[0] == 0);
    if (r.turn == 0) {
      ++firsts;
      second.insert(r.prefix_blocks[1]);
    }
  }
  CHECK(firsts >= 2);
  CHECK(static_cast<int>(second.size()) == firsts);
}

TEST_CASE("conversation YAML: a bad field names the file, the field, the value and what was expected") {
  const std::string head = "type: sessions\nrate: 1\nduration: 10s\n";
  const std::string dists = "first_message_tokens: 100\nuser_message_tokens: 10\noutput_tokens: 50\nthink_time: 1s\n";
  struct Case {
    std::string yaml, message;
  };
  const Case cases[] = {
      // Expected: a required distribution that is missing is named.
      {head + dists, "missing required key 'turns'"},
      // Expected: an unknown distribution kind lists the known ones.
      {head + dists + "turns: {distribution: poisson, mean: 2}\n", "turns.distribution"},
      // Expected: quantile probabilities must rise; the offending point is named by its index.
      {head + dists + "turns: {distribution: quantiles, points: [[0, 1], [0.5, 3], [0.4, 4], [1, 5]]}\n",
       "turns.points[2]: got [0.4, 4] after [0.5, 3], expected probabilities increasing"},
      // Expected: a table needs as many weights as values.
      {head + dists + "turns: {distribution: table, values: [1, 2], weights: [1]}\n",
       "got 2 values and 1 weights"},
      // Expected: a think time below 0 is out of range.
      {head + "turns: 2\nfirst_message_tokens: 100\nuser_message_tokens: 10\noutput_tokens: 50\nthink_time: -1s\n",
       "think_time"},
      // Expected: a misspelt key is refused.
      {head + dists + "turns: 2\nthink_tme: 1s\n", "think_tme"},
      // Expected: a context window no longer than the system prompt is refused.
      {head + dists + "turns: 2\nsystem_prompt_tokens: 4096\nmax_context_tokens: 4000\n",
       "max_context_tokens: got 4000, expected more than system_prompt_tokens (4096)"},
      // Expected: an agentic workload must say how long its shared system prompt is.
      {"type: agentic\nrate: 1\nsteps: 3\ntask_tokens: 100\naction_tokens: 50\ntool_output_tokens: 100\n"
       "tool_latency: 1s\n",
       "missing required key 'system_prompt_tokens'"},
      // Expected: derive_sessions belongs to Mooncake traces, not to Azure's (which name no blocks).
      {"type: azure\nfile: x.csv\nderive_sessions: true\n", "derive_sessions"},
  };
  for (const Case& c : cases) {
    const std::string path = write_temp("wl_conv_bad.yaml", c.yaml);
    CAPTURE(c.yaml);
    CHECK_THROWS_WITH_AS(load_workload(path), doctest::Contains(c.message.c_str()), hisparse::Error);
    CHECK_THROWS_WITH_AS(load_workload(path), doctest::Contains("wl_conv_bad.yaml"), hisparse::Error);
    std::remove(path.c_str());
  }
}

TEST_CASE("conversation YAML: time_scale shrinks think times with the arrivals") {
  const std::string yaml = "type: sessions\nrate: 0.01\nduration: 3600s\nturns: 2\nfirst_message_tokens: 100\n"
                           "user_message_tokens: 10\noutput_tokens: 50\nthink_time: 8s\n";
  const std::string p1 = write_temp("wl_scale1.yaml", yaml), p2 = write_temp("wl_scale2.yaml", yaml + "time_scale: 0.25\n");
  const Workload a = load_workload(p1), b = load_workload(p2);
  REQUIRE(a.requests.size() == b.requests.size());
  REQUIRE(a.requests.size() >= 2);
  // Expected: at time_scale 0.25 every arrival is a quarter (rounded to the ns) and a turn's 8 s think time is 2 s.
  for (size_t i = 0; i < a.requests.size(); ++i) {
    CHECK(b.requests[i].arrival == std::llround(static_cast<double>(a.requests[i].arrival) * 0.25));
    CHECK(b.requests[i].think_time == (a.requests[i].turn == 0 ? 0 : 2'000'000'000));
  }
  std::remove(p1.c_str());
  std::remove(p2.c_str());
}

TEST_CASE("distributions: draws stay in range and follow their parameters") {
  std::mt19937_64 rng(3);
  Distribution q;
  q.kind = Distribution::Kind::kQuantiles;
  q.points = {{0, 10}, {0.5, 100}, {1, 1000}};
  q.min = 1;
  q.max = 1e9;
  Distribution g;
  g.kind = Distribution::Kind::kGeometric;
  g.mean = 4;
  g.min = 1;
  g.max = 1e9;
  constexpr int kDraws = 20000;
  int below_median = 0;
  double sum = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double v = q.draw(rng);
    CHECK(v >= 10);
    CHECK(v <= 1000);
    below_median += v < 100;
    sum += g.draw_count(rng);
  }
  // Expected: half the quantile draws fall below the 0.5 point (binomial σ = 0.5 × sqrt(20000) ≈ 71: ±5 σ).
  CHECK(below_median > kDraws / 2 - 355);
  CHECK(below_median < kDraws / 2 + 355);
  // Expected: the geometric draws average their mean 4 (σ of one draw sqrt(12) ≈ 3.46; of the mean 0.0245: ±5 σ).
  CHECK(sum / kDraws > 4 - 0.125);
  CHECK(sum / kDraws < 4 + 0.125);
}

TEST_CASE("trace sessions: a hand-made trace's block chains become sessions and turns") {
  // A: blocks 0 1 2; B: 0 3 (only the block everyone shares: a new conversation); C: 0 1 2 4 (extends A);
  // D: 0 1 5 (shares 0 1 with C, the latest request through them: the same conversation, an edited turn).
  const auto [w, s] = sessions_of("wl_sessions.jsonl", {{0, 1100, 9, {0, 1, 2}},
                                                        {1, 600, 9, {0, 3}},
                                                        {2, 2000, 9, {0, 1, 2, 4}},
                                                        {3, 1500, 9, {0, 1, 5}}});
  // Expected: block 0 is common to all; two sessions (A C D, and B); C and D continue.
  CHECK(s.common_blocks == 1);
  CHECK(s.sessions == 2);
  CHECK(s.continuations == 2);
  CHECK(w.requests[0].session_id == 0);
  CHECK(w.requests[1].session_id == 1);
  CHECK(w.requests[2].session_id == 0);
  CHECK(w.requests[2].turn == 1);
  CHECK(w.requests[3].session_id == 0);
  CHECK(w.requests[3].turn == 2);
  // Expected: no think time is invented; arrivals stay the time stamps (3 ms).
  CHECK(w.requests[3].think_time == 0);
  CHECK(w.requests[3].arrival == 3'000'000);
}

TEST_CASE("trace sessions: a continuation that resends the whole prompt keys the answer of the turn it continues") {
  // A: 1,100 tokens answered with 1,000, blocks 0 1 2; B: an unrelated prompt; C: 2,200 tokens, blocks 0 1 3 4 5,
  // continuing A past A's two whole blocks; D: 2,000 tokens answered with 9, blocks 0 1 3 6, continuing C three
  // blocks deep, short of C's four whole ones.
  const auto [w, s] = sessions_of("wl_answers.jsonl", {{0, 1100, 1000, {0, 1, 2}},
                                                       {1, 300, 9, {9}},
                                                       {2, 2200, 9, {0, 1, 3, 4, 5}},
                                                       {3, 2000, 9, {0, 1, 3, 6}}});
  // Expected: A's prompt + answer (2,100 tokens) is C's first ceil(2100 / 512) = 5 blocks; C's answer is not keyed
  // (D resends 3 of C's 4 whole blocks), nor B's or D's (nothing continues them).
  CHECK(s.answers_keyed == 1);
  CHECK(w.requests[0].sequence_blocks == std::vector<uint64_t>{0, 1, 3, 4, 5});
  CHECK(w.requests[1].sequence_blocks.empty());
  CHECK(w.requests[2].sequence_blocks.empty());
  CHECK(w.requests[3].sequence_blocks.empty());
}

TEST_CASE("trace sessions: the Mooncake conversation trace") {
  const Workload w = load_workload(kSource + "/scenarios/workloads/mooncake_conversation_sessions.yaml");
  // Expected: 7,373 sessions, as scripts/mooncake_sessions.py (an independent implementation in Python) counts them
  // in the same file; turns number 0, 1, 2, … within each session in arrival order.
  std::map<int64_t, int32_t> next_turn;
  bool consecutive = true;
  for (const RequestSpec& r : w.requests) {
    consecutive = consecutive && r.turn == next_turn[r.session_id];
    ++next_turn[r.session_id];
  }
  CHECK(next_turn.size() == 7373);
  CHECK(consecutive);
  // Expected: 2,314 requests have their answer keyed by a later turn's blocks, as scripts/mooncake_sessions.py counts
  // them by the same rule.
  CHECK(std::count_if(w.requests.begin(), w.requests.end(),
                      [](const RequestSpec& r) { return !r.sequence_blocks.empty(); }) == 2314);
  CHECK(w.requests.size() == 12031);
}

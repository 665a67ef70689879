// @brief Request shards of a replay and their exact merge (replay_shards.h).
#include "sim/sweep/replay_shards.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"

namespace hisparse::sim::sweep {

std::vector<std::pair<int64_t, int64_t>> request_shards(int64_t requests, int64_t per_shard) {
  if (per_shard < 1) throw_error("replay shards: {} requests per shard (expected >= 1)", per_shard);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t a = 0; a < requests; a += per_shard) out.emplace_back(a, std::min(per_shard, requests - a));
  if (out.empty()) out.emplace_back(0, 0);
  return out;
}

namespace {

class RequestRange : public traces::TraceSource {
 public:
  RequestRange(std::unique_ptr<traces::TraceSource> inner, int64_t first, int64_t count) : inner_(std::move(inner)) {
    const std::vector<int64_t> all = inner_->request_ids();
    if (first < 0 || count < 0 || first + count > static_cast<int64_t>(all.size()))
      throw_error("trace {}: request shard [{}, {}) is outside its {} requests", inner_->meta().source, first,
                  first + count, all.size());
    ids_.assign(all.begin() + first, all.begin() + first + count);
    if (!ids_.empty()) inner_->seek_request(ids_.front());
  }
  const traces::TraceMeta& meta() const override { return inner_->meta(); }
  bool next(traces::StepRecord& out) override {
    if (done_ || ids_.empty()) return false;
    if (!inner_->next(out)) return done_ = true, false;
    // Requests are grouped: the shard ends where its (count + 1)-th request would begin. Counting request changes
    // rather than looking ids up keeps a trace that repeats an id elsewhere from leaking into the shard.
    if (!started_ || out.request_id != current_) {
      started_ = true;
      current_ = out.request_id;
      if (++seen_ > static_cast<int64_t>(ids_.size())) return done_ = true, false;
    }
    return true;
  }
  std::vector<int64_t> request_ids() override { return ids_; }
  void seek_request(int64_t request_id) override {
    if (std::find(ids_.begin(), ids_.end(), request_id) == ids_.end())
      throw_error("trace {}: request {} is not in this shard", inner_->meta().source, request_id);
    inner_->seek_request(request_id);
    seen_ = static_cast<int64_t>(std::find(ids_.begin(), ids_.end(), request_id) - ids_.begin());
    started_ = false;
    done_ = false;
  }

 private:
  std::unique_ptr<traces::TraceSource> inner_;
  std::vector<int64_t> ids_;
  int64_t current_ = 0, seen_ = 0;
  bool started_ = false, done_ = false;
};

void add_hist(std::vector<int64_t>& into, const std::vector<int64_t>& part) {
  if (into.size() < part.size()) into.resize(part.size(), 0);
  for (size_t i = 0; i < part.size(); ++i) into[i] += part[i];
}

std::string sparse(const std::vector<int64_t>& h) {
  std::string s = fmt::format("{}", h.size());
  for (size_t i = 0; i < h.size(); ++i)
    if (h[i]) s += fmt::format(" {}:{}", i, h[i]);
  return s;
}

}  // namespace

std::unique_ptr<traces::TraceSource> request_range_source(std::unique_ptr<traces::TraceSource> inner, int64_t first,
                                                          int64_t count) {
  return std::make_unique<RequestRange>(std::move(inner), first, count);
}

void merge_replay_result(ReplayResult& into, const ReplayResult& part) {
  if (into.configs.empty()) {
    ReplayResult empty;
    empty.meta = part.meta;
    for (const auto& c : part.configs) {
      ReplayConfigStats s;
      s.policy = c.policy;
      s.buffer_size = c.buffer_size;
      empty.configs.push_back(std::move(s));
    }
    into = std::move(empty);
  }
  if (into.configs.size() != part.configs.size())
    throw_error("replay merge: {} configurations against {}", into.configs.size(), part.configs.size());
  for (size_t c = 0; c < part.configs.size(); ++c) {
    ReplayConfigStats& a = into.configs[c];
    const ReplayConfigStats& b = part.configs[c];
    if (a.policy != b.policy || a.buffer_size != b.buffer_size)
      throw_error("replay merge: configuration {} is {} H={} in one shard and {} H={} in another", c, a.policy,
                  a.buffer_size, b.policy, b.buffer_size);
    a.selected += b.selected;
    a.hits += b.hits;
    a.newest_hits += b.newest_hits;
    a.misses += b.misses;
    a.h2d_bytes += b.h2d_bytes;
    a.step_layers += b.step_layers;
    a.fast_path_step_layers += b.fast_path_step_layers;
    a.decode_steps += b.decode_steps;
    add_hist(a.miss_hist, b.miss_hist);
    add_hist(a.step_miss_hist, b.step_miss_hist);
    add_hist(a.cold_miss_hist, b.cold_miss_hist);
    add_hist(a.cold_step_miss_hist, b.cold_step_miss_hist);
  }
  into.requests += part.requests;
  into.decode_steps += part.decode_steps;
  into.entries += part.entries;
  into.lookahead_cut_requests += part.lookahead_cut_requests;
  into.lookahead_steps = std::max(into.lookahead_steps, part.lookahead_steps);
  into.step_seq_lens.insert(into.step_seq_lens.end(), part.step_seq_lens.begin(), part.step_seq_lens.end());
  into.step_index.insert(into.step_index.end(), part.step_index.begin(), part.step_index.end());
}

std::string replay_counters_text(const ReplayResult& r) {
  std::string s = fmt::format("replay-counters 2\nrequests {}\ndecode_steps {}\nentries {}\nlookahead_cut_requests {}\n"
                              "lookahead_steps {}\nconfigs {}\n",
                              r.requests, r.decode_steps, r.entries, r.lookahead_cut_requests, r.lookahead_steps,
                              r.configs.size());
  for (const auto& c : r.configs) {
    s += fmt::format("config {} {} {} {} {} {} {} {} {} {}\n", c.policy, c.buffer_size, c.selected, c.hits,
                     c.newest_hits, c.misses, c.h2d_bytes, c.step_layers, c.fast_path_step_layers, c.decode_steps);
    s += "miss_hist " + sparse(c.miss_hist) + "\n";
    s += "step_miss_hist " + sparse(c.step_miss_hist) + "\n";
    s += "cold_miss_hist " + sparse(c.cold_miss_hist) + "\n";
    s += "cold_step_miss_hist " + sparse(c.cold_step_miss_hist) + "\n";
  }
  return s;
}

ReplayResult parse_replay_counters(const std::string& text, const std::string& where) {
  std::istringstream in(text);
  auto bad = [&](const std::string& what) {
    throw_error("{}: malformed replay counters ({}); expected the text replay_counters_text() writes", where, what);
  };
  auto expect = [&](const char* key) {
    std::string k;
    if (!(in >> k) || k != key) bad(fmt::format("'{}' where '{}' belongs", k, key));
  };
  auto read_int = [&](const char* key) {
    expect(key);
    int64_t v = 0;
    if (!(in >> v)) bad(fmt::format("no integer after '{}'", key));
    return v;
  };
  auto read_hist = [&](const char* key, std::vector<int64_t>& h) {
    expect(key);
    int64_t n = 0;
    if (!(in >> n) || n < 0 || n > (int64_t{1} << 32)) bad(fmt::format("bad size of '{}'", key));
    h.assign(static_cast<size_t>(n), 0);
    std::string rest;
    std::getline(in, rest);
    std::istringstream items(rest);
    std::string item;
    while (items >> item) {
      std::istringstream pair(item);
      int64_t i = -1, v = 0;
      char colon = 0;
      if (!(pair >> i >> colon >> v) || colon != ':' || !pair.eof()) bad(fmt::format("'{}' in '{}'", item, key));
      if (i < 0 || i >= n) bad(fmt::format("index {} outside '{}' of size {}", i, key, n));
      h[static_cast<size_t>(i)] = v;
    }
  };
  ReplayResult r;
  // Version 1 predates the cold-start histograms: its counts read as all steady state.
  const int64_t version = read_int("replay-counters");
  if (version != 1 && version != 2) bad("unknown version");
  r.requests = read_int("requests");
  r.decode_steps = read_int("decode_steps");
  r.entries = read_int("entries");
  r.lookahead_cut_requests = read_int("lookahead_cut_requests");
  r.lookahead_steps = read_int("lookahead_steps");
  const int64_t n = read_int("configs");
  if (n < 0 || n > 4096) bad(fmt::format("{} configurations", n));
  for (int64_t c = 0; c < n; ++c) {
    ReplayConfigStats s;
    expect("config");
    if (!(in >> s.policy >> s.buffer_size >> s.selected >> s.hits >> s.newest_hits >> s.misses >> s.h2d_bytes >>
          s.step_layers >> s.fast_path_step_layers >> s.decode_steps))
      bad(fmt::format("configuration {}", c));
    read_hist("miss_hist", s.miss_hist);
    read_hist("step_miss_hist", s.step_miss_hist);
    if (version >= 2) {
      read_hist("cold_miss_hist", s.cold_miss_hist);
      read_hist("cold_step_miss_hist", s.cold_step_miss_hist);
    }
    r.configs.push_back(std::move(s));
  }
  std::string extra;
  if (in >> extra) bad(fmt::format("trailing '{}'", extra));
  return r;
}

}  // namespace hisparse::sim::sweep

// @brief Concurrency sweep tables and the crossover (see sweep.h).
#include "sim/serving/concurrency_sweep.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/error.h"
#include "core/io/output_file.h"

namespace hisparse::sim {

namespace {

struct Pair {
  const SweepPoint* full = nullptr;
  const SweepPoint* hs = nullptr;
};

std::map<int32_t, Pair> by_level(const std::vector<SweepPoint>& points) {
  std::map<int32_t, Pair> m;
  for (const auto& p : points)
    if (p.mode != KvMode::kDynamic) (p.mode == KvMode::kFull ? m[p.concurrency].full : m[p.concurrency].hs) = &p;
  return m;
}

std::string ms(double v) { return v < 0 ? std::string("n/m") : fmt::format("{:.1f}", v); }

}  // namespace

int32_t find_crossover(const std::vector<SweepPoint>& points, double tpot_slo_ms) {
  int32_t cross = -1;
  for (const auto& [level, p] : by_level(points)) {
    // A level where HiSparse misses the SLO is no operating point: more tokens/s there is no reason to choose it.
    if (!p.full || !p.hs || !(p.hs->tpot_p50_ms <= tpot_slo_ms)) continue;
    if (p.hs->tokens_per_s > p.full->tokens_per_s) {
      if (cross < 0) cross = level;
    } else {
      cross = -1;  // the lead must hold at every higher level
    }
  }
  return cross;
}

std::vector<int32_t> parse_concurrency_levels(const std::string& text, const std::string& flag) {
  std::vector<int32_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > (1 << 20))
      throw_error("{} '{}': '{}' is not a concurrency in [1, 1048576]", flag, text, item);
    if (!out.empty() && v <= out.back()) throw_error("{} '{}': levels must ascend ({} after {})", flag, text, v, out.back());
    out.push_back(static_cast<int32_t>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::string sweep_text(const SweepTable& t) {
  std::string o = fmt::format("concurrency sweep (modelled): {} · {} · closed-loop clients, think time {:.3f} s, overlap {}\n",
                              t.scenario, t.workload, ns_to_seconds(t.think_time), t.overlap);
  o += fmt::format("{:>8} | {:>10} {:>9} {:>9} {:>6} | {:>10} {:>9} {:>9} {:>6} {:>7} | {:>7}\n", "clients", "full tok/s",
                   "TPOT p50", "TTFT p50", "batch", "hisp tok/s", "TPOT p50", "TTFT p50", "batch", "aborts", "hs/full");
  for (const auto& [level, p] : by_level(t.points)) {
    auto cols = [](const SweepPoint* s) {
      return s ? fmt::format("{:>10.0f} {:>9} {:>9} {:>6.1f}", s->tokens_per_s, ms(s->tpot_p50_ms), ms(s->ttft_p50_ms), s->batch_per_rank)
               : fmt::format("{:>10} {:>9} {:>9} {:>6}", "-", "-", "-", "-");
    };
    const std::string ratio = p.full && p.hs && p.full->tokens_per_s > 0 ? fmt::format("{:.2f}x", p.hs->tokens_per_s / p.full->tokens_per_s) : "-";
    o += fmt::format("{:>8} | {} | {} {:>7} | {:>7}{}\n", level, cols(p.full), cols(p.hs),
                     p.hs ? fmt::format("{}", p.hs->host_alloc_failures) : "-", ratio,
                     level == t.crossover ? "  <- crossover" : "");
  }
  // Dynamic residency (--mode dynamic or all): its own lines, beside the full/HiSparse pair the crossover compares.
  for (const auto& p : t.points)
    if (p.mode == KvMode::kDynamic)
      o += fmt::format("{:>8} | dynamic residency {:>10.0f} tok/s, TPOT p50 {}, TTFT p50 {}, batch {:.1f}\n", p.concurrency,
                       p.tokens_per_s, ms(p.tpot_p50_ms), ms(p.ttft_p50_ms), p.batch_per_rank);
  // The steady window of each level (every client in flight, ramp-down apart): what advise's goodput compares with.
  std::string steady;
  for (const auto& [level, p] : by_level(t.points))
    steady += fmt::format("{}{}: full {} / hisp {}", steady.empty() ? "" : "; ", level,
                          p.full ? fmt::format("{:.0f}", p.full->steady_tokens_per_s) : "-",
                          p.hs ? fmt::format("{:.0f}", p.hs->steady_tokens_per_s) : "-");
  o += "steady tok/s (steps while every client had a request in flight): " + steady + "\n";
  o += t.crossover > 0 ? fmt::format("crossover: HiSparse gives more decode tokens/s than full KV from {} concurrent clients on, at "
                                     "every level where its TPOT p50 meets the {:g} ms SLO\n", t.crossover, t.tpot_slo_ms)
                       : fmt::format("crossover: none in this range (HiSparse does not keep a lead over full KV at the levels "
                                     "where its TPOT p50 meets the {:g} ms SLO)\n", t.tpot_slo_ms);
  o += "TPOT/TTFT in ms (p50; TPOT from when the request decodes, queueing apart: wait in sweep.json/csv); n/m = not "
       "modelled (PD without a prefill section); batch = mean requests per dp rank\n";
  return o;
}

std::string sweep_json(const SweepTable& t) {
  using Layout = JsonWriter::Layout;
  JsonWriter j(2);
  j.begin_object().member("scenario", t.scenario).member("workload", t.workload).member("overlap", t.overlap);
  j.key("think_time_s").fixed(ns_to_seconds(t.think_time), 6).member("figures_kind", "modelled");
  j.key("tpot_slo_ms").general(t.tpot_slo_ms, 6).key("crossover");
  if (t.crossover > 0) j.number(t.crossover); else j.null();
  j.key("points").begin_array();
  // Figures at six significant digits; a TTFT below zero is not modelled (PD without a prefill section): null.
  auto ttft = [&j](const char* key, double ms) {
    j.key(key);
    if (ms < 0) j.null(); else j.general(ms, 6);
  };
  for (const auto& p : t.points) {
    j.begin_object(Layout::kInline).member("concurrency", p.concurrency).member("mode", to_string(p.mode));
    j.key("tokens_per_s").general(p.tokens_per_s, 6).key("tpot_p50_ms").general(p.tpot_p50_ms, 6);
    j.key("tpot_p99_ms").general(p.tpot_p99_ms, 6).key("wait_p50_ms").general(p.wait_p50_ms, 6);
    j.key("wait_p99_ms").general(p.wait_p99_ms, 6);
    ttft("ttft_p50_ms", p.ttft_p50_ms);
    ttft("ttft_p99_ms", p.ttft_p99_ms);
    j.key("batch_per_rank").general(p.batch_per_rank, 6).member("finished", p.finished).member("rejected", p.rejected);
    j.member("host_alloc_failures", p.host_alloc_failures).key("steady_tokens_per_s").general(p.steady_tokens_per_s, 6);
    j.end_object();
  }
  j.end_array().end_object();
  return j.str() + "\n";
}

std::string sweep_csv(const SweepTable& t) {
  std::string o = "concurrency,mode,tokens_per_s,tpot_p50_ms,tpot_p99_ms,wait_p50_ms,wait_p99_ms,ttft_p50_ms,ttft_p99_ms,batch_per_rank,finished,rejected,host_alloc_failures,steady_tokens_per_s\n";
  for (const auto& p : t.points)
    o += fmt::format("{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{},{:.6g}\n", p.concurrency, to_string(p.mode),
                     p.tokens_per_s, p.tpot_p50_ms, p.tpot_p99_ms, p.wait_p50_ms, p.wait_p99_ms, p.ttft_p50_ms, p.ttft_p99_ms, p.batch_per_rank, p.finished, p.rejected,
                     p.host_alloc_failures, p.steady_tokens_per_s);
  return o;
}

}  // namespace hisparse::sim

// @brief Production counters → intervals → a one-column-per-H/K miss surface with the MissFitter's n/H bins.
#include "sim/miss/counters/metrics_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <tuple>

#include "core/io/json_writer.h"
#include "core/error.h"
#include "core/io/read_file.h"
#include "sim/miss/miss_fitter.h"
#include "core/io/output_file.h"

namespace hisparse::sim::counters {
namespace {

std::optional<std::string> label(const Labels& labels, const std::string& name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return std::nullopt;
}

std::optional<int32_t> int_label(const PromSample& s, const std::string& name, const std::string& file) {
  const auto v = label(s.labels, name);
  if (!v) return std::nullopt;
  char* end = nullptr;
  const long x = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || end != v->c_str() + v->size() || x < 1 || x > (1 << 24))
    throw_error("{}:{}: label {}=\"{}\": expected an integer in 1..{}", file, s.line, name, *v, 1 << 24);
  return static_cast<int32_t>(x);
}

/// The one name of `names` present in the document (several at once would be counted twice: an error).
std::string pick_name(const PromDocument& doc, const std::vector<std::string>& names) {
  std::string found;
  for (const auto& sc : doc.scrapes) {
    for (const auto& s : sc.samples) {
      if (std::find(names.begin(), names.end(), s.name) == names.end() || s.name == found) continue;
      if (!found.empty())
        throw_error("{}:{}: both {} and {} are present; expected one name per counter", doc.file, s.line, found,
                    s.name);
      found = s.name;
    }
  }
  return found;
}

using GroupKey = std::tuple<int32_t, int32_t, std::string>;  // (H, K, index group) from labels; 0 / "" = not labelled

std::string fixed(double v, int digits) { return fmt::format("{:.{}f}", v, digits); }

std::string span_text(const MetricsSource& s) {
  if (!s.t_first_s || !s.t_last_s) return "no timestamps";
  return fmt::format("{:.0f} s (unix {:.0f}..{:.0f})", *s.t_last_s - *s.t_first_s, *s.t_first_s, *s.t_last_s);
}

}  // namespace

const std::vector<std::string>& hits_metric_names() {
  static const std::vector<std::string> n = {"vllm:hisparse_cache_hits_total", "vllm:hisparse_cache_hits",
                                             "vllm:hisparse_hits_total",       "vllm:hisparse_hits",
                                             "hisparse_cache_hits_total",      "hisparse_cache_hits"};
  return n;
}
const std::vector<std::string>& misses_metric_names() {
  static const std::vector<std::string> n = {"vllm:hisparse_cache_misses_total", "vllm:hisparse_cache_misses",
                                             "hisparse_cache_misses_total", "hisparse_cache_misses"};
  return n;
}
const std::vector<std::string>& bytes_metric_names() {
  static const std::vector<std::string> n = {
      "vllm:hisparse_host_to_device_bytes_total", "vllm:hisparse_host_to_device_bytes",
      "hisparse_host_to_device_bytes_total", "hisparse_host_to_device_bytes"};
  return n;
}

const std::vector<std::string>& lookups_metric_names() {
  static const std::vector<std::string> n = {"vllm:hisparse_lookups_total", "vllm:hisparse_lookups"};
  return n;
}
const std::vector<std::string>& l3_lookups_metric_names() {
  static const std::vector<std::string> n = {"vllm:hisparse_l3_lookups_total", "vllm:hisparse_l3_lookups"};
  return n;
}

namespace {

/// The counter names a document exports, one of each family (empty: not exported).
struct CounterNames {
  std::string hits, misses, bytes, lookups, l3;
};

CounterNames pick_counter_names(const PromDocument& doc, const MetricsFitOptions& options) {
  CounterNames n{pick_name(doc, hits_metric_names()), pick_name(doc, misses_metric_names()),
                 pick_name(doc, bytes_metric_names()), pick_name(doc, lookups_metric_names()),
                 pick_name(doc, l3_lookups_metric_names())};
  if (!n.lookups.empty() && !n.misses.empty())
    throw_error("{}: both {} and {} are present; expected one of them (misses = lookups − hits)", doc.file,
                n.misses, n.lookups);
  if (n.hits.empty() || (n.misses.empty() && n.lookups.empty() && n.bytes.empty()))
    throw_error("{}: no HiSparse counters: expected {} and {}, or vllm:hisparse_hits and {} (or {} with --row-bytes)",
                doc.file, hits_metric_names()[0], misses_metric_names()[0], lookups_metric_names()[1],
                bytes_metric_names()[0]);
  if (n.misses.empty() && n.lookups.empty() && !options.row_bytes)
    throw_error("{}: only {} is exported: misses are bytes / row bytes, so --row-bytes is needed", doc.file,
                n.bytes);
  return n;
}

// Deltas are taken per series (a counter resets per process) and summed per (H, K) group afterwards.
enum CounterKind { kHits, kMisses, kBytes, kLookups, kL3 };
struct Series {
  CounterKind kind;
  GroupKey group;
  double value;
};
struct Snapshot {
  std::map<std::pair<std::string, Labels>, Series> series;
  std::optional<double> seq_len, t_s;
  int64_t line = 0;
};

/// One scrape's HiSparse series (and mean context length); empty series: a scrape of another exporter.
Snapshot snapshot_of(const PromDocument& doc, const PromScrape& sc, const MetricsFitOptions& options,
                     const CounterNames& names) {
  Snapshot snap;
  snap.line = sc.first_line;
  if (sc.timestamp_ms) snap.t_s = static_cast<double>(*sc.timestamp_ms) / 1000.0;
  double n_sum = 0;
  int n_count = 0;
  for (const PromSample& s : sc.samples) {
    if (!options.seq_len_metric.empty() && s.name == options.seq_len_metric) {
      if (!(s.value >= 0) || !std::isfinite(s.value))
        throw_error("{}:{}: {} = {}: expected a finite mean context length >= 0", doc.file, s.line, s.name, s.value);
      n_sum += s.value;
      ++n_count;
      continue;
    }
    const bool h = s.name == names.hits, m = s.name == names.misses, b = s.name == names.bytes;
    const bool lk = !names.lookups.empty() && s.name == names.lookups, l3 = !names.l3.empty() && s.name == names.l3;
    if (!h && !m && !b && !lk && !l3) continue;
    if (!options.model.empty() && label(s.labels, "model_name") != options.model) continue;
    if (!std::isfinite(s.value) || s.value < 0)
      throw_error("{}:{}: {} = {}: expected a finite counter value >= 0", doc.file, s.line, s.name, s.value);
    const GroupKey key{int_label(s, "device_buffer_size", doc.file).value_or(0),
                       int_label(s, "top_k", doc.file).value_or(0), label(s.labels, "index_group").value_or("")};
    snap.series[{s.name, s.labels}] = Series{h ? kHits : m ? kMisses : b ? kBytes : lk ? kLookups : kL3, key, s.value};
  }
  if (n_count > 0) snap.seq_len = n_sum / n_count;
  return snap;
}

/// The counter intervals between two consecutive snapshots, one per (H, K, index group) with a hits counter.
void add_intervals(const PromDocument& doc, const Snapshot& a, const Snapshot& b, const MetricsFitOptions& options,
                   const CounterNames& names, std::vector<CounterInterval>& out) {
  std::map<GroupKey, CounterInterval> groups;
  std::map<GroupKey, std::array<bool, 5>> present;
  for (const auto& [id, sb] : b.series) {
    const auto ita = a.series.find(id);
    if (ita == a.series.end()) continue;  // a series' first scrape has no delta yet
    CounterInterval& iv = groups[sb.group];
    double d = sb.value - ita->second.value;
    if (d < 0) {
      iv.counter_reset = true;  // the process restarted: it counted sb.value since
      d = sb.value;
    }
    if (sb.kind == kHits) {
      iv.hits += d;
    } else if (sb.kind == kMisses) {
      iv.misses += d;
    } else if (sb.kind == kLookups) {
      iv.lookups = iv.lookups.value_or(0) + d;
    } else if (sb.kind == kL3) {
      iv.l3_lookups = iv.l3_lookups.value_or(0) + d;
    } else {
      iv.h2d_bytes = iv.h2d_bytes.value_or(0) + d;
    }
    present[sb.group][sb.kind] = true;
  }
  for (auto& [key, iv] : groups) {
    if (!present[key][kHits]) continue;
    iv.file = doc.file;
    iv.line_from = a.line;
    iv.line_to = b.line;
    iv.t0_s = a.t_s;
    iv.t1_s = b.t_s;
    const auto& [H, K, index_group] = key;
    iv.index_group = index_group;
    const std::string group = index_group.empty() ? "" : fmt::format(" (index_group \"{}\")", index_group);
    if (iv.lookups) {
      // #56061: the hit rate of a group is hits / lookups, so lookups can never fall short of hits.
      if (*iv.lookups < iv.hits)
        throw_error("{}:{}..{}: {} grew by {} and {} by only {}{}: expected lookups >= hits", doc.file, a.line,
                    b.line, names.hits, iv.hits, names.lookups, *iv.lookups, group);
      if (iv.l3_lookups && *iv.l3_lookups > *iv.lookups)
        throw_error("{}:{}..{}: {} grew by {}, more than {} ({}){}: expected l3 lookups <= lookups", doc.file,
                    a.line, b.line, names.l3, *iv.l3_lookups, names.lookups, *iv.lookups, group);
      iv.misses = *iv.lookups - iv.hits;
    } else if (!present[key][kMisses]) {
      if (!iv.h2d_bytes || !options.row_bytes) continue;
      iv.misses = *iv.h2d_bytes / static_cast<double>(*options.row_bytes);
    }
    if (a.seq_len && b.seq_len) iv.seq_len = (*a.seq_len + *b.seq_len) / 2;
    if (H) iv.H = H;
    if (K) iv.K = K;
    out.push_back(iv);
  }
}

}  // namespace

std::vector<CounterInterval> intervals_from_prometheus(const PromDocument& doc, const MetricsFitOptions& options,
                                                       MetricsSource& source) {
  source.file = doc.file;
  source.kind = "prometheus";
  const CounterNames names = pick_counter_names(doc, options);
  std::vector<Snapshot> snaps;
  for (const PromScrape& sc : doc.scrapes) {
    Snapshot snap = snapshot_of(doc, sc, options, names);
    if (snap.series.empty()) continue;  // a scrape of something else (another exporter's block)
    if (!snaps.empty() && snap.t_s && snaps.back().t_s && *snap.t_s < *snaps.back().t_s)
      throw_error("{}:{}: scrape at {:.3f} s comes after one at {:.3f} s (expected scrapes in time order)", doc.file,
                  sc.first_line, *snap.t_s, *snaps.back().t_s);
    snaps.push_back(std::move(snap));
  }
  source.scrapes = static_cast<int64_t>(snaps.size());
  if (!snaps.empty()) {
    source.t_first_s = snaps.front().t_s;
    source.t_last_s = snaps.back().t_s;
  }
  std::vector<CounterInterval> out;
  for (size_t i = 1; i < snaps.size(); ++i) add_intervals(doc, snaps[i - 1], snaps[i], options, names, out);
  source.intervals = static_cast<int64_t>(out.size());
  return out;
}

std::vector<CounterInterval> intervals_from_log(const std::vector<LogInterval>& lines, MetricsSource& source) {
  std::vector<CounterInterval> out;
  source.kind = "sglang-log";
  source.scrapes = static_cast<int64_t>(lines.size());
  std::optional<double> prev_t;
  for (const LogInterval& l : lines) {
    source.file = l.file;
    CounterInterval iv;
    iv.file = l.file;
    iv.line_from = iv.line_to = l.line;
    iv.t0_s = prev_t;
    iv.t1_s = l.time_s;
    iv.hits = l.hits;
    iv.misses = l.misses;
    iv.h2d_bytes = l.h2d_bytes;
    iv.seq_len = l.seq_len;
    iv.H = l.H;
    iv.K = l.K;
    if (l.time_s) {
      if (!source.t_first_s) source.t_first_s = l.time_s;
      source.t_last_s = l.time_s;
    }
    prev_t = l.time_s;
    out.push_back(iv);
  }
  source.intervals = static_cast<int64_t>(out.size());
  return out;
}

MetricsFit fit_from_metric_files(const std::vector<std::string>& files, const MetricsFitOptions& options) {
  if (files.empty()) throw_error("calibrate --from-metrics: no input file");
  std::vector<CounterInterval> all;
  std::vector<MetricsSource> sources;
  for (const std::string& f : files) {
    const std::string text = read_file(f);
    MetricsSource src;
    src.file = f;
    std::vector<CounterInterval> ivs;
    if (looks_like_sglang_log(text)) {
      ivs = intervals_from_log(parse_sglang_log(text, f), src);
      src.file = f;
      if (src.scrapes == 0)
        throw_error("{}: SGLang decode lines but no '{}' statistics line (docs/capture.md shows the format)", f,
                    kHiSparseLogMarker);
    } else {
      ivs = intervals_from_prometheus(parse_prometheus_text(text, f), options, src);
      if (src.scrapes < 2)
        throw_error("{}: {} scrape(s) with HiSparse counters; counters need at least 2 to give a delta", f,
                    src.scrapes);
    }
    all.insert(all.end(), ivs.begin(), ivs.end());
    sources.push_back(src);
  }
  return fit_from_intervals(std::move(all), std::move(sources), options);
}

MetricsFit fit_from_intervals(std::vector<CounterInterval> intervals, std::vector<MetricsSource> sources,
                              const MetricsFitOptions& options) {
  MetricsFit fit;
  fit.sources = std::move(sources);
  const std::vector<double>& edges = MissFitter::bin_edges();
  struct Bin {
    double misses = 0, usable = 0, ratio_weighted = 0;
  };
  struct Column {
    std::vector<Bin> bins;
    double misses = 0, usable = 0, r_min = 1e300, r_max = 0;
  };
  std::map<double, Column> columns;
  for (CounterInterval& iv : intervals) {
    FittedInterval f;
    f.iv = iv;
    f.H = iv.H.value_or(options.H.value_or(0));
    f.K = iv.K.value_or(options.K.value_or(0));
    const std::optional<double> n = iv.seq_len ? iv.seq_len : options.seq_len;
    f.usable = iv.hits + iv.misses;
    if (iv.h2d_bytes && iv.misses > 0) f.bytes_per_miss = *iv.h2d_bytes / iv.misses;
    if (f.H < 1 || f.K < 1) {
      f.skipped = "H or K unknown (give --device-buffer-size and --top-k, or label the series)";
    } else if (f.H < f.K) {
      f.skipped = fmt::format("H {} < K {} (HiSparse needs H >= K)", f.H, f.K);
    } else if (!n) {
      f.skipped = "mean context unknown (give --seq-len or --seq-len-metric, or log seq_len / decode lines)";
    } else if (!(f.usable > 0)) {
      f.skipped = "no swap-in lookups in the interval";
    } else {
      f.fraction = iv.misses / f.usable;
      f.n_over_h = *n / f.H;
      if (f.fraction > 1) {
        f.skipped = fmt::format("misses {} exceed hits + misses (inconsistent counters)", iv.misses);
      } else if (!(f.n_over_h > 1)) {
        f.skipped = fmt::format("mean n {:.0f} <= H {}: the fast path, where nothing misses", *n, f.H);
      }
    }
    if (f.skipped.empty()) {
      Column& c = columns[static_cast<double>(f.H) / f.K];
      c.bins.resize(edges.size());
      size_t b = 0;
      while (b + 1 < edges.size() && f.n_over_h >= edges[b + 1]) ++b;
      c.bins[b].misses += iv.misses;
      c.bins[b].usable += f.usable;
      c.bins[b].ratio_weighted += f.usable * f.n_over_h;
      c.misses += iv.misses;
      c.usable += f.usable;
      c.r_min = std::min(c.r_min, f.n_over_h);
      c.r_max = std::max(c.r_max, f.n_over_h);
    }
    fit.intervals.push_back(f);
  }
  if (columns.empty()) {
    std::string why;
    for (const auto& f : fit.intervals) {
      if (!f.skipped.empty()) {
        why = fmt::format(" (first: {}:{}: {})", f.iv.file, f.iv.line_to, f.skipped);
        break;
      }
    }
    throw_error("calibrate --from-metrics: no usable interval among {}{}", fit.intervals.size(), why);
  }
  fit.surface.name = options.name;
  std::vector<MissColumn>& cols = fit.surface.policies[options.policy];
  for (const auto& [hk, c] : columns) {
    MissColumn col;
    col.h_over_k = hk;
    col.first_step = 1.0;  // the contract value for an empty start; counters cannot separate the first step
    col.first_step_samples = 1;
    col.warmup = c.misses / c.usable;
    col.warmup_samples = std::max<int64_t>(1, std::llround(c.usable));
    for (const Bin& b : c.bins) {
      if (b.usable > 0) col.steady.emplace_back(b.ratio_weighted / b.usable, b.misses / b.usable);
    }
    col.samples = std::max<int64_t>(1, std::llround(c.usable));
    col.n_over_h_min = c.r_min;
    col.n_over_h_max = c.r_max;
    cols.push_back(std::move(col));
  }
  fit.identified = {
      "the miss fraction pooled over layers, requests and phases at each deployed H/K",
      "its dependence on n/H, only as far as the mean context moved between intervals",
      "bytes per missed row, where both H2D bytes and misses are exported"};
  fit.not_identified = {
      "the first-step / warm-up / steady split (first_step is the contract value 1; warmup is the pooled fraction)",
      "the spread of n inside an interval (each point is a mixture read at the mean n)",
      "other H/K than the deployed ones (the planner reads the column flat beyond them)",
      "per-layer differences (counters are summed over layers)",
      "the policy (the engine's swap-in, LRU in SGLang and vLLM)"};
  return fit;
}

std::string metrics_fit_table(const MetricsFit& fit) {
  std::string out = "sources (measured counters):\n";
  for (const auto& s : fit.sources) {
    out += fmt::format("  {} ({}): {} scrapes/lines, {} intervals, time span {}\n", s.file, s.kind, s.scrapes,
                       s.intervals, span_text(s));
  }
  out += "\nintervals (measured: hits, misses; fraction = misses / (hits + misses)):\n";
  out += fmt::format("  {:<28} {:>12} {:>12} {:>9} {:>10} {:>7} {:>6}  {}\n", "source", "hits", "misses",
                     "fraction", "mean n", "n/H", "H/K", "used");
  for (const auto& f : fit.intervals) {
    const std::string src =
        fmt::format("{}:{}{}", std::filesystem::path(f.iv.file).filename().string(), f.iv.line_to,
                    f.iv.index_group.empty() ? "" : " g" + f.iv.index_group);
    const std::string n = f.iv.seq_len ? fixed(*f.iv.seq_len, 0) : "-";
    out += fmt::format("  {:<28} {:>12.0f} {:>12.0f} {:>9} {:>10} {:>7} {:>6}  {}\n", src, f.iv.hits, f.iv.misses,
                       f.usable > 0 ? fixed(f.fraction, 4) : "-", n, f.n_over_h > 0 ? fixed(f.n_over_h, 2) : "-",
                       f.K > 0 ? fixed(static_cast<double>(f.H) / f.K, 2) : "-",
                       f.skipped.empty() ? std::string("yes") + (f.iv.counter_reset ? " (counter reset)" : "")
                                         : "no: " + f.skipped);
    if (f.iv.l3_lookups)
      out += fmt::format("  {:<28} l3 lookups {:.0f} of {:.0f} lookups (measured; reported, not fitted)\n", "",
                         *f.iv.l3_lookups, f.iv.lookups.value_or(0));
  }
  out += "\nfitted surface (calibrated from the counters above; steady points binned by n/H):\n";
  for (const auto& [policy, cols] : fit.surface.policies) {
    for (const auto& c : cols) {
      out += fmt::format("  {} H/K {:.2f}: pooled fraction {:.4f} over {} lookups; n/H {:.2f}..{:.2f}\n", policy,
                         c.h_over_k, c.warmup, c.samples, c.n_over_h_min, c.n_over_h_max);
      for (const auto& [r, fr] : c.steady) out += fmt::format("      n/H {:>7.2f}  fraction {:.4f}\n", r, fr);
    }
  }
  out += "\nnot identified by counters:\n";
  for (const auto& s : fit.not_identified) out += "  - " + s + "\n";
  return out;
}

std::string metrics_fit_json(const MetricsFit& fit) {
  using Layout = JsonWriter::Layout;
  JsonWriter j(2);
  auto opt = [&j](std::string_view key, const std::optional<double>& v) {
    j.key(key);
    if (v) j.number(*v); else j.null();
  };
  auto list = [&j](std::string_view key, const std::vector<std::string>& v) {
    j.key(key).begin_array(Layout::kInline);
    for (const std::string& s : v) j.string(s);
    j.end_array();
  };
  j.begin_object().member("kind", "calibrated miss surface from measured swap-in counters");
  j.member("name", fit.surface.name).key("sources").begin_array();
  for (const auto& s : fit.sources) {
    j.begin_object(Layout::kInline).member("file", s.file).member("kind", s.kind).member("scrapes", s.scrapes);
    j.member("intervals", s.intervals);
    opt("t_first_s", s.t_first_s);
    opt("t_last_s", s.t_last_s);
    j.end_object();
  }
  j.end_array().key("intervals").begin_array();
  for (const auto& f : fit.intervals) {
    j.begin_object(Layout::kInline).member("file", f.iv.file).key("lines").begin_array(Layout::kInline);
    j.number(f.iv.line_from).number(f.iv.line_to).end_array();
    opt("t0_s", f.iv.t0_s);
    opt("t1_s", f.iv.t1_s);
    j.member("hits", f.iv.hits).member("misses", f.iv.misses);
    opt("h2d_bytes", f.iv.h2d_bytes);
    opt("mean_n", f.iv.seq_len);
    j.member("H", f.H).member("K", f.K).member("fraction", f.fraction).member("n_over_h", f.n_over_h);
    j.member("bytes_per_miss", f.bytes_per_miss).member("counter_reset", f.iv.counter_reset);
    j.member("used", f.skipped.empty()).member("skipped", f.skipped);
    // vLLM #56061's fields, only where its counters were read (older inputs keep their schema).
    if (f.iv.lookups || !f.iv.index_group.empty()) {
      j.member("index_group", f.iv.index_group);
      opt("lookups", f.iv.lookups);
      opt("l3_lookups", f.iv.l3_lookups);
    }
    j.end_object();
  }
  j.end_array().key("columns").begin_array();
  for (const auto& [policy, cols] : fit.surface.policies) {
    for (const auto& c : cols) {
      j.begin_object(Layout::kInline).member("policy", policy).member("h_over_k", c.h_over_k);
      j.member("pooled_fraction", c.warmup).member("lookups", c.samples).key("n_over_h").begin_array(Layout::kInline);
      j.number(c.n_over_h_min).number(c.n_over_h_max).end_array().key("steady").begin_array(Layout::kInline);
      for (const auto& [x, y] : c.steady) j.begin_array(Layout::kInline).number(x).number(y).end_array();
      j.end_array().end_object();
    }
  }
  j.end_array();
  list("identified", fit.identified);
  list("not_identified", fit.not_identified);
  j.end_object();
  return j.str() + "\n";
}

std::string metrics_fit_yaml(const MetricsFit& fit, const std::string& command) {
  std::vector<std::string> header = {
      fmt::format("Miss surface '{}': calibrated from production swap-in counters, not from a trace.",
                  fit.surface.name),
      "Read by sim/miss/miss_surface.h (`--miss-curve PATH`).", "", "Written by: " + command, "Sources (measured):"};
  for (const auto& s : fit.sources)
    header.push_back(fmt::format("- {} ({}): {} scrapes/lines, {} intervals, time span {}", s.file, s.kind, s.scrapes,
                                 s.intervals, span_text(s)));
  int64_t used = 0;
  for (const auto& f : fit.intervals) used += f.skipped.empty();
  header.push_back(fmt::format("Intervals used: {} of {} (the others are listed with the reason by the command).",
                               used, fit.intervals.size()));
  header.push_back("Fraction: misses / (hits + misses) per interval; steady points pool intervals in the n/H bins of");
  header.push_back("  sim/miss/miss_fitter.h (point = lookup-weighted mean n/H). samples / warmup_samples count lookups,");
  header.push_back("  not step-layers.");
  header.push_back("Identified: " + fit.identified[0] + "; " + fit.identified[1] + ".");
  header.push_back("Not identified:");
  for (const auto& s : fit.not_identified) header.push_back("  - " + s);
  header.push_back("first_step_samples is 1 only because the loader requires a sample: the first step is not measured.");
  return miss_surface_to_yaml(fit.surface, header);
}

}  // namespace hisparse::sim::counters

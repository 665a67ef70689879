// @brief Strict YAML loading of CostParams, each term with its provenance.
#include "sim/cost/terms/cost_params.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/yaml_reader.h"

namespace hisparse::sim {
namespace {

const char* kEfficiencyOps[] = {"indexer", "topk", "swap_in", "attention", "moe", "dense", "prefill"};

RooflineEfficiency* efficiency_of(Efficiency& e, const std::string& op) {
  if (op == "indexer") return &e.indexer;
  if (op == "topk") return &e.topk;
  if (op == "swap_in") return &e.swap_in;
  if (op == "attention") return &e.attention;
  if (op == "moe") return &e.moe;
  if (op == "dense") return &e.dense;
  return &e.prefill;
}

/// Reads one term: a bare value (read by `bare` from `parent`) or a mapping {<value keys>, kind, source} (read by
/// `in_map` from the term's own map). Records its provenance in `p.sources`.
template <typename Bare, typename InMap>
void read_term(StrictMap& parent, const std::string& key, const std::string& term, bool strict, CostParams& p,
               Bare bare, InMap in_map) {
  if (!parent.has(key)) {
    if (strict) throw_error("{}: missing cost term '{}' (every term needs a value, kind and source)", parent.location(), term);
    return;
  }
  TermSource src{term, "", "", ""};
  if (parent.is_map(key)) {
    StrictMap t = parent.child(key);
    if (strict) {
      t.require("kind");
      t.require("source");
    }
    src.value = in_map(t);
    t.get_choice("kind", &src.kind, {"measured", "calibrated", "modelled", "fitted", "assumed"});
    t.get("source", &src.source);
    if (strict && src.source.empty()) throw_error("{}: source is empty", t.where("source"));
    std::vector<std::string> fitted;
    if (t.has("fitted_to")) {
      const YAML::Node list = t.sequence("fitted_to");
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (!list[i].IsScalar() || list[i].as<std::string>().find('/') == std::string::npos)
          throw_error("{}[{}]: expected a field point as run/point (scenarios/field/<run>.yaml, its point id)",
                      t.where("fitted_to"), i);
        fitted.push_back(list[i].as<std::string>());
      }
    }
    if (src.kind == "fitted" && fitted.empty())
      throw_error("{}: kind fitted needs fitted_to: the field points (run/point) the value was fitted to",
                  t.where("kind"));
    if (src.kind != "fitted" && !fitted.empty())
      throw_error("{}: fitted_to is for kind fitted (got kind {})", t.where("fitted_to"), src.kind);
    for (const std::string& f : fitted) p.fitted_points.push_back({term, f});
    t.finish();
  } else {
    if (strict) throw_error("{}: a bare value has no kind and source (write {{value: ..., kind: ..., source: ...}})",
                            parent.where(key));
    src.value = bare();
  }
  p.sources.push_back(src);
}

/// The time-valued terms, in file order.
struct TimeTerm {
  const char* name;
  SimTime CostParams::*member;
};
const TimeTerm kTimeTerms[] = {
    {"all_reduce_latency_intranode", &CostParams::all_reduce_latency_intranode_ns},
    {"all_reduce_latency_internode", &CostParams::all_reduce_latency_internode_ns},
    {"all_to_all_latency_intranode", &CostParams::all_to_all_latency_intranode_ns},
    {"all_to_all_latency_internode", &CostParams::all_to_all_latency_internode_ns},
    {"graph_launch", &CostParams::graph_launch_ns},
    {"step_sync", &CostParams::step_sync_ns},
    {"sampling", &CostParams::sampling_ns},
    {"dp_batch_sync", &CostParams::dp_batch_sync_ns},
    {"scheduler_exposed", &CostParams::scheduler_exposed_ns},
    {"graph_kernel_gap", &CostParams::graph_kernel_gap_ns},
};

/// The published DeepEP table: its setting, then one row per EP size.
std::string read_deepep(StrictMap& t, DeepEpTable* out) {
  for (const char* k : {"tokens_per_rank", "hidden", "topk", "gpus_per_node", "nvlink_bytes_per_s", "rdma_bytes_per_s",
                        "rows"})
    t.require(k);
  DeepEpTable d;
  t.get("tokens_per_rank", &d.tokens_per_rank, 1, 1 << 20);
  t.get("hidden", &d.hidden, 1, 1 << 20);
  t.get("topk", &d.topk, 1, 1024);
  t.get("gpus_per_node", &d.gpus_per_node, 1, 1024);
  t.get("nvlink_bytes_per_s", &d.nvlink_bytes_per_s, 1e6, 1e15, Unit::kBytesPerSecond);
  t.get("rdma_bytes_per_s", &d.rdma_bytes_per_s, 1e6, 1e15, Unit::kBytesPerSecond);
  const YAML::Node rows = t.sequence("rows");
  for (size_t i = 0; i < rows.size(); ++i) {
    StrictMap r(rows[i], t.file(), t.where("rows").substr(t.file().size() + 2) + fmt::format("[{}]", i));
    for (const char* k : {"ep", "dispatch_us", "dispatch_gb_per_s", "combine_us", "combine_gb_per_s"}) r.require(k);
    DeepEpRow row;
    r.get("ep", &row.ep, 1, 1 << 20);
    r.get("dispatch_us", &row.dispatch_us, 1e-3, 1e6);
    r.get("dispatch_gb_per_s", &row.dispatch_gb_per_s, 1e-3, 1e6);
    r.get("combine_us", &row.combine_us, 1e-3, 1e6);
    r.get("combine_gb_per_s", &row.combine_gb_per_s, 1e-3, 1e6);
    r.finish();
    d.rows.push_back(row);
  }
  check_deepep_table(d, t.where("rows"));
  *out = d;
  std::string v = fmt::format("{} tokens/rank, hidden {}, top-{}:", d.tokens_per_rank, d.hidden, d.topk);
  for (const DeepEpRow& r : d.rows)
    v += fmt::format(" EP{} {:g}/{:g} us;", r.ep, r.dispatch_us, r.combine_us);
  v.pop_back();
  return v;
}

std::string fmt_ns(SimTime ns) { return ns >= 1000000 ? fmt::format("{:g} ms", ns * 1e-6) : fmt::format("{:g} us", ns * 1e-3); }

}  // namespace

SimTime CostParams::*cost_time_term(const std::string& term) {
  for (const TimeTerm& t : kTimeTerms)
    if (term == t.name) return t.member;
  return nullptr;
}

void set_efficiency_scale(CostParams& p, double scale) {
  if (!(scale > 0)) throw_error("efficiency_scale {}: expected a factor > 0", scale);
  const double f = scale / p.efficiency_scale;
  for (const char* op : kEfficiencyOps) {
    RooflineEfficiency* r = efficiency_of(p.efficiency, op);
    r->compute *= f;
    r->memory *= f;
  }
  p.efficiency.nvlink *= f;
  p.efficiency_scale = scale;
}

const char* to_string(OverlapMode mode) { return mode == OverlapMode::kNone ? "none" : "two-batch"; }

OverlapMode parse_overlap_mode(const std::string& text, const std::string& where) {
  if (text == "none") return OverlapMode::kNone;
  if (text == "two-batch") return OverlapMode::kTwoBatch;
  throw_error("{}: overlap '{}' is unknown (expected none or two-batch)", where, text);
}

const std::vector<std::string>& cost_term_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const char* op : kEfficiencyOps) n.push_back(std::string("efficiency.") + op);
    n.push_back("efficiency.nvlink");
    n.push_back("weight_bytes_per_param");
    for (const TimeTerm& t : kTimeTerms) n.push_back(t.name);
    n.push_back("deepep_low_latency");
    n.push_back("prefill_chunk_tokens");
    return n;
  }();
  return names;
}

CostParams load_cost_params(const std::string& path, CostParams p, bool strict) {
  StrictMap root(load_yaml_file(path), path, "");
  p.terms_file = path;
  p.sources.clear();
  if (strict) root.require("efficiency");
  if (root.has("efficiency")) {
    // The file's efficiencies are unscaled: base's (a partial file keeps the others) come back to a scale of 1 first,
    // and the file's own efficiency_scale, if any, applies to all of them below.
    set_efficiency_scale(p, 1.0);
    StrictMap e = root.child("efficiency");
    for (const char* op : kEfficiencyOps) {
      RooflineEfficiency* r = efficiency_of(p.efficiency, op);
      read_term(
          e, op, std::string("efficiency.") + op, strict, p,
          [&] {  // a bare number: the same fraction of both peaks
            double v = 0;
            e.get(op, &v, 1e-3, 1.0);
            r->compute = r->memory = v;
            return fmt::format("{:g}", v);
          },
          [&](StrictMap& t) {
            t.require("compute");
            t.require("memory");
            t.get("compute", &r->compute, 1e-3, 1.0);
            t.get("memory", &r->memory, 1e-3, 1.0);
            return fmt::format("compute {:g}, memory {:g}", r->compute, r->memory);
          });
    }
    read_term(
        e, "nvlink", "efficiency.nvlink", strict, p,
        [&] {
          e.get("nvlink", &p.efficiency.nvlink, 1e-3, 1.0);
          return fmt::format("{:g}", p.efficiency.nvlink);
        },
        [&](StrictMap& t) {
          t.require("value");
          t.get("value", &p.efficiency.nvlink, 1e-3, 1.0);
          return fmt::format("{:g}", p.efficiency.nvlink);
        });
    e.finish();
  }
  auto real = [&](const char* key, double* out, double lo, double hi) {
    read_term(
        root, key, key, strict, p,
        [&] {
          root.get(key, out, lo, hi);
          return fmt::format("{:g}", *out);
        },
        [&](StrictMap& t) {
          t.require("value");
          t.get("value", out, lo, hi);
          return fmt::format("{:g}", *out);
        });
  };
  auto time = [&](const char* key, SimTime* out) {
    read_term(
        root, key, key, strict, p,
        [&] {
          root.get_integral(key, out, 0, 1000000000, Unit::kNanoseconds);
          return fmt_ns(*out);
        },
        [&](StrictMap& t) {
          t.require("value");
          t.get_integral("value", out, 0, 1000000000, Unit::kNanoseconds);
          return fmt_ns(*out);
        });
  };
  if (root.has(kEfficiencyScaleTerm)) {
    double scale = 1.0;
    real(kEfficiencyScaleTerm, &scale, 1e-3, 1.0);
    set_efficiency_scale(p, scale);
  }
  real("weight_bytes_per_param", &p.weight_bytes_per_param, 0.25, 4.0);
  for (const char* retired : {"all_to_all_latency", "step_overhead"})
    if (root.has(retired))
      throw_error("{}: {} is retired: the collectives are all_reduce_latency_intranode/internode and "
                  "all_to_all_latency_intranode/internode with deepep_low_latency; the step's fixed part is "
                  "graph_launch, step_sync, sampling, dp_batch_sync and scheduler_exposed",
                  root.where(retired), retired);
  for (const TimeTerm& t : kTimeTerms) time(t.name, &(p.*t.member));
  if (root.has("deepep_low_latency") && !root.is_map("deepep_low_latency"))
    throw_error("{}: expected a mapping {{tokens_per_rank, hidden, topk, gpus_per_node, nvlink_bytes_per_s, "
                "rdma_bytes_per_s, rows, kind, source}}", root.where("deepep_low_latency"));
  read_term(
      root, "deepep_low_latency", "deepep_low_latency", strict, p, [] { return std::string(); },
      [&](StrictMap& t) { return read_deepep(t, &p.deepep); });
  read_term(
      root, "prefill_chunk_tokens", "prefill_chunk_tokens", strict, p,
      [&] {
        root.get("prefill_chunk_tokens", &p.prefill_chunk_tokens, 1, 1 << 24);
        return fmt::format("{}", p.prefill_chunk_tokens);
      },
      [&](StrictMap& t) {
        t.require("value");
        t.get("value", &p.prefill_chunk_tokens, 1, 1 << 24);
        return fmt::format("{}", p.prefill_chunk_tokens);
      });
  if (root.has("kernels_per_layer"))
    throw_error("{}: kernels_per_layer is retired: the cost model counts each layer's kernels from "
                "core/decode_layer_ops.h and charges graph_kernel_gap per kernel",
                root.where("kernels_per_layer"));
  if (root.has("overlap")) {
    std::string o;
    root.get_choice("overlap", &o, {"none", "two-batch"});
    p.overlap = parse_overlap_mode(o, root.where("overlap"));
  }
  if (root.has("link_model")) root.get_choice("link_model", &p.link_model, {"maxmin", "constant"});
  root.finish();
  return p;
}

}  // namespace hisparse::sim

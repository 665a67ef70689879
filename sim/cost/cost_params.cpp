// @brief Strict YAML loading of CostParams, each term with its provenance.
#include "sim/cost/cost_params.h"

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
    t.get_choice("kind", &src.kind, {"measured", "calibrated", "modelled", "assumed"});
    t.get("source", &src.source);
    if (strict && src.source.empty()) throw_error("{}: source is empty", t.where("source"));
    t.finish();
  } else {
    if (strict) throw_error("{}: a bare value has no kind and source (write {{value: ..., kind: ..., source: ...}})",
                            parent.where(key));
    src.value = bare();
  }
  p.sources.push_back(src);
}

std::string fmt_ns(SimTime ns) { return ns >= 1000000 ? fmt::format("{:g} ms", ns * 1e-6) : fmt::format("{:g} us", ns * 1e-3); }

}  // namespace

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
    for (const char* t : {"efficiency.nvlink", "weight_bytes_per_param", "all_to_all_latency", "step_overhead",
                          "graph_kernel_gap", "prefill_chunk_tokens"})
      n.push_back(t);
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
  real("weight_bytes_per_param", &p.weight_bytes_per_param, 0.25, 4.0);
  time("all_to_all_latency", &p.all_to_all_latency_ns);
  time("step_overhead", &p.step_overhead_ns);
  time("graph_kernel_gap", &p.graph_kernel_gap_ns);
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

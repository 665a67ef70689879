// @brief Strict YAML loading of CostParams.
#include "sim/cost_params.h"

#include "core/error.h"
#include "core/yaml_reader.h"

namespace hisparse::sim {

const char* to_string(OverlapMode mode) { return mode == OverlapMode::kNone ? "none" : "two-batch"; }

OverlapMode parse_overlap_mode(const std::string& text, const std::string& where) {
  if (text == "none") return OverlapMode::kNone;
  if (text == "two-batch") return OverlapMode::kTwoBatch;
  throw_error("{}: overlap '{}' is unknown (expected none or two-batch)", where, text);
}

CostParams load_cost_params(const std::string& path, CostParams p) {
  StrictMap root(load_yaml_file(path), path, "");
  if (root.has("efficiency")) {
    StrictMap e = root.child("efficiency");
    e.get("indexer", &p.efficiency.indexer, 1e-3, 1.0);
    e.get("topk", &p.efficiency.topk, 1e-3, 1.0);
    e.get("swap_in", &p.efficiency.swap_in, 1e-3, 1.0);
    e.get("attention", &p.efficiency.attention, 1e-3, 1.0);
    e.get("moe", &p.efficiency.moe, 1e-3, 1.0);
    e.get("dense", &p.efficiency.dense, 1e-3, 1.0);
    e.get("prefill", &p.efficiency.prefill, 1e-3, 1.0);
    e.get("nvlink", &p.efficiency.nvlink, 1e-3, 1.0);
    e.finish();
  }
  root.get("weight_bytes_per_param", &p.weight_bytes_per_param, 0.25, 4.0);
  root.get_integral("all_to_all_latency", &p.all_to_all_latency_ns, 0, 1000000000, Unit::kNanoseconds);
  root.get_integral("step_overhead", &p.step_overhead_ns, 0, 1000000000, Unit::kNanoseconds);
  root.get("kernels_per_layer", &p.kernels_per_layer, 0, 1000);
  root.get("prefill_chunk_tokens", &p.prefill_chunk_tokens, 1, 1 << 24);
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

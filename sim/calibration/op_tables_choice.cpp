// @brief The op tables a run reads and the per-term provenance they give (see op_tables_choice.h).
#include "sim/calibration/op_tables_choice.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "core/family/family_registry.h"
#include "sim/cost/terms/op_table_pricing.h"
#include "sim/cost/layout/rank_layout.h"
#include "sim/optables/op_table_index.h"

namespace hisparse::sim {
namespace {

constexpr const char* kReadRule =
    "read piecewise linear in batch, bilinear in batch × context, log-log in bytes; below the grid its smallest "
    "point's time (measured), above it linear from the last two points (modelled, extrapolated)";
constexpr const char* kRankRule =
    "t(ranks) = max(t_r2 + (t_r2 − t_r1) · log2(ranks / r2) / log2(r2 / r1), t_r2, payload / (link × "
    "efficiency.nvlink)) from the two largest measured rank counts r1 < r2";

std::string join(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, ", ")); }

}  // namespace

std::string apply_op_tables(const std::string& flag, const Scenario& s, CostParams* p) {
  p->op_tables = nullptr;
  if (flag == "none") return "op tables off (--op-tables none)";
  const bool given = !(flag.empty() || flag == "auto");
  const std::string index_path = given ? flag : default_op_table_index();
  if (index_path.empty()) return "";
  if (given && !std::filesystem::exists(index_path))
    throw_error("--op-tables {}: no such file (expected auto, none or an op-table index YAML such as "
                "scenarios/measurements/engine_ops.yaml)", index_path);
  const OpTableIndex index = load_op_table_index(index_path);
  auto set = std::make_shared<const OpTableSet>(load_op_tables(index, s.hardware.name));
  if (set->empty())
    return given ? fmt::format("op tables {}: none measured on hardware {}; every term modelled as before", index_path,
                               s.hardware.name)
                 : "";
  // The tables hold the MLA + DSA decode layer's kernels: a GQA model asks them nothing (its step is as before), and
  // DeepSeek-V4's own step (compressed attention, grouped output projection) does not map its ops to them yet.
  const LayerPricing layer = family_of(s).layer_pricing();
  if (layer == LayerPricing::kGqaKv) return "";
  if (layer == LayerPricing::kCompressed)
    return fmt::format("op tables of {} not read: DeepSeek-V4's step does not map its per-layer ops to them yet "
                       "(every term priced as before)", s.hardware.name);
  if (s.deployment.engine != "sglang")
    return fmt::format("op tables of {} not used: they time SGLang's kernels and the deployment's engine is {}",
                       s.hardware.name, s.deployment.engine);
  // What the step model will ask the tables, at this deployment's shapes and rank counts.
  const Scenario rank = rank_scenario(s);
  const RankLayout layout = rank_layout(s);
  const bool internode = collective_link(s).nodes > 1;
  const DeploymentSpec& d = s.deployment;
  const bool deepep = d.decode.ep > 1 && d.decode.dp_attention > 1;
  const bool moe = s.model.layers > s.model.dense_layers && s.model.routed_experts > 0;
  const int expert_ep = deepep ? d.decode.ep : 0;  // the grouped GEMMs run on each GPU, however many nodes
  const int ep_ranks = deepep && !internode ? d.decode.ep : 0;
  const int allreduce_ranks = !internode && ((moe && !deepep) || s.model.dense_layers > 0) ? std::max(1, d.decode.tp) : 0;
  const int attention_tp = internode ? 0 : layout.attention_tp;
  const OpTablePricing pricing(set, rank, p->efficiency.nvlink);
  auto use = std::make_shared<OpTableUse>();
  use->set = set;
  use->terms = pricing.status(expert_ep, ep_ranks, allreduce_ranks, attention_tp);
  p->op_tables = use;
  std::map<std::string, std::vector<std::string>> measured, from_ranks;  // table file -> terms
  std::vector<std::string> absent;
  for (const OpTermStatus& t : use->terms) {
    const std::string file = t.series ? t.series->table->file : "";
    if (t.label == OpLabel::kMeasured) {
      measured[file].push_back(t.term);
      const OpSeries& r = *t.series;
      p->sources.push_back(
          {"op_table." + t.term, fmt::format("{} over {}", t.op, r.grid_text()), "measured",
           fmt::format("{} lines {}–{} ({} {}, {}, driver {}, {}; {}); {}", r.table->path, r.first_line(), r.last_line(),
                       r.library, r.commit, r.gpu, r.driver, r.table->date, format_op_params(r.params), kReadRule)});
    } else if (t.label == OpLabel::kFromRanks) {
      from_ranks[file].push_back(t.term);
      p->sources.push_back({"op_table." + t.term, fmt::format("{} at {} GPUs", t.op, t.params.at("ranks")), "modelled",
                            fmt::format("{} ({}): {}: {}", t.series->table->path, t.series->library, t.note, kRankRule)});
    } else {
      absent.push_back(t.term);
      p->sources.push_back({"op_table." + t.term, "absent", "modelled",
                            fmt::format("{} holds {}: the term keeps its modelled price (per-op calibration, the roofline "
                                        "or the cost terms)", index_path, t.note)});
    }
  }
  std::string line = fmt::format("op tables {} ({}, SGLang's kernels; a term they measure supersedes its price above):",
                                 index_path, s.hardware.name);
  std::vector<std::string> parts;
  for (const auto& [file, terms] : measured) parts.push_back(fmt::format("measured ({}) {}", file, join(terms)));
  for (const auto& [file, terms] : from_ranks)
    parts.push_back(fmt::format("modelled from fewer-GPU measurements ({}) {}", file, join(terms)));
  if (!absent.empty()) parts.push_back("not in the tables, modelled as before: " + join(absent));
  line += " " + fmt::format("{}", fmt::join(parts, "; ")) + "; " + kReadRule;
  if (!from_ranks.empty()) line += fmt::format("; more GPUs than measured: {}", kRankRule);
  return line;
}

}  // namespace hisparse::sim

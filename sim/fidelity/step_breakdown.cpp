// @brief step_breakdown and its text / JSON (see step_breakdown.h).
#include "sim/fidelity/step_breakdown.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/io/json_writer.h"
#include "core/io/output_file.h"
#include "sim/fidelity/field_evaluation.h"

namespace hisparse::sim {

namespace {

double ms(SimTime ns) { return static_cast<double>(ns) * 1e-6; }

/// How the op tables answered for one StepCost field (OpTermStatus::field): every op measured, some, or none.
std::string phase_source(const CostParams& cost, const std::string& field, const std::string& hardware,
                         const std::string& modelled) {
  if (!cost.op_tables) return fmt::format("modelled (no op table read for {}: {})", hardware, modelled);
  size_t measured = 0, all = 0;
  std::string file;
  for (const OpTermStatus& t : cost.op_tables->terms) {
    if (t.field != field) continue;
    ++all;
    if (t.label == OpLabel::kMeasured && t.series && t.series->table) {
      ++measured;
      if (file.empty()) file = t.series->table->file;
    }
  }
  if (all == 0 || measured == 0) return "modelled (" + modelled + ")";
  if (measured == all) return fmt::format("measured ({}: all {} ops)", file, all);
  return fmt::format("measured {} of {} ops ({}), the rest modelled ({})", measured, all, file, modelled);
}

}  // namespace

std::string op_tables_summary(const CostParams& cost, const std::string& hardware) {
  if (!cost.op_tables || !cost.op_tables->set) return fmt::format("no op table read for {}: every term modelled", hardware);
  std::map<std::string, int> measured;
  int others = 0;
  for (const OpTermStatus& t : cost.op_tables->terms)
    (t.label != OpLabel::kAbsent && t.series && t.series->table ? measured[t.series->table->file] : others) += 1;
  std::string o;
  for (const auto& [file, n] : measured) o += fmt::format("{}{} terms from {}", o.empty() ? "" : ", ", n, file);
  return (o.empty() ? std::string("no term in the tables") : o) + fmt::format("; {} terms modelled", others);
}

StepBreakdown step_breakdown(const StepTimeModel& model, const CostParams& cost, KvMode mode, int32_t concurrency,
                             int64_t context) {
  StepBreakdown b;
  b.mode = mode;
  b.concurrency = concurrency;
  b.context = context;
  b.ranks = model.layout().ranks;
  b.busiest = busiest_rank_batch(concurrency, b.ranks);
  const StepEstimate e = model.step(b.busiest, ContextMix::single(context), concurrency);
  b.step_ms = ms(e.step_ns);
  b.tpot_ms = ms(e.tpot_ns);
  const std::string hw = model.rank_scenario().hardware.name;
  b.tables = op_tables_summary(cost, hw);
  const StepEstimator& est = model.estimator();
  const DecodeCostModel& dcm = est.cost();
  const std::string mode_name = dcm.decode_deepep_mode();
  if (!mode_name.empty())
    b.deepep = fmt::format("{} (deepep_mode {}; SGLang's DeepEPMode.resolve: auto is NORMAL when a DP rank has extend "
                           "in the batch, else LOW_LATENCY, and a decode step has none: sglang 0.5.23 "
                           "srt/layers/moe/utils.py:278-285)",
                           mode_name, model.rank_scenario().deployment.deepep_mode);
  const StepCost& c = e.cost;
  const std::string copies = "modelled (copy flows at the hardware file's PCIe and host-DRAM rates)";
  b.terms.push_back({"indexer", ms(c.indexer), phase_source(cost, "indexer", hw, "roofline / per-op calibration")});
  b.terms.push_back({"topk", ms(c.topk), phase_source(cost, "topk", hw, "roofline / per-op calibration")});
  if (model.hisparse()) {
    b.terms.push_back({"swap_in", ms(c.swap_in),
                       cost.swap_in_cost.calibrated ? "calibrated (swap-in plan kernel timed by bench --calibrate)"
                                                    : "modelled (roofline of the hit detection and output clear)"});
    b.terms.push_back({"h2d", ms(c.h2d), copies + ", exposed part"});
    b.terms.push_back({"stall", ms(c.stall), copies + ", wait for the backup"});
  }
  b.terms.push_back({"attention", ms(c.attention),
                     phase_source(cost, "attention", hw,
                                  cost.attention.table ? "FlashMLA's timed table, roofline for the projections"
                                                       : "roofline / per-op calibration")});
  // The MoE phase's terms at the instance's tokens and the busiest GPU's (as StepEstimator::moe_ns asks them).
  const double positions = static_cast<double>(est.positions());
  const double tokens = static_cast<double>(concurrency) * positions;
  const double gpu_tokens = est.max_gpu_tokens(static_cast<double>(b.busiest)) * positions;
  SimTime moe_sum = 0;
  for (const MoeTerm& t : dcm.moe_terms(tokens, gpu_tokens)) {
    std::string name = t.name;
    if (name == "dispatch_combine" && !mode_name.empty()) name += " (DeepEP " + mode_name + ")";
    b.terms.push_back({name, ms(t.ns), t.source});
    moe_sum += t.ns;
  }
  if (c.draft > 0) b.terms.push_back({"draft", ms(c.draft), "modelled (MTP draft passes, sim/cost/step/speculative.h)"});
  if (moe_sum != c.moe)
    b.note = fmt::format("overlap {}: the step charges the MoE phase {:.3f} ms (two micro-batches, one's all-to-all "
                         "under the other's compute), not the {:.3f} ms of its terms above",
                         to_string(est.params().overlap), ms(c.moe), ms(moe_sum));
  return b;
}

std::string breakdown_where(const StepBreakdown& b) {
  return fmt::format("{} c{} n{}", to_string(b.mode), b.concurrency, b.context);
}

std::vector<std::string> breakdown_lines(const StepBreakdown& b) {
  std::vector<std::string> out;
  out.push_back(fmt::format("{}: step {:.3f} ms (TPOT {:.3f}); busiest of {} DP ranks holds {} of the {} requests and "
                            "sets the step (DP attention pads every rank's graph to the largest rank batch)",
                            breakdown_where(b), b.step_ms, b.tpot_ms, b.ranks, b.busiest, b.concurrency));
  out.push_back("  op tables: " + b.tables);
  if (!b.deepep.empty()) out.push_back("  DeepEP mode: " + b.deepep);
  for (const BreakdownTerm& t : b.terms)
    out.push_back(fmt::format("  {:<36} {:>9.3f} ms  {}", t.name, t.ms, t.source));
  if (!b.note.empty()) out.push_back("  " + b.note);
  return out;
}

void breakdown_json(JsonWriter& j, const StepBreakdown& b) {
  using Layout = JsonWriter::Layout;
  j.begin_object(Layout::kInline).member("mode", to_string(b.mode)).member("concurrency", b.concurrency);
  j.member("context", b.context).member("ranks", b.ranks).member("busiest_rank", b.busiest);
  j.key("step_ms").general(b.step_ms, 6).key("tpot_ms").general(b.tpot_ms, 6).member("deepep", b.deepep);
  j.member("op_tables", b.tables).member("note", b.note).key("terms").begin_array(Layout::kInline);
  for (const BreakdownTerm& t : b.terms)
    j.begin_object(Layout::kInline).member("term", t.name).key("ms").general(t.ms, 6).member("source", t.source)
        .end_object();
  j.end_array().end_object();
}

}  // namespace hisparse::sim

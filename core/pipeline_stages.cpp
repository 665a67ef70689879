// @brief Pipeline stages: SGLang's layer split and the model one stage holds (see pipeline_stages.h).
#include "core/pipeline_stages.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace hisparse {

namespace {

template <class T>
std::vector<T> slice_layers(const std::vector<T>& per_layer, const ModelSpec& m, const PipelineStage& st) {
  if (per_layer.empty()) return per_layer;
  std::vector<T> out;
  for (int l = st.first_layer; l < st.end_layer && l < static_cast<int>(per_layer.size()); ++l)
    out.push_back(per_layer[l]);
  // Lists that go on past the decoder layers (compress_ratios' MTP entries) follow the last stage.
  if (st.mtp_layers > 0)
    for (size_t l = m.layers; l < per_layer.size(); ++l) out.push_back(per_layer[l]);
  return out;
}

}  // namespace

std::vector<PipelineStage> pipeline_stages(const ModelSpec& m, int pp) {
  if (pp < 1) throw_error("pipeline_stages: pp {}: expected at least 1", pp);
  const int per = m.layers / pp;
  if (per < 1)
    throw_error("decode.pp: got {}, expected at most the model {}'s {} layers (every stage holds one)", pp, m.name,
                m.layers);
  std::vector<PipelineStage> out;
  for (int i = 0; i < pp; ++i) {
    PipelineStage st;
    st.index = i;
    st.first_layer = i * per;
    st.end_layer = i == pp - 1 ? m.layers : st.first_layer + per;
    st.mtp_layers = i == pp - 1 ? m.mtp_layers : 0;
    out.push_back(st);
  }
  return out;
}

PipelineStage binding_stage(const ModelSpec& m, int pp) {
  PipelineStage best;
  for (const PipelineStage& st : pipeline_stages(m, pp))
    if (st.kv_layers() >= best.kv_layers()) best = st;
  return best;
}

ModelSpec stage_model(const ModelSpec& m, const PipelineStage& st) {
  ModelSpec s = m;
  s.layers = st.end_layer - st.first_layer;
  s.mtp_layers = st.mtp_layers;
  s.sliding_layers = slice_layers(m.sliding_layers, m, st);
  s.linear_layers = slice_layers(m.linear_layers, m, st);
  s.compress_ratios = slice_layers(m.compress_ratios, m, st);
  s.topk_skip_offset = m.topk_skip_offset - st.first_layer;  // layer l of the stage is layer first + l of the model
  s.dense_layers = std::clamp(m.dense_layers - st.first_layer, 0, s.layers);
  const double share = static_cast<double>(st.kv_layers()) / m.kv_layers();
  s.weight_bytes = m.weight_bytes * share;
  s.dp_replicated_weight_bytes = m.dp_replicated_weight_bytes * share;
  s.active_params = m.active_params * share;
  return s;
}

Scenario pipeline_stage_scenario(const Scenario& sc) {
  const int pp = sc.deployment.decode.pp;
  if (pp <= 1) return sc;
  Scenario s = sc;
  const PipelineStage st = binding_stage(sc.model, pp);
  s.model = stage_model(sc.model, st);
  s.deployment.decode.gpus = sc.deployment.decode.gpus / pp;
  s.deployment.decode.pp = 1;
  if (s.deployment.memory.weight_bytes > 0)
    s.deployment.memory.weight_bytes *= static_cast<double>(st.kv_layers()) / sc.model.kv_layers();
  return s;
}

MemoryBudget pipeline_memory_budget(const Scenario& sc, const std::vector<int64_t>& seq_lens) {
  const int pp = sc.deployment.decode.pp;
  const PipelineStage st = binding_stage(sc.model, pp);
  MemoryBudget b = compute_memory_budget(pipeline_stage_scenario(sc), seq_lens);
  const std::string where = describe_stage(sc.model, st, pp);
  b.kv_layers.formula = fmt::format("{}; {}", where, b.kv_layers.formula);
  if (sc.deployment.memory.weights_per_gpu_bytes <= 0)
    b.weights_per_gpu_bytes.formula =
        fmt::format("stage weights = weight_bytes × stage KV layers / KV layers = {:.4g} × {} / {} (assumed: in "
                    "proportion to layers); {}",
                    sc.deployment.memory.weight_bytes > 0 ? sc.deployment.memory.weight_bytes : sc.model.weight_bytes,
                    st.kv_layers(), sc.model.kv_layers(), b.weights_per_gpu_bytes.formula);
  return b;
}

std::string describe_stage(const ModelSpec& m, const PipelineStage& st, int pp) {
  return fmt::format("pipeline stage {} of {}: layers [{}, {}){} of the model's {} + {} MTP (SGLang get_pp_indices)", st.index + 1,
                     pp, st.first_layer, st.end_layer,
                     st.mtp_layers > 0 ? fmt::format(" + {} MTP", st.mtp_layers) : std::string(), m.layers,
                     m.mtp_layers);
}

}  // namespace hisparse

// @brief Pipeline parallelism's layer split (deployment decode.pp): which decoder layers each stage holds, the model
// one stage holds (its layers, their KV and their share of the weights) and the stage that binds the memory budget.
// SGLang's split (python/sglang/srt/distributed/utils.py:63-93, get_pp_indices, sgl-project/sglang 3e5a73c8):
// floor(layers / pp) per stage, the last stage also takes the remainder (SGLANG_PP_LAYER_PARTITION unset).
#pragma once

#include <string>
#include <vector>

#include "core/deployment_spec.h"
#include "core/memory_budget.h"

namespace hisparse {

struct PipelineStage {
  int index = 0;
  int first_layer = 0;  // decoder layers [first_layer, end_layer) of the model
  int end_layer = 0;
  int mtp_layers = 0;   // the MTP (draft) layers: on the last stage (assumed: they follow the last decoder layer)
  int kv_layers() const { return end_layer - first_layer + mtp_layers; }
};

/// The stages of a model under `pp` (SGLang's get_pp_indices). Throws when a stage would hold no layer.
std::vector<PipelineStage> pipeline_stages(const ModelSpec& model, int pp);

/// The stage that binds memory: the one with the most KV layers (its weights, in proportion to its layers, are the
/// largest too), the last of equals. A request holds KV on every stage, so the fullest stage's pool sets the count.
PipelineStage binding_stage(const ModelSpec& model, int pp);

/// The model one stage holds: its layers (per-layer lists sliced, the top-k schedule shifted so each layer keeps its
/// role), its MTP layers, and weight_bytes / dp_replicated_weight_bytes / active_params in proportion to its KV
/// layers (assumed: the embedding of the first stage and the LM head of the last are not set apart).
ModelSpec stage_model(const ModelSpec& model, const PipelineStage& stage);

/// The scenario one pipeline stage of the decode instance is: the binding stage's model on gpus / pp GPUs (a
/// weight_bytes override scaled as the model's). The scenario itself when pp is 1.
Scenario pipeline_stage_scenario(const Scenario& scenario);

/// The memory budget of a pipelined deployment: the binding stage's (compute_memory_budget of
/// pipeline_stage_scenario), its layer and weight formulas naming the stage. compute_memory_budget calls it for pp > 1.
MemoryBudget pipeline_memory_budget(const Scenario& scenario, const std::vector<int64_t>& seq_lens);

/// "stage 2: layers [30, 61) + 1 MTP of 61 + 1", for the formulas that `info` and `plan` print.
std::string describe_stage(const ModelSpec& model, const PipelineStage& stage, int pp);

}  // namespace hisparse

// @brief Strict loading of scenarios/{models,hardware,deployments}/*.yaml and resolution of a deployment's names.
#include "core/scenario_loader.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/engine_version.h"
#include "core/error.h"
#include "core/family/family_registry.h"
#include "core/memory_budget.h"
#include "core/not_found_error.h"
#include "core/yaml_reader.h"

namespace hisparse {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxInt = 2147483647;

std::string stem_of(const std::string& path) { return fs::path(path).stem().string(); }

void read_instance(StrictMap map, InstanceSpec* inst) {
  map.get("count", &inst->count, 0, 4096);
  map.get("gpus", &inst->gpus, 1, 65536);
  map.get("tp", &inst->tp, 1, inst->gpus);
  map.get("dp_attention", &inst->dp_attention, 1, inst->tp);
  map.get("ep", &inst->ep, 1, inst->gpus);
  map.get("pp", &inst->pp, 1, 64);
  map.finish();
  // Attention data parallelism splits the TP group into dp groups of tp/dp GPUs each.
  if (inst->tp % inst->dp_attention != 0)
    throw_error("{}: dp_attention ({}) must divide tp ({})", map.location(), inst->dp_attention, inst->tp);
  // Pipeline parallelism: SGLang's world is tp × pp GPUs, each stage one TP group (server_args: tp_size, pp_size).
  if (inst->pp > 1 && inst->gpus != inst->tp * inst->pp)
    throw_error("{}: pp: got {} with gpus {} and tp {}, expected gpus = tp × pp ({})", map.location(), inst->pp,
                inst->gpus, inst->tp, inst->tp * inst->pp);
  if (inst->pp > 1 && inst->dp_attention != 1)
    throw_error("{}: dp_attention: got {} with pp {}, expected 1 (attention data parallelism inside a pipeline stage "
                "is not modelled)", map.location(), inst->dp_attention, inst->pp);
  if (inst->pp > 1 && inst->ep > inst->tp)
    throw_error("{}: ep: got {} with pp {}, expected at most tp {} (experts are split inside a stage)",
                map.location(), inst->ep, inst->pp, inst->tp);
}

}  // namespace

namespace {

/// The keys only one attention kind has: naming one under the other kind is a mistake, not a no-op.
const std::vector<const char*>& mla_only_keys() {
  static const std::vector<const char*> k = {"kv_lora_rank", "qk_rope_head_dim", "latent_row_bytes",
                                             "latent_row_bytes_fp8", "indexer_heads", "indexer_head_dim",
                                             "indexer_key_bytes", "top_k", "topk_layer_group", "topk_skip_offset",
                                             "q_lora_rank", "qk_nope_head_dim", "v_head_dim", "dp_replicated_weight_bytes",
                                             "compress_ratios", "window_size", "latent_row_bytes_nvfp4", "o_groups",
                                             "o_lora_rank"};
  return k;
}
const std::vector<const char*>& gqa_only_keys() {
  static const std::vector<const char*> k = {"num_key_value_heads", "head_dim", "sliding_window", "layer_types",
                                             "sliding_window_pattern", "full_attention_interval",
                                             "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                                             "linear_value_head_dim", "linear_conv_kernel_dim"};
  return k;
}

/// Which layers slide: config.json's `layer_types` list (gpt-oss, newer Gemma configs) or Gemma-3's
/// `sliding_window_pattern` P (every P-th layer is global, the others local).
void read_sliding_layout(StrictMap& map, ModelSpec* m) {
  const bool has_types = map.has("layer_types"), has_pattern = map.has("sliding_window_pattern");
  if (has_types && has_pattern)
    throw_error("{}: both layer_types and sliding_window_pattern given; expected at most one of them", map.file());
  if (m->sliding_window == 0) {
    if (has_types || has_pattern)
      throw_error("{}: expected sliding_window > 0 with it (sliding_window is 0 or absent)",
                  map.where(has_types ? "layer_types" : "sliding_window_pattern"));
    return;
  }
  if (!has_types && !has_pattern)
    throw_error("{}: sliding_window {} given without layer_types or sliding_window_pattern; expected one of them to "
                "say which layers slide", map.where("sliding_window"), m->sliding_window);
  m->sliding_layers.assign(static_cast<size_t>(m->layers), false);
  if (has_types) {
    const YAML::Node list = map.sequence("layer_types");
    if (static_cast<int>(list.size()) != m->layers)
      throw_error("{}: got {} entries, expected one per layer ({})", map.where("layer_types"), list.size(), m->layers);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string v = list[i].IsScalar() ? list[i].as<std::string>() : describe_node(list[i]);
      if (v != "sliding_attention" && v != "full_attention")
        throw_error("{}[{}]: got '{}', expected sliding_attention or full_attention", map.where("layer_types"), i, v);
      m->sliding_layers[i] = v == "sliding_attention";
    }
  } else {
    int pattern = 0;
    map.get("sliding_window_pattern", &pattern, 2, m->layers);
    for (int i = 0; i < m->layers; ++i) m->sliding_layers[static_cast<size_t>(i)] = (i + 1) % pattern != 0;
  }
  if (m->sliding_layer_count() == 0)
    throw_error("{}: sliding_window {} but no layer slides; expected at least one sliding_attention layer "
                "(or no sliding_window)", map.where("sliding_window"), m->sliding_window);
}

/// Qwen3-Next's hybrid layout: config full_attention_interval I makes every I-th layer full attention and the others
/// linear attention (Gated DeltaNet), whose per-request state the linear_* head counts and sizes fix.
void read_linear_layout(StrictMap& map, ModelSpec* m) {
  const std::vector<const char*> keys = {"linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                                         "linear_value_head_dim", "linear_conv_kernel_dim"};
  if (!map.has("full_attention_interval")) {
    for (const char* key : keys)
      if (map.has(key))
        throw_error("{}: only for a hybrid linear-attention model; expected full_attention_interval with it",
                    map.where(key));
    return;
  }
  if (m->sliding_window > 0)
    throw_error("{}: a model with both sliding-window and linear-attention layers is not modelled; expected one of "
                "sliding_window and full_attention_interval", map.where("full_attention_interval"));
  int interval = 0;
  map.get("full_attention_interval", &interval, 2, m->layers);
  for (const char* key : keys) map.require(key);
  map.get("linear_num_key_heads", &m->linear_num_key_heads, 1, 4096);
  map.get("linear_num_value_heads", &m->linear_num_value_heads, 1, 4096);
  map.get("linear_key_head_dim", &m->linear_key_head_dim, 1, 65536);
  map.get("linear_value_head_dim", &m->linear_value_head_dim, 1, 65536);
  map.get("linear_conv_kernel_dim", &m->linear_conv_kernel_dim, 2, 64);
  m->linear_layers.assign(static_cast<size_t>(m->layers), false);
  for (int i = 0; i < m->layers; ++i) m->linear_layers[static_cast<size_t>(i)] = (i + 1) % interval != 0;
}

/// attention: gqa — K and V of num_key_value_heads heads per layer, dense or MoE MLP.
void read_gqa_model(StrictMap& map, ModelSpec* m) {
  for (const char* key : mla_only_keys())
    if (map.has(key))
      throw_error("{}: only for attention: mla; this model is attention: gqa (K/V heads: num_key_value_heads, "
                  "head_dim)", map.where(key));
  for (const char* key : {"layers", "attention_heads", "num_key_value_heads", "head_dim", "hidden_size",
                          "weight_bytes", "active_params", "vocab_size"})
    map.require(key);
  map.get("layers", &m->layers, 1, 4096);
  map.get("mtp_layers", &m->mtp_layers, 0, 0);  // no MTP KV layers are modelled for GQA models
  map.get("attention_heads", &m->attention_heads, 1, 65536);
  map.get("num_key_value_heads", &m->num_key_value_heads, 1, m->attention_heads);
  if (m->attention_heads % m->num_key_value_heads != 0)
    throw_error("{}: got {}, expected a divisor of attention_heads {} (each KV head serves a whole group of query "
                "heads)", map.where("num_key_value_heads"), m->num_key_value_heads, m->attention_heads);
  map.get("head_dim", &m->head_dim, 1, 65536);
  map.get("sliding_window", &m->sliding_window, 0, 1 << 24);
  read_sliding_layout(map, m);
  read_linear_layout(map, m);
  map.get("weight_bytes", &m->weight_bytes, 1, 1e15, Unit::kBytes);
  map.get("vocab_size", &m->vocab_size, 1, kMaxInt);
  map.get("hidden_size", &m->hidden_size, 1, 1 << 20);
  map.get("routed_experts", &m->routed_experts, 0, 1 << 16);
  // A dense model's MoE keys get their own message below; an MoE model picks at most all its experts.
  map.get("experts_per_token", &m->experts_per_token, 0, m->routed_experts > 0 ? m->routed_experts : 1 << 16);
  map.get("shared_experts", &m->shared_experts, 0, 1 << 10);
  map.get("moe_intermediate_size", &m->moe_intermediate_size, 0, 1 << 20);
  map.get("dense_intermediate_size", &m->dense_intermediate_size, 0, 1 << 22);
  if (m->routed_experts > 0) {
    // MoE: every layer routes (gpt-oss); dense layers first when the model has them.
    for (const char* key : {"experts_per_token", "moe_intermediate_size"}) map.require(key);
    if (m->experts_per_token < 1)
      throw_error("{}: got {}, expected >= 1 with routed_experts {}", map.where("experts_per_token"),
                  m->experts_per_token, m->routed_experts);
    if (m->moe_intermediate_size < 1)
      throw_error("{}: got {}, expected >= 1 with routed_experts {}", map.where("moe_intermediate_size"),
                  m->moe_intermediate_size, m->routed_experts);
    map.get("dense_layers", &m->dense_layers, 0, m->layers);
    if (m->dense_layers > 0 && m->dense_intermediate_size < 1)
      throw_error("{}: dense_layers {} need dense_intermediate_size >= 1", map.where("dense_intermediate_size"),
                  m->dense_layers);
  } else {
    // Dense: config.json's intermediate_size is the MLP of every layer.
    map.require("dense_intermediate_size");
    if (m->dense_intermediate_size < 1)
      throw_error("{}: got {}, expected >= 1 (config.json intermediate_size) for a dense model",
                  map.where("dense_intermediate_size"), m->dense_intermediate_size);
    m->dense_layers = m->layers;
    map.get("dense_layers", &m->dense_layers, m->layers, m->layers);
    for (auto [key, value] : {std::pair{"experts_per_token", m->experts_per_token},
                              std::pair{"moe_intermediate_size", m->moe_intermediate_size},
                              std::pair{"shared_experts", m->shared_experts}})
      if (value > 0)
        throw_error("{}: got {}, expected 0 or absent for a dense model (routed_experts 0)", map.where(key), value);
  }
  m->dense_weight_bytes_per_param = 2;  // bf16 checkpoints
  map.get("dense_weight_bytes_per_param", &m->dense_weight_bytes_per_param, 0.25, 4);
  map.get("expert_weight_bytes_per_param", &m->expert_weight_bytes_per_param, 0.25, 4);
  if (m->expert_weight_bytes_per_param > 0 && m->routed_experts == 0)
    throw_error("{}: a dense model (routed_experts 0) has no routed experts", map.where("expert_weight_bytes_per_param"));
  map.get("active_params", &m->active_params, 1, 1e14);
  map.finish();
}

/// DeepSeek-V4's per-layer compression (config.json compress_ratios, one entry per main and MTP layer) and its
/// sliding window; the NVFP4 row size is only meaningful with them.
void read_compressed_attention(StrictMap& map, ModelSpec* m) {
  const bool has_ratios = map.has("compress_ratios");
  for (const char* key : {"window_size", "latent_row_bytes_nvfp4", "o_groups", "o_lora_rank"})
    if (map.has(key) && !has_ratios)
      throw_error("{}: only for compressed attention; expected compress_ratios with it (DeepSeek-V4)", map.where(key));
  if (!has_ratios) return;
  const YAML::Node list = map.sequence("compress_ratios");
  const int expected = m->kv_layers();
  if (static_cast<int>(list.size()) != expected)
    throw_error("{}: got {} entries, expected one per layer and MTP layer ({} + {} = {})", map.where("compress_ratios"),
                list.size(), m->layers, m->mtp_layers, expected);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string v = list[i].IsScalar() ? list[i].as<std::string>() : describe_node(list[i]);
    if (v != "0" && v != "4" && v != "128")
      throw_error("{}[{}]: got '{}', expected 0 (sliding window only), 4 (C4) or 128 (C128)",
                  map.where("compress_ratios"), i, v);
    m->compress_ratios.push_back(std::stoi(v));
  }
  if (m->compressed_layer_count(4) == 0)
    throw_error("{}: no layer has ratio 4; expected at least one C4 layer (the one HiSparse offloads)",
                map.where("compress_ratios"));
  map.require("window_size");
  map.get("window_size", &m->window_size, 1, 1 << 20);
  map.get_integral("latent_row_bytes_nvfp4", &m->latent_row_bytes_nvfp4, 0, kMaxInt, Unit::kBytes);
  map.get("o_groups", &m->o_groups, 1, 1 << 10);
  map.get("o_lora_rank", &m->o_lora_rank, 1, 1 << 20);
  if ((m->o_groups > 0) != (m->o_lora_rank > 0))
    throw_error("{}: o_groups and o_lora_rank: got one without the other, expected both (V4's grouped output "
                "projection) or neither", map.where(m->o_groups > 0 ? "o_groups" : "o_lora_rank"));
  if (m->o_groups > 0 && m->attention_heads % m->o_groups != 0)
    throw_error("{}: got {}, expected a divisor of attention_heads {}", map.where("o_groups"), m->o_groups,
                m->attention_heads);
}

}  // namespace

ModelSpec load_model_spec(const std::string& path) {
  ModelSpec m;
  StrictMap map(load_yaml_file(path), path, "");
  m.name = stem_of(path);
  map.get("name", &m.name);
  map.get("layer_shapes_of", &m.layer_shapes_of);
  map.get("family", &m.family);  // a registered family's name (core/family/family_registry.h); absent = by shape
  std::string kind = "mla";
  map.get_choice("attention", &kind, {"mla", "gqa"});
  if (kind == "gqa") {
    m.attention = AttentionKind::kGqa;
    read_gqa_model(map, &m);
    return m;
  }
  for (const char* key : gqa_only_keys())
    if (map.has(key))
      throw_error("{}: only for attention: gqa; this model is attention: mla (the default)", map.where(key));
  for (const char* key : {"layers", "kv_lora_rank", "indexer_heads", "indexer_head_dim", "attention_heads", "top_k",
                          "weight_bytes"})
    map.require(key);
  map.get("layers", &m.layers, 1, 4096);
  map.get("mtp_layers", &m.mtp_layers, 0, 64);
  map.get("kv_lora_rank", &m.kv_lora_rank, 1, 65536);
  map.get("qk_rope_head_dim", &m.qk_rope_head_dim, 0, 65536);
  // bf16 row: every element of the 576-wide cached row in 2 bytes; anything else is a typo.
  const int64_t bf16_row = int64_t{2} * (m.kv_lora_rank + m.qk_rope_head_dim);
  m.latent_row_bytes = bf16_row;
  map.get_integral("latent_row_bytes", &m.latent_row_bytes, 1, kMaxInt, Unit::kBytes);
  if (m.latent_row_bytes != bf16_row)
    throw_error("{}: got {}, expected (kv_lora_rank + qk_rope_head_dim) × 2 = ({} + {}) × 2 = {} (bf16)",
                map.where("latent_row_bytes"), m.latent_row_bytes, m.kv_lora_rank, m.qk_rope_head_dim, bf16_row);
  // FlashMLA fp8 layout: fp8 latent, one fp32 scale per 128 latent values, rope kept in bf16 (512+16+128 = 656).
  m.latent_row_bytes_fp8 = m.kv_lora_rank + (m.kv_lora_rank / 128) * 4 + int64_t{2} * m.qk_rope_head_dim;
  map.get_integral("latent_row_bytes_fp8", &m.latent_row_bytes_fp8, 1, kMaxInt, Unit::kBytes);
  map.get("indexer_heads", &m.indexer_heads, 0, 4096);
  map.get("indexer_head_dim", &m.indexer_head_dim, 0, 65536);
  // Indexer key: fp8 values plus one fp32 scale per 128 (SGLang DSATokenToKVPool.quant_block_size).
  m.indexer_key_bytes = m.indexer_head_dim + (m.indexer_head_dim / 128) * 4;
  map.get_integral("indexer_key_bytes", &m.indexer_key_bytes, 0, kMaxInt, Unit::kBytes);
  map.get("attention_heads", &m.attention_heads, 1, 65536);
  map.get("top_k", &m.top_k, 1, 1 << 24);
  map.get("topk_layer_group", &m.topk_layer_group, 1, m.layers);
  map.get("topk_skip_offset", &m.topk_skip_offset, 1, m.layers);
  read_compressed_attention(map, &m);
  map.get("weight_bytes", &m.weight_bytes, 1, 1e15, Unit::kBytes);
  map.get("dp_replicated_weight_bytes", &m.dp_replicated_weight_bytes, 0, m.weight_bytes, Unit::kBytes);
  map.get("vocab_size", &m.vocab_size, 0, kMaxInt);
  map.get("hidden_size", &m.hidden_size, 0, 1 << 20);
  map.get("dense_layers", &m.dense_layers, 0, m.layers);
  map.get("routed_experts", &m.routed_experts, 0, 1 << 16);
  map.get("experts_per_token", &m.experts_per_token, 0, std::max(m.routed_experts, 0));
  map.get("shared_experts", &m.shared_experts, 0, 1 << 10);
  map.get("moe_intermediate_size", &m.moe_intermediate_size, 0, 1 << 20);
  map.get("dense_intermediate_size", &m.dense_intermediate_size, 0, 1 << 22);
  map.get("q_lora_rank", &m.q_lora_rank, 0, 1 << 20);
  map.get("qk_nope_head_dim", &m.qk_nope_head_dim, 0, 65536);
  map.get("v_head_dim", &m.v_head_dim, 0, 65536);
  map.get("active_params", &m.active_params, 0, 1e14);
  // Per-op weight precision as served (NVFP4 or FP8 experts with BF16 attention); absent = the cost model's
  // weight_bytes_per_param for every GEMM, as the FP8 checkpoints ship. weight_bytes stays the checkpoint's own
  // size: these set what each decode step reads, not what the GPUs hold.
  map.get("dense_weight_bytes_per_param", &m.dense_weight_bytes_per_param, 0.25, 4);
  map.get("expert_weight_bytes_per_param", &m.expert_weight_bytes_per_param, 0.25, 4);
  if (m.expert_weight_bytes_per_param > 0 && m.routed_experts == 0)
    throw_error("{}: got {}, but the model has no routed experts (routed_experts 0); expected it absent",
                map.where("expert_weight_bytes_per_param"), m.expert_weight_bytes_per_param);
  map.finish();
  return m;
}

HardwareSpec load_hardware_spec(const std::string& path) {
  HardwareSpec h;
  StrictMap map(load_yaml_file(path), path, "");
  h.name = stem_of(path);
  map.get("name", &h.name);
  for (const char* key : {"hbm_bytes", "hbm_bytes_per_s", "bf16_flops", "pcie"}) map.require(key);
  map.get("hbm_bytes", &h.hbm_bytes, 1e9, 1e13, Unit::kBytes);
  map.get("hbm_bytes_per_s", &h.hbm_bytes_per_s, 1e9, 1e14, Unit::kBytesPerSecond);
  map.get("bf16_flops", &h.bf16_flops, 1e12, 1e18, Unit::kFlopsPerSecond);
  h.fp8_flops = h.bf16_flops;
  map.get("fp8_flops", &h.fp8_flops, 1e12, 1e18, Unit::kFlopsPerSecond);
  map.get("nvlink_bytes_per_s", &h.nvlink_bytes_per_s, 0, 1e13, Unit::kBytesPerSecond);
  map.get_integral("kernel_launch_ns", &h.kernel_launch_ns, 0, 100000000, Unit::kNanoseconds);
  map.get("sm_count", &h.sm_count, 0, 100000);
  {
    StrictMap pcie = map.child("pcie");
    for (const char* key : {"h2d_bulk_bytes_per_s", "d2h_bulk_bytes_per_s", "gather_row_bytes_per_s"})
      pcie.require(key);
    pcie.get("generation", &h.pcie.generation, 1, 7);
    pcie.get("lanes", &h.pcie.lanes, 1, 32);
    // A link faster than a PCIe Gen7 x32 (≈ 512 GB/s per direction) is a unit mistake, not a link.
    pcie.get("h2d_bulk_bytes_per_s", &h.pcie.h2d_bulk_bytes_per_s, 1e8, 5.12e11, Unit::kBytesPerSecond);
    pcie.get("d2h_bulk_bytes_per_s", &h.pcie.d2h_bulk_bytes_per_s, 1e8, 5.12e11, Unit::kBytesPerSecond);
    pcie.get("gather_row_bytes_per_s", &h.pcie.gather_row_bytes_per_s, 1e8, 5.12e11, Unit::kBytesPerSecond);
    pcie.get_integral("latency_ns", &h.pcie.latency_ns, 0, 100000000, Unit::kNanoseconds);
    pcie.finish();
  }
  if (map.has("numa")) {
    StrictMap numa = map.child("numa");
    numa.get("nodes", &h.numa_nodes, 1, 64);
    numa.get("dram_bytes_per_s_per_node", &h.host_dram_bytes_per_s_per_numa, 0, 1e13, Unit::kBytesPerSecond);
    numa.get("cross_node_factor", &h.numa_cross_node_factor, 0.01, 1);
    numa.finish();
  }
  map.get("gpus_per_node", &h.gpus_per_node, 1, 1024);
  // Calibration files are named relative to the hardware file and must exist (a typo would silently fall back).
  for (auto [key, out] : {std::pair{"calibration", &h.calibration}, std::pair{"step_calibration", &h.step_calibration},
                          std::pair{"cost_model", &h.cost_model},
                          std::pair{"deltakv_calibration", &h.deltakv_calibration},
                          std::pair{"sglang_swap_in_calibration", &h.sglang_swap_in_calibration},
                          std::pair{"attention_table", &h.attention_table},
                          std::pair{"attention_table_from", &h.attention_table_from}}) {
    if (!map.has(key)) continue;
    map.get(key, out);
    const fs::path p = fs::path(*out).is_absolute() ? fs::path(*out) : fs::path(path).parent_path() / *out;
    const std::string k = key;
    if (!fs::exists(p))
      throw_error("{}: no file {} (expected a {})", map.where(key), p.string(),
                  k == "cost_model"             ? "cost-model YAML"
                  : k == "attention_table"      ? "FlashMLA timing CSV"
                  : k == "attention_table_from" ? "hardware YAML with an attention_table"
                                                : "calibration YAML");
    *out = p.lexically_normal().string();
  }
  if (map.has("step_calibrations")) {
    const YAML::Node list = map.sequence("step_calibrations");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string where = fmt::format("{}[{}]", map.where("step_calibrations"), i);
      if (!list[i].IsScalar()) throw_error("{}: expected a calibration YAML path", where);
      const std::string name = list[i].as<std::string>();
      const fs::path p = fs::path(name).is_absolute() ? fs::path(name) : fs::path(path).parent_path() / name;
      if (!fs::exists(p)) throw_error("{}: no file {} (expected a calibration YAML)", where, p.string());
      h.step_calibrations.push_back(p.lexically_normal().string());
    }
  }
  {
    StrictMap nic = map.child("nic");
    nic.get("count", &h.nic.count, 0, 1024);
    nic.get("bits_per_s", &h.nic.bits_per_s, 0, 1e13, Unit::kBitsPerSecond);
    nic.get_integral("per_message_ns", &h.nic.per_message_ns, 0, 100000000, Unit::kNanoseconds);
    nic.finish();
  }
  map.finish();
  return h;
}

DeploymentSpec load_deployment_spec(const std::string& path) {
  DeploymentSpec d;
  StrictMap map(load_yaml_file(path), path, "");
  d.name = stem_of(path);
  map.get("name", &d.name);
  for (const char* key : {"model", "hardware", "host_dram_bytes"}) map.require(key);
  map.get("model", &d.model);
  map.get("hardware", &d.hardware);
  read_instance(map.child("decode"), &d.decode);
  // Without a prefill section prefill runs inside the decode instances.
  d.prefill.count = 0;
  read_instance(map.child("prefill"), &d.prefill);
  map.get("pd_disaggregation", &d.pd_disaggregation);
  map.get("host_dram_bytes", &d.host_dram_bytes, 0, 1e16, Unit::kBytes);
  std::string numa_binding = "local";
  map.get_choice("host_pool_numa", &numa_binding, {"local", "remote"});
  d.host_pool_remote_numa = numa_binding == "remote";
  std::string host_layout = "layer_first";
  map.get_choice("host_layout", &host_layout, {"layer_first", "page_first", "page_first_direct"});
  for (HostPoolLayout l : {HostPoolLayout::kLayerFirst, HostPoolLayout::kPageFirst, HostPoolLayout::kPageFirstDirect})
    if (host_layout == host_pool_layout_name(l)) d.host_layout = l;
  map.get("mem_fraction_static", &d.mem_fraction_static, 0.01, 1.0);
  map.get("page_size", &d.page_size, 1, 65536);
  std::string dtype = "bf16";
  map.get_choice("kv_dtype", &dtype, {"bf16", "fp8", "nvfp4"});
  d.kv_dtype = dtype == "fp8" ? KvDtype::kFp8 : dtype == "nvfp4" ? KvDtype::kNvfp4 : KvDtype::kBf16;
  map.get("context_length", &d.context_length, 1, 1 << 26);
  map.get("max_running_requests", &d.max_running_requests, 0, 1 << 24);
  map.get("num_reserved_decode_tokens", &d.num_reserved_decode_tokens, 0, 1 << 24);
  map.get("activation_reserve_bytes", &d.activation_reserve_bytes, 0, 1e13, Unit::kBytes);
  map.get("tpot_slo_ms", &d.tpot_slo_ms, 0.01, 1e6);
  map.get("swa_full_tokens_ratio", &d.swa_full_tokens_ratio, 0.01, 1.0);
  map.get("mamba_full_memory_ratio", &d.mamba_full_memory_ratio, 0.01, 100.0);
  map.get("max_mamba_cache_size", &d.max_mamba_cache_size, 0, int64_t{1} << 24);
  map.get("hisparse_enabled", &d.hisparse_enabled);
  map.get("mtp_draft_tokens", &d.mtp_draft_tokens, 0, 16);
  map.get("mtp_acceptance", &d.mtp_acceptance, 0.0, 1.0);
  map.get_choice("engine", &d.engine, {"sglang", "project", "vllm"});
  map.get("decode_reserve_ratio", &d.decode_reserve_ratio, 0.0, 1.0);
  map.get_choice("engine_version", &d.engine_version, engine_version_names());
  if (map.has("swap_in_kernel")) map.get_choice("swap_in_kernel", &d.swap_in_kernel, {"sglang", "project"});
  map.get_choice("deepep_mode", &d.deepep_mode, {"auto", "low_latency", "normal"});
  map.get("hisparse_prefetch", &d.hisparse_prefetch);
  // The knobs come either as a YAML mapping or verbatim as the JSON string given to SGLang's --hisparse-config.
  if (map.has("hisparse") && map.has("hisparse_config"))
    throw_error("{}: both 'hisparse' and 'hisparse_config' given; expected at most one of them", path);
  if (map.has("hisparse_config")) {
    std::string json;
    map.get("hisparse_config", &json);
    d.hisparse = HiSparseConfig::from_json(json, map.where("hisparse_config"));
  } else {
    StrictMap hs = map.child("hisparse");
    d.hisparse = HiSparseConfig::from_map(hs);
  }
  if (map.has("double_sparsity")) {
    StrictMap ds = map.child("double_sparsity");
    d.double_sparsity.enabled = true;
    ds.get("enabled", &d.double_sparsity.enabled);
    ds.get("heavy_channel_num", &d.double_sparsity.heavy_channel_num, 1, 4096);
    ds.get("heavy_token_num", &d.double_sparsity.heavy_token_num, 1, 1 << 24);
    ds.get_choice("channel_type", &d.double_sparsity.channel_type, {"qk", "q", "k"});
    ds.get("sparse_decode_threshold", &d.double_sparsity.sparse_decode_threshold, 0, 1 << 26);
    ds.finish();
  }
  {
    StrictMap mem = map.child("memory");
    mem.get("hbm_bytes", &d.memory.hbm_bytes, 0, 1e13, Unit::kBytes);
    mem.get("weight_bytes", &d.memory.weight_bytes, 0, 1e15, Unit::kBytes);
    mem.get("weights_per_gpu_bytes", &d.memory.weights_per_gpu_bytes, 0, 1e13, Unit::kBytes);
    mem.get("kv_budget_bytes", &d.memory.kv_budget_bytes, 0, 1e13, Unit::kBytes);
    mem.get("full_pool_tokens", &d.memory.full_pool_tokens, 0, int64_t{1} << 40);
    mem.get("device_pool_tokens", &d.memory.device_pool_tokens, 0, int64_t{1} << 40);
    mem.get("host_pool_tokens", &d.memory.host_pool_tokens, 0, int64_t{1} << 42);
    mem.finish();
  }
  map.finish();
  return d;
}

namespace {

#ifdef HISPARSE_SCENARIO_DIR
std::string bundled_scenario_dir = HISPARSE_SCENARIO_DIR;
#else
std::string bundled_scenario_dir;
#endif

}  // namespace

void set_bundled_scenario_dir(const std::string& dir) { bundled_scenario_dir = dir; }

std::vector<std::string> scenario_dir_candidates() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("HISPARSE_SCENARIO_DIR"); env && *env) dirs.push_back(fs::absolute(env).string());
  // The working directory's scenarios/ before the bundled ones: a user's own copy (or a checkout other than the
  // build's) is what they are looking at.
  dirs.push_back(fs::absolute("scenarios").string());
  if (!bundled_scenario_dir.empty()) dirs.push_back(bundled_scenario_dir);
  return dirs;
}

std::vector<std::string> scenario_dirs() {
  std::vector<std::string> existing;
  for (const auto& d : scenario_dir_candidates()) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) continue;
    const std::string canonical = fs::weakly_canonical(d, ec).string();
    if (std::find(existing.begin(), existing.end(), canonical) == existing.end()) existing.push_back(canonical);
  }
  return existing;
}

std::vector<std::string> list_scenarios(const std::string& kind) {
  std::vector<std::string> names;
  for (const auto& dir : scenario_dirs()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(dir) / kind, ec)) {
      if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

namespace {

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || fs::path(s).extension() == ".yaml" ||
         fs::path(s).extension() == ".yml";
}

/// Finds <dir>/<kind>/<name>.yaml; `first` is searched before the standard directories.
std::string resolve(const std::string& name, const std::string& kind, const std::string& first,
                    const std::string& referrer) {
  std::vector<std::string> dirs;
  if (!first.empty()) dirs.push_back(first);
  for (const auto& d : scenario_dirs()) dirs.push_back(d);
  for (const auto& d : dirs) {
    const fs::path p = fs::path(d) / kind / (name + ".yaml");
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  // Every place looked at, the missing ones marked, so an empty or wrong search path shows as such.
  std::vector<std::string> searched;
  if (!first.empty()) searched.push_back((fs::path(first) / kind).string());
  for (const auto& d : scenario_dir_candidates()) {
    std::error_code ec;
    const fs::path p = fs::path(d) / kind;
    const std::string entry = fs::is_directory(p, ec) ? p.string() : p.string() + " (missing)";
    if (std::find(searched.begin(), searched.end(), entry) == searched.end()) searched.push_back(entry);
  }
  const std::string what = kind == "deployments" ? "deployment" : kind == "models" ? "model" : kind;
  const std::vector<std::string> available = list_scenarios(kind);
  throw_not_found("{}{} '{}' not found: looked for {}.yaml in {}; available: {} (set HISPARSE_SCENARIO_DIR to a "
                  "directory holding {}/, or give a path to a .yaml file)",
                  referrer, what, name, name, fmt::join(searched, ", "),
                  available.empty() ? std::string("none, no scenario directory holds any")
                                    : fmt::format("{}", fmt::join(available, ", ")),
                  kind);
}

}  // namespace

void require_sparse_indexer(const Scenario& s, const std::string& command) {
  if (s.model.has_sparse_indexer()) return;
  throw_error("{}: {} models HiSparse's selection and pools, which need DeepSeek Sparse Attention's indexer; model {} "
              "has {} attention and no sparse indexer (use `hisparse info` / `hisparse plan` for its memory and "
              "capacity)",
              s.source, command, s.model.name, family_of(s).attention_label());
}

Scenario load_scenario(const std::string& name_or_path) {
  std::string path = name_or_path;
  std::error_code ec;
  if (!(looks_like_path(name_or_path) && fs::is_regular_file(name_or_path, ec))) {
    if (looks_like_path(name_or_path)) {
      if (fs::exists(name_or_path, ec))
        throw_error("scenario file '{}' is not a regular file ({}); expected a deployment YAML", name_or_path,
                    fs::is_directory(name_or_path, ec) ? "a directory" : "a device, FIFO or socket");
      throw_not_found("scenario file '{}' does not exist", name_or_path);
    }
    path = resolve(name_or_path, "deployments", "", "");
  }
  Scenario s;
  s.source = path;
  s.deployment = load_deployment_spec(path);
  // Models and hardware next to the deployment (../models) win over the standard directories.
  const fs::path dep_dir = fs::path(path).parent_path();
  const std::string sibling_root = (dep_dir / "..").lexically_normal().string();
  const std::string referrer = fmt::format("{}: ", path);
  auto find = [&](const std::string& value, const std::string& kind) {
    if (looks_like_path(value)) {
      const fs::path p = fs::path(value).is_absolute() ? fs::path(value) : dep_dir / value;
      if (!fs::is_regular_file(p, ec)) {
        if (fs::exists(p, ec))
          throw_error("{}{}: '{}' is not a regular file; expected a {} YAML", referrer, kind, p.string(),
                      kind == "models" ? "model" : "hardware");
        throw_not_found("{}{}: file '{}' does not exist", referrer, kind, p.string());
      }
      return p.string();
    }
    return resolve(value, kind, sibling_root, referrer);
  };
  s.model = load_model_spec(find(s.deployment.model, "models"));
  s.hardware = load_hardware_spec(find(s.deployment.hardware, "hardware"));
  family_of(s);  // a model naming an unknown family fails here, with the names it could have used
  if (!s.model.has_sparse_indexer() && s.deployment.hisparse_enabled)
    throw_error("{}: hisparse_enabled: got true, expected false: model {} has no sparse indexer ({} attention), and "
                "HiSparse offloads what DeepSeek Sparse Attention's indexer selects",
                path, s.model.name, family_of(s).attention_label());
  if (s.deployment.mtp_draft_tokens > 0 && s.model.mtp_layers == 0)
    throw_error("{}: mtp_draft_tokens: got {}, expected 0: model {} has no MTP layer (mtp_layers 0) to draft with", path,
                s.deployment.mtp_draft_tokens, s.model.name);
  if (s.deployment.double_sparsity.enabled) {
    // SGLang builds DoubleSparseTokenToKVPool only off the MLA branch (model_runner: MLA first, then double sparsity):
    // the label cache is a slice of per-head keys, which an MLA latent row does not have.
    const ModelSpec& m = s.model;
    if (!m.is_gqa())
      throw_error("{}: double_sparsity: model {} has MLA attention; expected a GQA / MHA model (SGLang's "
                  "DoubleSparseTokenToKVPool labels per-KV-head keys, Llama-style models)", path, m.name);
    if (m.sliding_layer_count() > 0 || m.has_linear_attention())
      throw_error("{}: double_sparsity: model {} has {} layers; expected every layer full attention (the label pool "
                  "is one MHA-style pool over all layers)", path, m.name,
                  m.sliding_layer_count() > 0 ? "sliding-window" : "linear-attention");
    if (s.deployment.double_sparsity.heavy_channel_num > m.head_dim)
      throw_error("{}: double_sparsity.heavy_channel_num: got {}, expected at most the model's head_dim {}", path,
                  s.deployment.double_sparsity.heavy_channel_num, m.head_dim);
  }
  if (s.model.is_gqa()) {
    // SGLang shards KV heads over the attention TP group and replicates them when the group is larger.
    const int atp = std::max(1, s.deployment.decode.tp / std::max(1, s.deployment.decode.dp_attention));
    const int kvh = s.model.num_key_value_heads;
    if (atp < kvh && kvh % atp != 0)
      throw_error("{}: decode.tp / dp_attention = {}: expected a divisor of the model's num_key_value_heads {} (or a "
                  "multiple of it, which replicates the KV heads)", path, atp, kvh);
    if (atp > kvh && atp % kvh != 0)
      throw_error("{}: decode.tp / dp_attention = {}: expected a multiple of the model's num_key_value_heads {} "
                  "when larger than it", path, atp, kvh);
  }
  // SGLang takes top_k from the model's index_topk, whatever --hisparse-config says.
  if (s.model.has_sparse_indexer() && s.deployment.hisparse.top_k != s.model.top_k)
    throw_error("{}: hisparse.top_k: got {}, expected the model's top_k {} (SGLang uses the model's index_topk)", path,
                s.deployment.hisparse.top_k, s.model.top_k);
  // vLLM refuses to start when one request at max_model_len does not fit the host pool (create_hisparse_layout:
  // host blocks >= cdiv(max_model_len, block) + 2, the null block and a copy-on-write tail).
  const HiSparseConfig& hs = s.deployment.hisparse;
  if (hs.host_pool_gib > 0 && s.model.has_sparse_indexer()) {
    const int page = std::max(1, s.deployment.page_size);
    const double block = static_cast<double>(page) * s.model.kv_layers() * latent_row_bytes(s.model, s.deployment.kv_dtype);
    const auto blocks = static_cast<int64_t>(hs.host_pool_gib * 1073741824.0 / block);
    const int64_t need = (int64_t{s.deployment.context_length} + page - 1) / page + 2;
    if (blocks < need)
      throw_error("{}: hisparse.host_pool_gib: got {} GiB ({} blocks of {} tokens), expected at least {} blocks: one "
                  "request of context_length {} plus two (as vLLM checks at start-up)",
                  path, hs.host_pool_gib, blocks, page, need, s.deployment.context_length);
  }
  if (!s.model.has_linear_attention())
    for (auto [key, given] : {std::pair{"mamba_full_memory_ratio", s.deployment.mamba_full_memory_ratio > 0},
                              std::pair{"max_mamba_cache_size", s.deployment.max_mamba_cache_size > 0}})
      if (given)
        throw_error("{}: {}: expected absent: model {} has no linear-attention (Mamba) layers", path, key,
                    s.model.name);
  // NVFP4 rows exist only where the model publishes their size (DeepSeek-V4: 416 B main + 132 B indexer, #35237).
  if (s.deployment.kv_dtype == KvDtype::kNvfp4 && s.model.latent_row_bytes_nvfp4 <= 0)
    throw_error("{}: kv_dtype: got nvfp4, expected bf16 or fp8: model {} publishes no NVFP4 row "
                "(latent_row_bytes_nvfp4)", path, s.model.name);
  // SGLang asserts whole 128-token compression blocks per page for DeepSeek-V4's C4 / C128 pools.
  if (s.model.is_compressed() && s.deployment.page_size % 128 != 0)
    throw_error("{}: page_size: got {}, expected a multiple of 128 for model {} (compressed attention)", path,
                s.deployment.page_size, s.model.name);
  if (s.deployment.decode.pp > 1) {
    if (s.deployment.decode.pp > s.model.layers)
      throw_error("{}: decode.pp: got {}, expected at most the model {}'s {} layers (every stage holds one)", path,
                  s.deployment.decode.pp, s.model.name, s.model.layers);
    if (s.deployment.mtp_draft_tokens > 0)
      throw_error("{}: mtp_draft_tokens: got {} with decode.pp {}, expected 0 (speculative decoding under pipeline "
                  "parallelism is not modelled)", path, s.deployment.mtp_draft_tokens, s.deployment.decode.pp);
  }
  if (s.deployment.decode.gpus > s.hardware.gpus_per_node && s.deployment.decode.gpus % s.hardware.gpus_per_node)
    throw_error("{}: decode.gpus: got {}, expected a multiple of the node size {}", path, s.deployment.decode.gpus,
                s.hardware.gpus_per_node);
  return s;
}

}  // namespace hisparse

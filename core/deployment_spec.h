// @brief DeploymentSpec and Scenario: how a model is served on hardware (scenarios/deployments/*.yaml).
#pragma once

#include <cstdint>
#include <string>

#include "core/hardware_spec.h"
#include "core/hisparse_config.h"
#include "core/host_layout.h"
#include "core/model_spec.h"

namespace hisparse {

// NVFP4: DeepSeek-V4's 4-bit KV rows (SGLang PR #35237); only models that publish latent_row_bytes_nvfp4 accept it.
enum class KvDtype { kBf16, kFp8, kNvfp4 };
inline const char* to_string(KvDtype d) { return d == KvDtype::kFp8 ? "fp8" : d == KvDtype::kNvfp4 ? "nvfp4" : "bf16"; }

struct InstanceSpec {
  int count = 1;                     // instances of this role
  int gpus = 8;                      // GPUs per instance
  int tp = 8;                        // tensor parallel
  int dp_attention = 8;              // attention data parallel (each GPU serves its own requests)
  int ep = 8;                        // expert parallel
  // Pipeline stages (SGLang --pp-size): gpus = tp × pp, each stage a TP group holding its layers' weights and KV
  // (core/pipeline_stages.h); decode runs pp micro-batches through them (sim/cost/step/pipeline_step.h). 1 = none.
  int pp = 1;
};

/// Figures a deployment may pin instead of deriving them (0 = derive). Lets a user hold the planner against the
/// numbers a real server printed at start-up.
struct MemoryOverrides {
  double hbm_bytes = 0;              // per GPU, replaces hardware.hbm_bytes
  double weight_bytes = 0;           // all weights, replaces model.weight_bytes
  double weights_per_gpu_bytes = 0;  // replaces the sharding arithmetic
  double kv_budget_bytes = 0;        // per GPU, replaces HBM × mem_fraction_static − weights − reserve
  int64_t full_pool_tokens = 0;      // per GPU: max_total_num_tokens of a server without HiSparse
  int64_t device_pool_tokens = 0;    // per GPU: SGLang's max_total_num_tokens
  int64_t host_pool_tokens = 0;      // per GPU: host pool size in tokens
};

/// SGLang's Double Sparsity (--enable-double-sparsity; server_args.py defaults below): a GQA / MHA model keeps, beside
/// K and V, a label cache of each token's key on `heavy_channel_num` channels per KV head (DoubleSparseTokenToKVPool's
/// label_buffer, [size + 1, head_num, heavy_channel_num] per layer in the KV dtype); decode scores every token on
/// those channels and attends to the best `heavy_token_num` once a request is longer than `sparse_decode_threshold`.
/// The channels come from an offline calibration file (--ds-channel-config-path).
struct DoubleSparsityConfig {
  bool enabled = false;
  int heavy_channel_num = 32;          // --ds-heavy-channel-num
  int heavy_token_num = 256;           // --ds-heavy-token-num
  std::string channel_type = "qk";     // --ds-heavy-channel-type: qk, q or k (which calibration ranking)
  int sparse_decode_threshold = 4096;  // --ds-sparse-decode-threshold
};

struct DeploymentSpec {
  std::string name;
  std::string model;                 // name of scenarios/models/<model>.yaml
  std::string hardware;              // name of scenarios/hardware/<hardware>.yaml
  InstanceSpec decode;               // decode instances
  InstanceSpec prefill;              // prefill instances (count 0 = none modelled: colocated, or PD with
                                     // prefill nodes outside the scenario)
  bool pd_disaggregation = false;    // prefill writes KV straight into the decode host pool by RDMA
  double host_dram_bytes = 0;        // per decode node
  // Where each decode GPU's host pool lives (YAML host_pool_numa: local | remote): local = bound to the GPU's own NUMA
  // node (numactl --membind, SGLang's default intent); remote = on the other socket, read at the hardware's
  // numa.cross_node_factor share of that node's DRAM bandwidth (sim/cost/terms/transfer_granularity.h).
  bool host_pool_remote_numa = false;
  // How each decode GPU's host pool is laid out and copied (YAML host_layout: layer_first | page_first |
  // page_first_direct; core/host_layout.h): the number of copy calls of a miss load, a backup and a prefill offload
  // (sim/cost/terms/transfer_granularity.h). Default layer_first, what SGLang's HiSparse allocates.
  HostPoolLayout host_layout = HostPoolLayout::kLayerFirst;
  double mem_fraction_static = 0.85;
  int page_size = 64;
  KvDtype kv_dtype = KvDtype::kBf16;
  int context_length = 163840;
  int max_running_requests = 0;      // per decode GPU (dp rank); 0 = unlimited
  // SGLang's --num-reserved-decode-tokens: a PD decode server admits a request only while the pool keeps this many
  // tokens per running request for their coming decode tokens (disaggregation/decode.py _allocatable_tokens;
  // server_args.py default 512). -1 = SGLang's behaviour: 512 on a PD decode server, 0 colocated (the colocated
  // scheduler reserves through new_token_ratio instead, not modelled).
  int num_reserved_decode_tokens = -1;
  int64_t decode_token_reserve() const {
    return num_reserved_decode_tokens >= 0 ? num_reserved_decode_tokens : (pd_disaggregation ? 512 : 0);
  }
  double activation_reserve_bytes = 0;  // per GPU: activations and CUDA graphs outside the static pool
  double tpot_slo_ms = 50;
  // Sliding-window models: SGLang's --swa-full-tokens-ratio, tokens of the sliding-layer pool per token of the
  // full-attention pool (server_args.py default 0.8).
  double swa_full_tokens_ratio = 0.8;
  // Hybrid linear-attention models only (0 = absent): SGLang's --mamba-full-memory-ratio (Mamba state memory per
  // byte of KV, server_args default 0.9) and --max-mamba-cache-size (Mamba slots; 0 = from the ratio).
  double mamba_full_memory_ratio = 0;
  int64_t max_mamba_cache_size = 0;
  bool hisparse_enabled = true;
  // Speculative decoding with the model's MTP layer (SGLang --speculative-algorithm NEXTN/EAGLE, --speculative-eagle-topk
  // 1): d draft tokens per step (--speculative-num-steps d, --speculative-num-draft-tokens d + 1), each accepted with
  // probability `mtp_acceptance` given its predecessors were (sim/cost/step/speculative.h). 0 draft tokens = no MTP.
  int mtp_draft_tokens = 0;
  double mtp_acceptance = 0;
  // The serving engine the deployment runs (sglang: SGLang's kernels; project: this project's reference engine; vllm:
  // vLLM, full KV only, whose scheduler allocates decode slots as needed and preempts by recompute,
  // sim/serving/retraction.cpp) and which swap-in kernel prices the plan and miss copy ("" = the engine's own; vllm:
  // sglang's, never used without HiSparse).
  std::string engine = "sglang";
  // The share of each request's remaining output that admission reserves KV for (SGLang's new_token_ratio, here fixed).
  // 1 (default): the whole request is reserved and decode never runs out; below 1, running requests grow past their
  // reservation and SGLang retracts requests when the pool runs out (sim/serving/retraction.cpp).
  double decode_reserve_ratio = 1.0;
  std::string swap_in_kernel;
  // The SGLang version whose pool sizing the deployment runs (core/engine_version.h: each version's rules, cited);
  // `hisparse check` asks whether the configuration starts and fits under them.
  std::string engine_version = "sglang-main";
  // SGLang's --deepep-mode (attention DP with --moe-a2a-backend deepep): low_latency (DeepEP's low-latency kernels,
  // DeepGEMM's masked grouped GEMM), normal (normal kernels, contiguous grouped GEMM) or auto (SGLang's rule: normal
  // for prefill/extend batches, low_latency for decode). The decode step's op-table terms follow it.
  std::string deepep_mode = "auto";
  // IndexShare models (GLM-5.2): after an anchor layer's swap-in, SGLang copies the misses of the layers that share
  // its top-k on a side stream, and those layers run no swap-in kernel of their own (hisparse_coordinator.py,
  // docs/sglang_decode_path.md §3). On by default; SGLANG_DISABLE_HISPARSE_PREFETCH=1 turns it off (every layer then
  // runs the swap-in kernel with its own in-kernel copies).
  bool hisparse_prefetch = true;
  /// The mode a decode batch runs: auto resolves to low_latency.
  std::string decode_deepep_mode() const { return deepep_mode == "normal" ? "normal" : "low_latency"; }
  const std::string& swap_in_kernel_used() const {
    static const std::string sglang = "sglang";
    return !swap_in_kernel.empty() ? swap_in_kernel : engine == "vllm" ? sglang : engine;
  }
  HiSparseConfig hisparse;
  DoubleSparsityConfig double_sparsity;  // YAML `double_sparsity:` (absent: off)
  MemoryOverrides memory;
};

/// A deployment with its model and hardware resolved.
struct Scenario {
  std::string source;                // file the deployment came from
  DeploymentSpec deployment;
  ModelSpec model;
  HardwareSpec hardware;
};

}  // namespace hisparse

// @brief HiSparseConfig: the three knobs of hierarchical sparse attention, validated as SGLang validates them.
#pragma once

#include <string>

namespace hisparse {

class StrictMap;

struct HiSparseConfig {
  int top_k = 2048;                  // K: tokens the indexer selects per step per layer
  int device_buffer_size = 4096;     // H: device slots per request per layer (default 2 × top_k); H >= K
  int host_to_device_ratio = 2;      // logical/host pool size = device pool size × this
  // vLLM's HiSparse sizes the host pool in GiB instead (vllm-project/vllm #53781: HiSparseConnector's
  // kv_connector_extra_config host_pool_gib, logical capacity per DP replica, independent of TP). Exclusive with
  // host_to_device_ratio; 0 = unset.
  double host_pool_gib = 0;
  // Who holds the host pool's bytes (vllm-project/vllm #52760, merged as #56629): "per_rank", every GPU of an
  // attention-TP rank its own copy of the replicated MLA latent (SGLang, vLLM's private pools), or "shared", one
  // copy per node for the rank's GPUs there (vLLM's mmap pool, TP rank 0 writing).
  std::string host_pool_sharing = "per_rank";
  // The remaining keys SGLang's --hisparse-config also accepts (sglang/srt/mem_cache/sparsity parsing).
  int swap_in_block_size = 512;      // CUDA block size of the swap-in kernel, [1, 1024] (docs: 512; some versions 960)
  std::string algorithm;             // "" = SGLang's default selection algorithm
  std::string backend;               // "" = SGLang's default backend
  int min_sparse_prompt_len = 0;     // 0 = unset
  int page_size = 0;                 // 0 = unset (the server's page size applies)

  /// Throws hisparse::Error naming the field ("device_buffer_size (X) must be no smaller than top_k (Y)").
  void validate(const std::string& where = "hisparse config") const;

  /// Parses the JSON string users pass to SGLang's --hisparse-config, e.g. {"top_k": 2048, ...};
  /// absent keys keep SGLang's defaults (device_buffer_size defaults to 2 × top_k). Unknown keys are errors.
  static HiSparseConfig from_json(const std::string& json, const std::string& where = "--hisparse-config");

  /// Reads the same keys from a YAML mapping (a deployment's `hisparse:` section), SGLang's defaults for absent
  /// keys, then validates. Does not call map.finish() beyond its own keys: the map must hold only these keys.
  static HiSparseConfig from_map(StrictMap& map);
};

}  // namespace hisparse

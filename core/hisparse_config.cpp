// @brief HiSparseConfig parsing and validation, following SGLang's parse_hisparse_config (mem_cache/sparsity).
//
// What SGLang does (read in sgl-project/sglang python/sglang/srt/mem_cache/sparsity, `_parse_sparse_config`):
//   top_k defaults to 2048, device_buffer_size to 2 × top_k (taken after top_k is read), host_to_device_ratio to 2,
//   swap_in_block_size to 512 in the HiSparse guide (960 in some versions) and must lie in [1, 1024];
//   "device_buffer_size (X) must be no smaller than top_k (Y)"; algorithm/backend/min_sparse_prompt_len/page_size
//   are optional. host_pool_gib and host_pool_sharing are vLLM's (hisparse_config.h). SGLang forwards any other key to an extra-config dict; we reject it, because a misspelt knob
//   silently keeping its default is the error a planner must not make.
#include "core/hisparse_config.h"

#include <climits>

#include "core/error.h"
#include "core/yaml_reader.h"

namespace hisparse {

void HiSparseConfig::validate(const std::string& where) const {
  if (top_k <= 0) throw_error("{}: top_k ({}) must be positive", where, top_k);
  if (device_buffer_size <= 0)
    throw_error("{}: device_buffer_size ({}) must be positive", where, device_buffer_size);
  if (device_buffer_size < top_k)
    throw_error("{}: device_buffer_size ({}) must be no smaller than top_k ({})", where, device_buffer_size, top_k);
  // The host pool must be larger than the device pool (SGLang's HostKVCache asserts host size > device size).
  if (host_to_device_ratio <= 0)
    throw_error("{}: host_to_device_ratio ({}) must be positive", where, host_to_device_ratio);
  if (host_pool_gib < 0) throw_error("{}: host_pool_gib ({}) must be positive (or absent)", where, host_pool_gib);
  if (host_pool_sharing != "per_rank" && host_pool_sharing != "shared")
    throw_error("{}: host_pool_sharing '{}' is unknown (expected per_rank or shared)", where, host_pool_sharing);
  if (swap_in_block_size <= 0 || swap_in_block_size > 1024)
    throw_error("{}: swap_in_block_size ({}) must be in the range [1, 1024]", where, swap_in_block_size);
  if (min_sparse_prompt_len < 0)
    throw_error("{}: min_sparse_prompt_len ({}) must not be negative", where, min_sparse_prompt_len);
  if (page_size < 0) throw_error("{}: page_size ({}) must not be negative", where, page_size);
}

HiSparseConfig HiSparseConfig::from_map(StrictMap& map) {
  HiSparseConfig c;
  // Ranges here only reject what cannot be an int; the SGLang messages come from validate().
  map.get("top_k", &c.top_k, INT_MIN, INT_MAX);
  c.device_buffer_size = 2 * c.top_k;
  map.get("device_buffer_size", &c.device_buffer_size, INT_MIN, INT_MAX);
  if (map.has("host_to_device_ratio") && map.has("host_pool_gib"))
    throw_error("{}: host_pool_gib and host_to_device_ratio both given; expected one of them (host_pool_gib sizes the "
                "host pool in GiB as vLLM does, host_to_device_ratio as a multiple of the device pool as SGLang does)",
                map.location());
  map.get("host_to_device_ratio", &c.host_to_device_ratio, INT_MIN, INT_MAX);
  // Strictly positive when given: a zero would read as "unset" and silently fall back to the ratio.
  if (map.has("host_pool_gib")) {
    map.get("host_pool_gib", &c.host_pool_gib, 0, 1e9);
    if (c.host_pool_gib <= 0)
      throw_error("{}: host_pool_gib: got {}, expected a positive number of GiB", map.where("host_pool_gib"), c.host_pool_gib);
  }
  map.get_choice("host_pool_sharing", &c.host_pool_sharing, {"per_rank", "shared"});
  map.get("swap_in_block_size", &c.swap_in_block_size, INT_MIN, INT_MAX);
  map.get("algorithm", &c.algorithm);
  map.get("backend", &c.backend);
  map.get("min_sparse_prompt_len", &c.min_sparse_prompt_len, INT_MIN, INT_MAX);
  map.get("page_size", &c.page_size, INT_MIN, INT_MAX);
  map.finish();
  c.validate(map.location());
  return c;
}

HiSparseConfig HiSparseConfig::from_json(const std::string& json, const std::string& where) {
  const YAML::Node root = load_yaml_string(json, where);
  if (!root.IsMap()) throw_error("{}: got {}, expected a JSON object like {{\"top_k\": 2048}}", where, describe_node(root));
  StrictMap map(root, where, "");
  return from_map(map);
}

}  // namespace hisparse

// @brief HiSparseConfig: the three knobs of hierarchical sparse attention, validated as SGLang validates them.
#pragma once

#include <string>

namespace hisparse {

struct HiSparseConfig {
  int top_k = 2048;                  // K: tokens the indexer selects per step per layer
  int device_buffer_size = 4096;     // H: device slots per request per layer (default 2 × top_k); H >= K
  int host_to_device_ratio = 2;      // logical/host pool size = device pool size × this

  /// Throws hisparse::Error naming the field ("device_buffer_size (X) must be no smaller than top_k (Y)").
  void validate(const std::string& where = "hisparse config") const;

  /// Parses the JSON string users pass to SGLang's --hisparse-config, e.g. {"top_k": 2048, ...};
  /// absent keys keep SGLang's defaults (device_buffer_size defaults to 2 × top_k).
  static HiSparseConfig from_json(const std::string& json, const std::string& where = "--hisparse-config");
};

}  // namespace hisparse

// @brief DeploymentSpec and Scenario: how a model is served on hardware (scenarios/deployments/*.yaml).
#pragma once

#include <cstdint>
#include <string>

#include "core/hardware_spec.h"
#include "core/hisparse_config.h"
#include "core/model_spec.h"

namespace hisparse {

enum class KvDtype { kBf16, kFp8 };

struct InstanceSpec {
  int count = 1;                     // instances of this role
  int gpus = 8;                      // GPUs per instance
  int tp = 8;                        // tensor parallel
  int dp_attention = 8;              // attention data parallel (each GPU serves its own requests)
  int ep = 8;                        // expert parallel
};

struct DeploymentSpec {
  std::string name;
  std::string model;                 // name of scenarios/models/<model>.yaml
  std::string hardware;              // name of scenarios/hardware/<hardware>.yaml
  InstanceSpec decode;               // decode instances
  InstanceSpec prefill;              // prefill instances (count 0 = colocated prefill)
  bool pd_disaggregation = false;    // prefill writes KV straight into the decode host pool by RDMA
  double host_dram_bytes = 0;        // per decode node
  double mem_fraction_static = 0.85;
  int page_size = 64;
  KvDtype kv_dtype = KvDtype::kBf16;
  int context_length = 163840;
  int max_running_requests = 0;      // per decode GPU (dp rank); 0 = unlimited
  double activation_reserve_bytes = 0;  // per GPU: activations and CUDA graphs outside the static pool
  double tpot_slo_ms = 50;
  bool hisparse_enabled = true;
  HiSparseConfig hisparse;
};

/// A deployment with its model and hardware resolved.
struct Scenario {
  std::string source;                // file the deployment came from
  DeploymentSpec deployment;
  ModelSpec model;
  HardwareSpec hardware;
};

}  // namespace hisparse

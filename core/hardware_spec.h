// @brief HardwareSpec: one GPU and its host link (scenarios/hardware/*.yaml). Rates in bytes/s, FLOP/s; times in ns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hisparse {

struct PcieSpec {
  int generation = 5;
  int lanes = 16;
  double h2d_bulk_bytes_per_s = 0;       // pinned bulk cudaMemcpy host→device (H200 host: 55.3e9)
  double d2h_bulk_bytes_per_s = 0;       // pinned bulk cudaMemcpy device→host (55.3e9)
  double gather_row_bytes_per_s = 0;     // kernel gather of random 1152-B rows from pinned memory (≈ 50e9)
  int64_t latency_ns = 0;                // fixed cost per transfer operation
};

struct NicSpec {
  int count = 0;                         // NICs per node
  double bits_per_s = 0;                 // per NIC (400e9)
  int64_t per_message_ns = 0;            // per RDMA message overhead
};

struct HardwareSpec {
  std::string name;
  double hbm_bytes = 0;                  // per GPU
  double hbm_bytes_per_s = 0;
  double bf16_flops = 0;                 // dense, per GPU
  double fp8_flops = 0;
  double nvlink_bytes_per_s = 0;         // per GPU, one direction
  int64_t kernel_launch_ns = 0;          // read for older files; the cost model charges graph gaps (sim/cost/terms/cost_params.h)
  int sm_count = 0;                      // streaming multiprocessors (0 = not given: zero-copy SM time not charged)
  PcieSpec pcie;
  // NUMA (YAML block `numa:`): host DRAM bandwidth per NUMA node, the nodes per server (GPUs split evenly across
  // them), and the share of that bandwidth a GPU gets when it reads a host pool on another node (a copy bound to
  // the GPU's own node gets 1).
  double host_dram_bytes_per_s_per_numa = 0;
  int numa_nodes = 2;
  double numa_cross_node_factor = 1;     // (0, 1]
  int gpus_per_node = 8;
  NicSpec nic;
  // Measurements of this GPU the cost model loads by default (paths resolved against the hardware file; empty: none).
  std::string calibration;       // PCIe and swap-in copy costs (`hisparse bench --calibrate`, sim/calibration/calibration.h)
  std::string step_calibration;  // per-op decode-layer models (`hisparse bench step --fit`, sim/calibration/step_calibration.h)
  // Further per-op calibrations of this GPU, one per model / expert-parallel size measured: `auto` picks the one of
  // the scenario's model whose ep is nearest the deployment's (sim/calibration/calibration_choice.h).
  std::vector<std::string> step_calibrations;
  std::string cost_model;        // the cost model's own terms with their sources (sim/cost/terms/cost_params.h)
  std::string deltakv_calibration;  // DeltaKV reconstruction timed on a GPU (scenarios/calibration/*deltakv*.yaml,
                                    // sim/calibration/deltakv_calibration.h); empty: the planner's assumed cost
  std::string sglang_swap_in_calibration;  // SGLang's swap-in kernel fitted on this GPU (a calibration YAML; the
                                           // `calibration:` file holds this project's kernel)
  std::string attention_table;       // FlashMLA sparse decode timed on this GPU (CSV, sim/cost/terms/attention_table.h)
  std::string attention_table_from;  // or: the hardware file whose table is carried over to this GPU (modelled)
};

}  // namespace hisparse
